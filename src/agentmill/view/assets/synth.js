// agentmill view: the panel for synthesis stores (`agentmill synth run --out`). Everything in the
// store was written by a model (candidate bodies, raw replies, gate messages, diagnoses): it enters
// the page only through app.js's h()/text()/pre(), never as markup. Links are built from encoded ids.
"use strict";

const SYNTH_FIELDS = ["q", "card", "gate", "code", "state", "kind"];

function candidateHref(id) { return "#/candidate/" + encodeURIComponent(id); }
function lineageHref(card) { return "#/lineage/" + encodeURIComponent(card); }
function stateNode(st) {
  const cls = st === "accepted" ? "outcome-passed" : st === "rejected" ? "outcome-failed" : "outcome-other";
  return h("span", { className: cls }, st || "?");
}
function json(v) { return typeof v === "string" ? v : JSON.stringify(v, null, 2); }

async function synthSummary() {
  state.summary = await api("summary");
  const s = state.summary, c = s.counts;
  document.getElementById("run").replaceChildren(text([s.title, "synthesis store", fmtNum(c.cards) + " cards",
    fmtNum(c.candidates) + " candidates", fmtNum(c.accepted) + " accepted"].join(" · ")));
  document.title = "agentmill view: " + s.title;
  return s;
}

function funnelNode(s) {
  const rows = s.funnel.map((g) => h("tr", { dataset: { gate: g.gate } },
    h("td", {}, g.gate), h("td", { className: "num" }, fmtNum(g.entered)), h("td", { className: "num" }, fmtNum(g.passed)),
    h("td", {}, Object.entries(g.failed || {}).map(([code, n]) => h("span", { className: "tag dropped" }, code + " " + n)))));
  return h("section", { className: "box" }, h("h2", {}, "Funnel per gate"),
    h("table", { id: "funnel" }, h("thead", {}, h("tr", {}, h("th", {}, "gate"), h("th", { className: "num" }, "entered"),
      h("th", { className: "num" }, "passed"), h("th", {}, "failed (code, count)"))), h("tbody", {}, rows)),
    h("p", { className: "muted" }, link("#/lineage", "lineage of every card", { id: "all-lineage" })));
}

function synthFilterForm(s, params) {
  const val = (k) => params.get(k) || "";
  const any = (values) => [["", "any"], ...values.map((v) => [v, v])];
  const codes = [["", "any"], ...s.failures.map((f) => [f.code, f.gate + ": " + f.code + " (" + fmtNum(f.count) + ")"])];
  const form = h("form", { className: "filters", id: "filters" },
    h("label", {}, "search", h("input", { name: "q", value: val("q"), placeholder: "candidate id, reason", size: 22 })),
    h("label", {}, "card", select("card", val("card"), any(s.cards))),
    h("label", {}, "failed at gate", select("gate", val("gate"), any(s.gates))),
    h("label", {}, "failure code", select("code", val("code"), codes)),
    h("label", {}, "status", select("state", val("state"), any(["accepted", "rejected", "interrupted", "open"]))),
    h("label", {}, "kind", select("kind", val("kind"), any(["target", "multiply"]))),
    h("button", { type: "submit", id: "apply" }, "Apply"),
    h("button", { type: "button", className: "plain", id: "clear", onclick: () => { location.hash = "#/"; } }, "Clear"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    for (const k of SYNTH_FIELDS) { const el = form.elements[k]; if (el && el.value.trim()) p.set(k, el.value.trim()); }
    location.hash = listHash(p);
  });
  return form;
}

function pagerNode(id, first, last, total, offset, pageHash) {
  return h("div", { className: "pager", id },
    h("span", { className: "count" }, fmtNum(first) + "–" + fmtNum(last) + " of " + fmtNum(total)),
    offset > 0 ? link(pageHash(Math.max(0, offset - PAGE)), "← previous", { className: "prev" }) : null,
    last < total ? link(pageHash(offset + PAGE), "next →", { className: "next" }) : null);
}

