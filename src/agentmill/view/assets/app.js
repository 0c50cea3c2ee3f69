// agentmill view: the page. Every string from a run (trajectories, verifier output, task files) is
// hostile agent output: it enters the page only through text() / document.createTextNode, never as
// markup. Links are built from encoded ids. No inline script, no network beyond this server.
"use strict";

const PAGE = 50;
const state = { summary: null, selected: new Set(), listHash: "#/" };  // listHash: back to the list as it was

// ------------------------------------------------------------------ DOM helpers

function text(s) {
  return document.createTextNode(s === null || s === undefined ? "" : String(s));
}

// h("td", {className: "num", title: "x"}, child, "text", ...): properties only, children as text or nodes
function h(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null) continue;
    if (k === "dataset") Object.assign(node.dataset, v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node[k] = v;
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.appendChild(c instanceof Node ? c : text(c));
  }
  return node;
}

function pre(s, className) { return h("pre", { className: className || "" }, s); }
function link(href, label, props) { return h("a", Object.assign({ href }, props || {}), label); }
function trialHref(id) { return "#/trial/" + encodeURIComponent(id); }
function compareHref(a, b) { return "#/compare/" + encodeURIComponent(a) + "/" + encodeURIComponent(b); }
function show(...nodes) { document.getElementById("main").replaceChildren(...nodes.flat().filter((n) => n instanceof Node)); }

function fmtNum(x, digits) {
  if (x === null || x === undefined) return "–";
  if (digits !== undefined) return Number(x).toFixed(digits);
  return Number(x).toLocaleString("en-US");
}
function fmtSecs(x) { return x === null || x === undefined ? "–" : Number(x).toFixed(1) + " s"; }

function outcomeNode(outcome, st) {
  const o = outcome || st || "?";
  const cls = o === "passed" ? "outcome-passed" : o === "failed" ? "outcome-failed" : "outcome-other";
  return h("span", { className: cls }, o);
}

function verdictNode(row) {
  if (row.filter_kept === 1) return h("span", { className: "tag kept", title: "kept by every export filter" }, "kept");
  if (row.filter_kept === 0) {
    const all = (row.filters_failed || "").split(",").filter(Boolean);
    const rules = (state.summary && state.summary.filters.rules) || {};
    const why = all.map((r) => r + ": " + (rules[r] || "")).join("\n");
    return h("span", { className: "tag dropped", title: "dropped; fails " + why }, "dropped: " + (row.filter_reason || "?"));
  }
  return h("span", { className: "tag", title: row.facts_error || "not read yet" }, row.facts_error ? "unreadable" : "–");
}

async function api(route, params) {
  const qs = params ? "?" + new URLSearchParams(params).toString() : "";
  const r = await fetch("/api/" + route + qs);
  const data = await r.json();
  if (!r.ok) throw new Error(data.error || r.statusText);
  return data;
}

function fail(e) { show(h("p", { className: "error" }, "Error: " + e.message), h("p", {}, link("#/", "back to the list"))); }

// ------------------------------------------------------------------ routing

// The panel of each kind of source other than a rollout run: kind -> (path parts, query) -> Promise.
// Other asset scripts (e.g. synth.js) add theirs; the summary route names the kind.
const PANELS = {};

async function sourceKind() {
  if (!state.kind) state.kind = (await api("summary")).kind;
  return state.kind;
}

function route() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query || "");
  sourceKind().then((kind) => {
    if (PANELS[kind]) return PANELS[kind](parts, params);
    if (parts[0] === "trial" && parts[1]) return viewTrial(parts[1], params.get("tab") || "trajectory");
    if (parts[0] === "compare" && parts[1] && parts[2]) return viewCompare(parts[1], parts[2]);
    return viewList(params);
  }).catch(fail);
}

async function loadSummary() {
  state.summary = await api("summary");
  const s = state.summary;
  const bits = [s.title, s.agent ? "agent " + s.agent : null, s.model ? "model " + s.model : null,
                fmtNum(s.facets.trials) + " trials", fmtNum(s.facets.tasks) + " tasks"].filter(Boolean);
  document.getElementById("run").replaceChildren(text(bits.join(" · ")));
  document.title = "agentmill view: " + s.title;
}

// ------------------------------------------------------------------ the trial list

const FIELDS = ["q", "task", "outcome", "reward_min", "reward_max", "turns_min", "turns_max", "tokens_min", "tokens_max",
                "tamper", "kept", "sort", "desc"];