async function synthList(params) {
  state.listHash = location.hash || "#/";
  const s = await synthSummary();
  const offset = Math.max(0, parseInt(params.get("offset") || "0", 10) || 0);
  const query = {};
  for (const k of SYNTH_FIELDS) if (params.get(k)) query[k] = params.get(k);
  const page = await api("candidates", Object.assign({}, query, { limit: PAGE, offset }));
  const pageHash = (o) => { const p = new URLSearchParams(params); p.set("offset", String(o)); return listHash(p); };
  const first = page.total ? offset + 1 : 0, last = offset + page.candidates.length;
  const rows = page.candidates.map((c) => h("tr", { dataset: { candidate: c.candidate_id } },
    h("td", {}, link(candidateHref(c.candidate_id), c.candidate_id, { className: "open" })),
    h("td", {}, link(lineageHref(c.card_id), c.card_id, { className: "card-link" })),
    h("td", {}, c.kind),
    h("td", {}, c.parent_id ? link(candidateHref(c.parent_id), c.parent_id, { className: "parent-link" }) : "–"),
    h("td", {}, stateNode(c.state)),
    h("td", { className: "num" }, fmtNum(c.attempts)),
    h("td", {}, c.last_failure || "–"),
    h("td", { className: "reason" }, c.reason || "")));
  const table = h("table", { id: "candidates" },
    h("thead", {}, h("tr", {}, ["candidate", "card", "kind", "parent", "status", "attempts", "last failed gate", "reason"]
      .map((c, i) => h("th", { className: i === 5 ? "num" : "" }, c)))),
    h("tbody", {}, rows));
  show(funnelNode(s), synthFilterForm(s, params), pagerNode("pager-top", first, last, page.total, offset, pageHash), table,
       page.total ? null : h("p", { className: "muted", id: "empty" }, "No candidate matches these filters."),
       pagerNode("pager-bottom", first, last, page.total, offset, pageHash));
}

// ------------------------------------------------------------------ one candidate

function gateRow(g) {
  return h("tr", { className: g.passed ? "gate-pass" : "gate-fail", dataset: { gate: g.gate } },
    h("td", {}, g.gate), h("td", {}, g.passed ? "✓ passed" : "✗ failed"), h("td", {}, g.code), h("td", {}, g.fault),
    h("td", {}, g.category || "–"), h("td", { className: "num" }, fmtSecs(g.seconds)),
    h("td", {}, g.message ? pre(g.message, "gate-message") : "",
      g.details !== null && g.details !== undefined ? h("details", {}, h("summary", {}, "details"), pre(json(g.details))) : null));
}

function attemptNode(a) {
  const out = [h("h2", {}, "Attempt " + a.n + " · " + a.origin + (a.seconds !== null && a.seconds !== undefined ? " · " + fmtSecs(a.seconds) : ""))];
  if (a.error) out.push(h("div", { className: "label" }, "error"), pre(a.error, "attempt-error"));
  if (a.gates.length) {
    out.push(h("table", { className: "gates" }, h("thead", {}, h("tr", {}, ["gate", "verdict", "code", "fault", "category", "time", "message"]
      .map((c) => h("th", {}, c)))), h("tbody", {}, a.gates.map(gateRow))));
  } else out.push(h("p", { className: "muted" }, "No gate ran on this attempt."));
  for (const d of a.diagnoses) {
    out.push(h("div", { className: "diagnosis" }, h("div", { className: "label" }, "diagnosis (by " + d.by + ")"),
      h("div", {}, h("b", {}, d.category), " · components: " + (Array.isArray(d.components) ? d.components.join(", ") : json(d.components))),
      d.explanation ? pre(d.explanation, "explanation") : null));
  }
  for (const r of a.repairs) {
    out.push(h("div", { className: "repair" }, h("div", { className: "label" }, "repair"),
      h("div", {}, (r.ok ? "✓ repaired " : "✗ repair failed: ") + (Array.isArray(r.components) ? r.components.join(", ") : json(r.components))),
      r.error ? pre(r.error, "repair-error") : null));
  }
  if (a.body !== null && a.body !== undefined) out.push(h("details", {}, h("summary", {}, "candidate body"), pre(json(a.body), "body")));
  if (a.raw) out.push(h("details", {}, h("summary", {}, "the model's reply as it came"), pre(a.raw, "raw")));
  return h("section", { className: "box attempt", dataset: { n: String(a.n) } }, out);
}

function acceptedN(d) {  // the acceptance names its attempt by row id; the page numbers attempts from 0
  const a = d.attempts.find((x) => x.attempt_id === d.acceptance.attempt_id);
  return a ? String(a.n) : "#" + d.acceptance.attempt_id;
}