function listHash(params) {
  const p = new URLSearchParams();
  for (const [k, v] of params) if (v !== "" && v !== null) p.set(k, v);
  const qs = p.toString();
  return "#/" + (qs ? "?" + qs : "");
}

function select(name, value, options) {
  return h("select", { name }, options.map(([v, label]) => h("option", { value: v, selected: v === value }, label)));
}

function filterForm(params) {
  const f = state.summary.facets;
  const val = (k) => params.get(k) || "";
  const num = (k, ph) => h("input", { name: k, className: "num", value: val(k), placeholder: ph, inputMode: "decimal" });
  const outcomes = [["", "any"], ...f.outcomes.map((o) => [o.value, o.value + " (" + fmtNum(o.count) + ")"])];
  const kept = [["", "any"], ["kept", "kept (" + fmtNum(f.kept) + ")"], ["dropped", "dropped"],
                ...f.filter_reasons.map((r) => [r.value, "dropped by " + r.value + " (" + fmtNum(r.count) + ")"])];
  const sorts = ["task", "attempt", "outcome", "reward", "turns", "tokens", "seconds", "finished"].map((s) => [s, s]);
  const form = h("form", { className: "filters", id: "filters" },
    h("label", {}, "search", h("input", { name: "q", value: val("q"), placeholder: "task, trial id, exception", size: 24 })),
    h("label", {}, "task (exact)", h("input", { name: "task", value: val("task"), size: 18 })),
    h("label", {}, "outcome", select("outcome", val("outcome"), outcomes)),
    h("label", {}, "reward", h("span", { className: "pair" }, num("reward_min", "min"), num("reward_max", "max"))),
    h("label", {}, "turns", h("span", { className: "pair" }, num("turns_min", "min"), num("turns_max", "max"))),
    h("label", {}, "tokens", h("span", { className: "pair" }, num("tokens_min", "min"), num("tokens_max", "max"))),
    h("label", {}, "tamper evidence", select("tamper", val("tamper"), [["", "any"], ["yes", "yes (" + fmtNum(f.tampered) + ")"], ["no", "no"]])),
    h("label", { title: "filters from " + state.summary.filters.source }, "export filters", select("kept", val("kept"), kept)),
    h("label", {}, "sort", h("span", { className: "pair" }, select("sort", val("sort") || "task", sorts),
      select("desc", val("desc"), [["", "asc"], ["1", "desc"]]))),
    h("button", { type: "submit", id: "apply" }, "Apply"),
    h("button", { type: "button", className: "plain", id: "clear", onclick: () => { location.hash = "#/"; } }, "Clear"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    for (const k of FIELDS) { const el = form.elements[k]; if (el && el.value.trim()) p.set(k, el.value.trim()); }
    location.hash = listHash(p);
  });
  return form;
}

async function viewList(params) {
  state.listHash = location.hash || "#/";
  await loadSummary();  // the counts follow a run in progress
  const offset = Math.max(0, parseInt(params.get("offset") || "0", 10) || 0);
  const query = {};
  for (const k of FIELDS) if (params.get(k)) query[k] = params.get(k);
  const page = await api("trials", Object.assign({}, query, { limit: PAGE, offset }));
  const pageHash = (o) => { const p = new URLSearchParams(params); p.set("offset", String(o)); return listHash(p); };
  const first = page.total ? offset + 1 : 0, last = offset + page.trials.length;
  const compareBtn = h("button", { id: "compare-selected", className: "plain", disabled: state.selected.size !== 2,
    onclick: () => { const [a, b] = [...state.selected]; location.hash = compareHref(a, b); } }, "Compare selected (2)");
  const pager = (id) => h("div", { className: "pager", id },
    h("span", { className: "count" }, fmtNum(first) + "–" + fmtNum(last) + " of " + fmtNum(page.total)),
    offset > 0 ? link(pageHash(Math.max(0, offset - PAGE)), "← previous", { className: "prev" }) : null,
    last < page.total ? link(pageHash(offset + PAGE), "next →", { className: "next" }) : null,
    id === "pager-top" ? compareBtn : null);
  const rows = page.trials.map((t) => h("tr", { dataset: { trial: t.trial_id } },
    h("td", {}, h("input", { type: "checkbox", className: "pick", checked: state.selected.has(t.trial_id),
      onchange: (ev) => { ev.target.checked ? state.selected.add(t.trial_id) : state.selected.delete(t.trial_id);
                          compareBtn.disabled = state.selected.size !== 2; } })),
    h("td", {}, link(trialHref(t.trial_id), t.task, { className: "open" })),
    h("td", { className: "num" }, t.attempt),
    h("td", {}, outcomeNode(t.outcome, t.state)),
    h("td", { className: "num" }, t.reward === null ? "–" : fmtNum(t.reward, 2)),
    h("td", { className: "num" }, fmtNum(t.turns)),
    h("td", { className: "num" }, fmtNum(t.tokens)),
    h("td", { className: "num" }, fmtSecs(t.seconds)),
    h("td", {}, t.tamper ? h("span", { className: "tag tamper", title: t.tamper_kinds || "" }, "tamper ×" + t.tamper) : ""),
    h("td", {}, verdictNode(t))));
  const table = h("table", { id: "trials" },
    h("thead", {}, h("tr", {}, ["", "task", "attempt", "outcome", "reward", "turns", "tokens", "time", "tamper", "export filters"]
      .map((c, i) => h("th", { className: [2, 4, 5, 6, 7].includes(i) ? "num" : "" }, c)))),
    h("tbody", {}, rows));
  show(filterForm(params), pager("pager-top"), table,
       page.total ? null : h("p", { className: "muted", id: "empty" }, "No trial matches these filters."),
       pager("pager-bottom"),
       h("p", { className: "muted" }, "Export filter verdicts: " + state.summary.filters.source));
}

// ------------------------------------------------------------------ one trial

function tryJson(s) {
  if (typeof s !== "string" || !s.trim().startsWith("{")) return null;
  try { const v = JSON.parse(s); return v && typeof v === "object" && !Array.isArray(v) ? v : null; } catch (e) { return null; }
}

function stepTime(step, prev) {
  const t = Date.parse(step.timestamp), p = prev ? Date.parse(prev.timestamp) : NaN;
  return isNaN(t) || isNaN(p) || t < p ? null : (t - p) / 1000;
}

function callNode(call) {
  const args = call.arguments || {};
  const cmd = typeof args.keystrokes === "string" ? args.keystrokes : typeof args.command === "string" ? args.command : null;
  const raw = call.extra && typeof call.extra.arguments_text === "string" ? call.extra.arguments_text : null;
  const rest = Object.assign({}, args); delete rest.keystrokes; delete rest.command;
  return h("div", { className: "call" },
    h("div", { className: "call-name" }, call.function_name, Object.keys(rest).length && cmd !== null ? " " + JSON.stringify(rest) : ""),
    cmd !== null ? pre(cmd, "call") : pre(raw !== null ? raw : JSON.stringify(args, null, 2), "call"));
}

function stepNode(step, prev) {
  const m = step.metrics || {};
  const took = stepTime(step, prev);
  const extra = step.extra || {};
  const head = h("div", { className: "step-head" },
    h("span", { className: "who" }, "#" + step.step_id + " " + step.source),
    step.model_name ? h("span", {}, step.model_name) : null,
    h("span", { title: "timestamp" }, step.timestamp || ""),
    took !== null ? h("span", { title: "since the previous step" }, "+" + took.toFixed(2) + " s") : null,
    m.extra && m.extra.latency_s !== undefined ? h("span", {}, "latency " + m.extra.latency_s + " s") : null,
    m.prompt_tokens !== undefined && m.prompt_tokens !== null ? h("span", { className: "tokens" }, "prompt " + fmtNum(m.prompt_tokens) + " · completion " + fmtNum(m.completion_tokens) + " tokens") : null,
    m.cost_usd ? h("span", {}, "$" + Number(m.cost_usd).toFixed(5)) : null,
    m.extra && m.extra.finish_reason ? h("span", {}, "finish: " + m.extra.finish_reason) : null,
    extra.parse_error ? h("span", { className: "error" }, "parse error") : null);
  const body = [head];
  if (step.reasoning_content) body.push(h("div", { className: "label" }, "reasoning"), pre(step.reasoning_content, "reasoning"));
  const parsed = step.source === "agent" ? tryJson(step.message) : null;
  if (parsed && ("analysis" in parsed || "plan" in parsed)) {
    if (parsed.analysis !== undefined) body.push(h("div", { className: "label" }, "analysis"), pre(String(parsed.analysis), "analysis"));
    if (parsed.plan !== undefined) body.push(h("div", { className: "label" }, "plan"), pre(String(parsed.plan), "plan"));
    if (parsed.task_complete) body.push(h("div", { className: "label" }, "claims the task is complete"));
    body.push(h("details", {}, h("summary", {}, "message as sent by the model"), pre(step.message, "message")));
  } else if (step.source === "system" && step.message) {  // the same for every trial: folded
    body.push(h("details", {}, h("summary", {}, "system message (" + fmtNum(step.message.length) + " characters)"),
                pre(step.message, "message")));
  } else if (step.message) {
    body.push(h("div", { className: "label" }, step.source === "agent" ? "message" : step.source + " message"),
              pre(step.message, "message"));
  }
  for (const call of step.tool_calls || []) body.push(h("div", { className: "label" }, "call"), callNode(call));
  const results = (step.observation && step.observation.results) || [];
  for (const r of results) {
    body.push(h("div", { className: "label" }, "observation (as the model saw it)" + (r.source_call_id ? " · " + r.source_call_id : "")),
              r.content ? pre(r.content, "obs") : h("div", { className: "muted empty-obs" }, "(empty)"));
  }
  const shownExtra = Object.assign({}, extra); delete shownExtra.tools;
  if (Object.keys(shownExtra).length) body.push(h("details", {}, h("summary", {}, "step extra"), pre(JSON.stringify(shownExtra, null, 2))));
  if (extra.tools) body.push(h("details", {}, h("summary", {}, "tools offered (" + extra.tools.length + ")"), pre(JSON.stringify(extra.tools, null, 2))));
  return h("div", { className: "step " + step.source, dataset: { step: String(step.step_id) } }, body);
}