async function synthCandidate(id) {
  if (!state.summary) await synthSummary();
  const d = await api("candidate", { id });
  const c = d.candidate;
  const cell = (label, value) => h("div", {}, h("b", {}, label + ": "), value);
  const summary = h("div", { className: "summary" },
    cell("candidate", c.candidate_id), cell("card", link(lineageHref(c.card_id), c.card_id, { className: "card-link" })),
    d.card ? cell("source task", d.card.source_task) : null, cell("kind", c.kind), c.parent_id ? cell("parent", link(candidateHref(c.parent_id), c.parent_id, { className: "parent-link" })) : null,
    cell("status", stateNode(c.state)), c.reason ? cell("reason", c.reason) : null, cell("attempts", String(d.attempts.length)));
  const variants = d.variants.length ? h("section", { className: "box", id: "variants" }, h("h2", {}, "Multiply variants (" + d.variants.length + ")"),
    h("div", { className: "attempts" }, d.variants.map((v) => link(candidateHref(v.candidate_id), v.candidate_id + " · " + v.state, { className: "variant-link" })))) : null;
  const acc = d.acceptance ? h("section", { className: "box", id: "acceptance" }, h("h2", {}, "Accepted"),
    h("p", { id: "accepted-from" }, "from attempt " + acceptedN(d) + " at " + new Date(d.acceptance.at * 1000).toISOString()),
    h("details", {}, h("summary", {}, "accepted candidate"), pre(json(d.acceptance.body), "body")))
    : h("section", { className: "box", id: "acceptance" }, h("h2", {}, "Not accepted"), h("p", { className: "muted" }, c.reason || c.state));
  show(h("p", {}, link(state.listHash, "← all candidates", { id: "back" })), summary, variants,
       h("div", { id: "history" }, d.attempts.map(attemptNode)), acc);
}

// ------------------------------------------------------------------ lineage

async function synthLineage(card, params) {
  if (!state.summary) await synthSummary();
  const back = h("p", {}, link(state.listHash, "← all candidates", { id: "back" }), " · ", link("#/lineage", "all cards"));
  if (!card) {
    const offset = Math.max(0, parseInt(params.get("offset") || "0", 10) || 0);
    const page = await api("lineage", { offset, limit: PAGE });
    const first = page.total ? offset + 1 : 0, last = offset + page.cards.length;
    const rows = page.cards.map((k) => h("tr", {}, h("td", {}, link(lineageHref(k.card_id), k.card_id, { className: "card-link" })),
      h("td", {}, k.source_task), h("td", { className: "num" }, fmtNum(k.targets) + " / " + fmtNum(k.target_count)),
      h("td", { className: "num" }, fmtNum(k.variants)), h("td", { className: "num" }, fmtNum(k.candidates)),
      h("td", { className: "num" }, fmtNum(k.multiplier, 2)), h("td", {}, k.flagged || "")));
    return show(back, pagerNode("pager-top", first, last, page.total, offset, (o) => "#/lineage?offset=" + o),
      h("table", { id: "cards" }, h("thead", {}, h("tr", {}, ["card", "source task", "targets accepted", "variants", "boxes", "multiplier", "flagged"]
        .map((c) => h("th", {}, c)))), h("tbody", {}, rows)));
  }
  const d = await api("lineage", { card });
  const k = d.card;
  const tree = h("ul", { className: "lineage", id: "lineage" }, d.targets.map((t) => h("li", {},
    link(candidateHref(t.candidate_id), t.candidate_id, { className: "target-link" }), " ", stateNode(t.state),
    t.variants.length ? h("ul", {}, t.variants.map((v) => h("li", {},
      link(candidateHref(v.candidate_id), v.candidate_id, { className: "variant-link" }), " ", stateNode(v.state)))) : null)));
  show(back, h("div", { className: "summary" }, h("div", {}, h("b", {}, "card: "), k.card_id),
         h("div", {}, h("b", {}, "source task: "), k.source_task), h("div", {}, h("b", {}, "target: "), String(k.target_count)),
         h("div", {}, h("b", {}, "multiplier: "), fmtNum(k.multiplier, 2)), k.flagged ? h("div", {}, h("b", {}, "flagged: "), k.flagged) : null),
       h("section", { className: "box" }, h("h2", {}, "card → target samples → multiply variants"),
         d.targets.length ? tree : h("p", { className: "muted" }, "No target candidate yet.")),
       h("details", {}, h("summary", {}, "capability card"), pre(json(k.card), "card")));
}

PANELS.synth = (parts, params) => {
  if (parts[0] === "candidate" && parts[1]) return synthCandidate(parts[1]);
  if (parts[0] === "lineage") return synthLineage(parts[1] || "", params);
  return synthList(params);
};