function summaryNode(d) {
  const row = d.row || {}, res = d.result || {}, tm = res.timings || {};
  const cell = (label, value) => h("div", {}, h("b", {}, label + ": "), value);
  return h("div", { className: "summary" },
    cell("task", d.trial && d.trial.task ? d.trial.task : row.task),
    cell("attempt", String(row.attempt)),
    cell("outcome", outcomeNode(row.outcome, row.state)),
    cell("reward", row.reward === null || row.reward === undefined ? "–" : fmtNum(row.reward, 3)),
    cell("turns", fmtNum(row.turns)),
    cell("tokens", fmtNum(row.prompt_tokens) + " in · " + fmtNum(row.completion_tokens) + " out"),
    cell("time", "agent " + fmtSecs(tm.agent) + " · verifier " + fmtSecs(tm.verifier) + " · total " + fmtSecs(tm.total)),
    cell("export filters", verdictNode(row)),
    row.tamper ? cell("tamper", h("span", { className: "tag tamper" }, row.tamper_kinds || String(row.tamper))) : null,
    res.model ? cell("model", res.model) : null,
    cell("trial", d.trial_id));
}

function attemptsNode(d, compareTo) {
  const items = (d.attempts || []).map((a) => a.trial_id === d.trial_id
    ? h("span", { className: "cur" }, "attempt " + a.attempt + " · " + (a.outcome || a.state))
    : h("span", {}, link(trialHref(a.trial_id), "attempt " + a.attempt + " · " + (a.outcome || a.state), { className: "attempt" }),
        " ", link(compareHref(compareTo, a.trial_id), "⇆", { className: "compare-link", title: "side by side with this one" })));
  return h("section", { className: "box", id: "attempts" }, h("h2", {}, "Attempts at this task (" + items.length + ")"),
           h("div", { className: "attempts" }, items));
}

function trajectoryNodes(d) {
  const steps = (d.trajectory && d.trajectory.steps) || [];
  if (d.missing_folder) return [h("p", { className: "muted" }, "This trial has no folder yet (running, or lost): only its ledger row exists.")];
  if (d.trajectory && d.trajectory.error) return [h("p", { className: "error" }, d.trajectory.error)];
  if (!steps.length) return [h("p", { className: "muted" }, "No steps.")];
  return steps.map((s, i) => stepNode(s, steps[i - 1]));
}

function verifierNodes(d) {
  const res = d.result || {};
  const out = [];
  if (res.exception) out.push(h("div", { className: "label" }, "exception"), pre(res.exception));
  out.push(h("div", { className: "label" }, "reward"), pre(JSON.stringify({ reward: res.reward, rewards: res.rewards }, null, 2), "reward"));
  const files = d.verifier_files || {};
  for (const name of Object.keys(files)) out.push(h("div", { className: "label" }, "verifier/" + name), pre(files[name], "verifier-file"));
  if (!Object.keys(files).length) {
    out.push(h("div", { className: "label" }, "verifier stdout"), pre(res.verifier_stdout || ""),
             h("div", { className: "label" }, "verifier stderr"), pre(res.verifier_stderr || ""));
  }
  if ((res.tamper || []).length) out.push(h("div", { className: "label" }, "tamper evidence"), pre(JSON.stringify(res.tamper, null, 2), "tamper"));
  if ((res.notes || []).length) out.push(h("div", { className: "label" }, "notes"), pre(res.notes.join("\n")));
  const rules = d.filter_rules || {};
  const failed = ((d.row || {}).filters_failed || "").split(",").filter(Boolean);
  out.push(h("div", { className: "label" }, "export filters"),
           h("ul", { id: "filter-rules" }, Object.keys(rules).map((r) => h("li", {}, (failed.includes(r) ? "✗ " : "✓ ") + r + ": " + rules[r]))));
  return out;
}

function taskNodes(d) {
  const t = d.task || {};
  const out = [h("div", { className: "label" }, "instruction"), pre(t.instruction || "", "instruction")];
  if (t.metadata) out.push(h("div", { className: "label" }, "metadata"), pre(JSON.stringify(t.metadata, null, 2)));
  if (!t.exists) { out.push(h("p", { className: "muted" }, "The task folder " + (t.path || "") + " is not on this machine.")); return out; }
  const fileBox = h("div", { id: "task-file" });
  out.push(h("div", { className: "label" }, "files of " + t.path),
    h("ul", { className: "files" }, t.files.map((f) => h("li", {},
      h("a", { href: "#", className: "task-file", dataset: { path: f.path }, onclick: (ev) => { ev.preventDefault(); openTaskFile(d.trial_id, f.path, fileBox); } }, f.path),
      " ", h("span", { className: "muted" }, fmtNum(f.bytes) + " bytes")))),
    t.files_cut ? h("p", { className: "muted" }, "Only the first " + t.files.length + " files are listed.") : null, fileBox);
  return out;
}

async function openTaskFile(id, path, box) {
  try {
    const f = await api("task-file", { id, path });
    box.replaceChildren(h("div", { className: "label" }, f.path), pre(f.text, "task-file-text"));
  } catch (e) { box.replaceChildren(h("p", { className: "error" }, e.message)); }
}

async function viewTrial(id, tab) {
  if (!state.summary) await loadSummary();
  const d = await api("trial", { id });
  const tabs = [["trajectory", "Trajectory"], ["verifier", "Verifier & reward"], ["task", "Task"], ["raw", "result.json"]];
  const base = trialHref(id);
  const content = tab === "verifier" ? verifierNodes(d) : tab === "task" ? taskNodes(d)
    : tab === "raw" ? [pre(JSON.stringify(d.result, null, 2))] : trajectoryNodes(d);
  show(h("p", {}, link(state.listHash, "← all trials", { id: "back" })), summaryNode(d), attemptsNode(d, id),
       h("nav", { className: "tabs" }, tabs.map(([k, label]) => link(base + "?tab=" + k, label, { className: k === tab ? "on" : "", id: "tab-" + k }))),
       h("section", { className: "box", id: "tab-body" }, content));
}

// ------------------------------------------------------------------ two attempts side by side

async function viewCompare(a, b) {
  if (!state.summary) await loadSummary();
  const [da, db] = await Promise.all([api("trial", { id: a }), api("trial", { id: b })]);
  const sa = (da.trajectory && da.trajectory.steps) || [], sb = (db.trajectory && db.trajectory.steps) || [];
  const cells = [h("div", { className: "col" }, summaryNode(da)), h("div", { className: "col" }, summaryNode(db))];
  for (let i = 0; i < Math.max(sa.length, sb.length); i++) {
    cells.push(h("div", { className: "col left" }, sa[i] ? stepNode(sa[i], sa[i - 1]) : null),
               h("div", { className: "col right" }, sb[i] ? stepNode(sb[i], sb[i - 1]) : null));
  }
  cells.push(h("div", { className: "col" }, h("section", { className: "box" }, h("h2", {}, "Verifier"), verifierNodes(da))),
             h("div", { className: "col" }, h("section", { className: "box" }, h("h2", {}, "Verifier"), verifierNodes(db))));
  show(h("p", {}, link(state.listHash, "← all trials", { id: "back" }), " · ", link(trialHref(a), "open left"), " · ", link(trialHref(b), "open right")),
       h("div", { className: "compare", id: "compare" }, cells));
}

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", route);
