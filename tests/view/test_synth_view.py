"""The viewer on synthesis stores: the synth source found through its entry point (the viewer imports
nothing from synth), its JSON routes over a real store made by a scripted `run_synth` (once per
module), read-only; hostile store text returned and shown as text; and the panel in real Chromium."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from agentmill.synth.card import CapabilityCard
from agentmill.synth.critic import Diagnosis
from agentmill.synth.gates.base import GateResult
from agentmill.synth.report import funnel
from agentmill.synth.store import SynthStore
from agentmill.view import ViewServer, open_source
from agentmill.view.server import ASSETS
from tests.conftest import needs_sandbox
from tests.view.conftest import XSS
from tests.view.synth_store import make_synth_store
from tests.view.test_browser import INJECTED


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    if not needs_sandbox():
        pytest.skip("bubblewrap not installed")
    return make_synth_store(tmp_path_factory.mktemp("synth-view"))


@pytest.fixture(scope="module")
def T(store) -> dict[str, str]:
    """case -> its target candidate's id (slot numbers follow the scheduler, so they are looked up)."""
    db = sqlite3.connect(store / "synth.sqlite")
    try:
        return {
            card[len("card-") :]: cid
            for cid, card in db.execute("SELECT candidate_id, card_id FROM candidates WHERE kind = 'target'")
        }
    finally:
        db.close()


@pytest.fixture(scope="module")
def server(store):
    s = ViewServer(open_source(store), 0)
    s.start_background()
    yield s
    s.shutdown()
    s.server_close()


def get(server, path: str) -> tuple[int, dict]:
    req = urllib.request.Request(server.url.rstrip("/") + path)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def hostile_store(out: Path) -> Path:
    """A store written through SynthStore's own methods whose model-written fields are hostile markup."""
    s = SynthStore(out)
    card = CapabilityCard(
        card_id="card-x",
        source_task="eval-x",
        capability=f"case:x {XSS}",
        tools=["get_ticket"],
        workflow=["look"],
        target_failure="t",
        teacher_success="s",
        end_state_properties=["p"],
        variable_dimensions=["d"],
    )
    s.add_card(card, 1)
    s.start_candidate("card-x-s0000", "card-x", "target", None, 0)
    a = s.add_attempt("card-x-s0000", 0, "generate", None, XSS, f"unparseable: {XSS}")
    s.add_gate(
        a,
        GateResult(
            gate="parse", passed=False, code="unparseable", fault="candidate", message=XSS, details={"reply": XSS}
        ),
    )
    s.add_diagnosis(a, Diagnosis(category="bad_task_composition", components=["prompt"], explanation=XSS, by="critic"))
    s.add_repair(a, ["prompt"], False, XSS)
    s.reject("card-x-s0000", f"parse: {XSS}")
    s.close()
    return out


# -- finding the source ---------------------------------------------------------------------------------


def test_the_viewer_finds_the_synth_source_by_entry_point_without_importing_synth(tmp_path):
    code = (
        "import sys; import agentmill.view, agentmill.view.command; "
        "print(sorted(m for m in sys.modules if m.startswith('agentmill.synth')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    opened = open_source(hostile_store(tmp_path / "out"))
    assert opened.kind == "synth" and opened.title == "out"
    assert open_source(tmp_path / "out" / "synth.sqlite").kind == "synth"  # the file itself also opens
    (tmp_path / "plain").mkdir()
    with pytest.raises(Exception, match=r"nothing the viewer can open \(known kinds: .*synth"):
        open_source(tmp_path / "plain")


def test_a_broken_plug_in_source_is_skipped_with_a_warning(tmp_path, monkeypatch, capsys):
    from agentmill.registry import Registry
    from agentmill.view import source as registry

    plugins = Registry(
        "viewer source",
        builtins={"broken": "agentmill.no_such_module:opener", "synth": "agentmill.synth.view_source:open_synth_store"},
    )
    monkeypatch.setattr(registry, "VIEW_SOURCES", plugins)
    assert open_source(hostile_store(tmp_path / "out")).kind == "synth"
    err = capsys.readouterr().err
    assert "source 'broken' (agentmill.no_such_module:opener) cannot be loaded, skipped: ModuleNotFoundError" in err


def test_agentmill_view_serves_a_synth_store(tmp_path):
    out = hostile_store(tmp_path / "out")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmill.cli", "view", str(out), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        m = re.match(r"agentmill view: (http://127\.0\.0\.1:\d+/)", line)
        assert m, line + proc.stderr.read()
        with urllib.request.urlopen(m.group(1) + "api/candidates?state=rejected", timeout=30) as r:
            assert [c["candidate_id"] for c in json.loads(r.read())["candidates"]] == ["card-x-s0000"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert proc.returncode == 0


def test_a_damaged_store_is_one_clear_error_naming_the_file(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "synth.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(Exception, match=r"synth\.sqlite: not a readable synth store"):
        open_source(tmp_path / "out")


# -- JSON routes over a real store ----------------------------------------------------------------------


def test_summary_has_the_reports_funnel_and_the_counts(server, store):
    status, s = get(server, "/api/summary")
    assert status == 200 and s["kind"] == "synth"
    rw = SynthStore.open_existing(store)
    try:
        assert s["funnel"] == funnel(rw)  # the same funnel the synth report draws
        n = lambda sql: rw.rows(sql)[0]["n"]  # noqa: E731
        assert s["counts"]["candidates"] == n("SELECT COUNT(*) AS n FROM candidates") == 7
        assert s["counts"]["accepted"] == n("SELECT COUNT(*) AS n FROM acceptances") == 6
    finally:
        rw.close()
    f = {row["gate"]: row for row in s["funnel"]}
    assert f["negative"]["failed"] == {"mutant_survived": 1} and f["lint"]["failed"] == {"missing_entity": 1}
    assert f["ballot"]["failed"] == {"too_easy": 2} and f["parse"] == {
        "gate": "parse",
        "entered": 1,
        "passed": 0,
        "failed": {"unparseable": 1},
    }
    assert f["accepted"] == {"gate": "accepted", "entered": 7, "passed": 6, "failed": {"rejected": 1}}
    assert s["counts"]["states"] == {"accepted": 6, "rejected": 1} and s["counts"]["kinds"] == {
        "target": 4,
        "multiply": 3,
    }
    assert {(f["gate"], f["code"]) for f in s["failures"]} == {
        ("parse", "unparseable"),
        ("lint", "missing_entity"),
        ("negative", "mutant_survived"),
        ("ballot", "too_easy"),
    }
    assert s["cards"] == ["card-easy", "card-garbage", "card-ghost", "card-weak"]


def ids(server, query: str) -> list[str]:
    status, page = get(server, "/api/candidates?" + query)
    assert status == 200, page
    return [c["candidate_id"] for c in page["candidates"]]


def test_candidates_filter_by_gate_code_card_status_kind_and_page(server, T):
    assert ids(server, "gate=negative") == [T["weak"]]
    assert ids(server, "gate=lint&code=missing_entity") == [T["ghost"]]
    assert ids(server, "gate=lint&code=mutant_survived") == []
    assert ids(server, "state=rejected") == [T["easy"]]
    assert ids(server, "status=rejected") == [T["easy"]]  # the brief's word for it
    assert ids(server, "card=card-ghost") == [T["ghost"], T["ghost"] + "-m0"]
    assert ids(server, "kind=multiply") == [T["garbage"] + "-m0", T["ghost"] + "-m0", T["weak"] + "-m0"]
    assert ids(server, "q=too_easy") == [T["easy"]]  # the reason text
    everything = ids(server, "")
    pages = ids(server, "limit=3") + ids(server, "limit=3&offset=3") + ids(server, "limit=3&offset=6")
    assert pages == everything and len(everything) == 7
    status, page = get(server, "/api/candidates?limit=3&offset=6")
    assert page["total"] == 7 and len(page["candidates"]) == 1
    row = {c["candidate_id"]: c for c in get(server, "/api/candidates")[1]["candidates"]}
    assert row[T["weak"]]["last_failure"] == "negative:mutant_survived" and row[T["weak"]]["attempts"] == 2
    assert row[T["weak"] + "-m0"]["parent_id"] == T["weak"]


@pytest.mark.parametrize(
    "query, names",
    [
        ("state=done", "'state'"),
        ("kind=both", "'kind'"),
        ("limit=0", "'limit'"),
        ("limit=501", "'limit'"),
        ("offset=-1", "'offset'"),
        ("offset=x", "'offset'"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(server, query, names):
    status, body = get(server, "/api/candidates?" + query)
    assert status == 400 and names in body["error"]


def test_one_candidate_has_its_attempts_gates_diagnosis_repair_and_acceptance(server, T):
    status, d = get(server, "/api/candidate?id=" + T["weak"])
    assert status == 200
    assert [a["n"] for a in d["attempts"]] == [0, 1] and [a["origin"] for a in d["attempts"]] == ["generate", "repair"]
    first, second = d["attempts"]
    assert [(g["gate"], g["passed"], g["code"]) for g in first["gates"]][-1] == ("negative", False, "mutant_survived")
    assert [(x["category"], x["components"], x["by"]) for x in first["diagnoses"]] == [
        ("weak_verifier", ["verifiers"], "critic")
    ]
    assert [(r["components"], r["ok"]) for r in first["repairs"]] == [(["verifiers"], True)]
    assert (second["gates"][-1]["gate"], second["gates"][-1]["passed"]) == ("ballot", True)
    assert (
        first["body"]["verifiers"] != second["body"]["verifiers"] and first["body"]["calls"] == second["body"]["calls"]
    )
    assert (
        d["acceptance"]["attempt_id"] == second["attempt_id"] and d["acceptance"]["body"]["candidate_id"] == T["weak"]
    )
    assert d["variants"] == [{"candidate_id": T["weak"] + "-m0", "state": "accepted"}]
    assert d["card"]["source_task"] == "eval-weak"
    garbage = get(server, "/api/candidate?id=" + T["garbage"])[1]["attempts"][0]
    assert garbage["body"] is None and "{not json" in garbage["raw"] and garbage["gates"][0]["code"] == "unparseable"
    rejected = get(server, "/api/candidate?id=" + T["easy"])[1]
    assert rejected["acceptance"] is None and rejected["candidate"]["state"] == "rejected"
    assert get(server, "/api/candidate?id=nope")[0] == 404
    assert get(server, "/api/candidate")[0] == 400


def test_lineage_card_to_targets_to_variants(server, T):
    status, page = get(server, "/api/lineage")
    assert status == 200 and page["total"] == 4
    weak = {c["card_id"]: c for c in page["cards"]}["card-weak"]
    assert (weak["targets"], weak["variants"], weak["target_count"]) == (1, 1, 1)
    status, d = get(server, "/api/lineage?card=card-weak")
    assert [(t["candidate_id"], [v["candidate_id"] for v in t["variants"]]) for t in d["targets"]] == [
        (T["weak"], [T["weak"] + "-m0"])
    ]
    assert d["card"]["card"]["capability"].startswith("case:weak")
    assert get(server, "/api/lineage?card=card-easy")[1]["targets"][0]["variants"] == []
    assert get(server, "/api/lineage?card=nope")[0] == 404
    assert [c["card_id"] for c in get(server, "/api/lineage?limit=2&offset=2")[1]["cards"]] == [
        "card-ghost",
        "card-weak",
    ]


def test_the_source_reads_without_writing(store, server, T):
    before = hashlib.sha256((store / "synth.sqlite").read_bytes()).hexdigest()
    for path in ("/api/summary", "/api/candidates", "/api/candidate?id=" + T["weak"], "/api/lineage?card=card-weak"):
        assert get(server, path)[0] == 200
    assert hashlib.sha256((store / "synth.sqlite").read_bytes()).hexdigest() == before
    db = server.source._connect()  # the connection the routes use refuses a write
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly|read-only|query_only"):
            db.execute("DELETE FROM candidates")
    finally:
        db.close()


def test_the_summary_follows_a_store_that_is_still_being_written(tmp_path):
    out = hostile_store(tmp_path / "out")
    source = open_source(out)
    summary = source.routes()["summary"]
    assert summary({})["counts"]["candidates"] == 1 and summary({}) is summary({})  # kept while nothing changes
    writer = SynthStore(out)  # a run still going: its writes land in the WAL
    try:
        writer.start_candidate("card-x-s0001", "card-x", "target", None, 1)
        assert summary({})["counts"]["candidates"] == 2
        assert summary({})["funnel"][-1] == {
            "gate": "accepted",
            "entered": 2,
            "passed": 0,
            "failed": {"open": 1, "rejected": 1},
        }
    finally:
        writer.close()


def test_hostile_store_text_comes_back_exactly(tmp_path):
    source = open_source(hostile_store(tmp_path / "out"))
    d = source.routes()["candidate"]({"id": ["card-x-s0000"]})
    a = d["attempts"][0]
    assert a["raw"] == XSS and a["gates"][0]["message"] == XSS and a["diagnoses"][0]["explanation"] == XSS
    assert a["repairs"][0]["error"] == XSS and d["candidate"]["reason"] == f"parse: {XSS}"


# -- the panel in Chromium ------------------------------------------------------------------------------


class SynthPage:
    def __init__(self, browser, path: Path, assets: Path = ASSETS):
        self.server = ViewServer(open_source(path), 0, assets=assets)
        self.server.start_background()
        self.page = browser.new_page()

    def open(self, fragment: str = "") -> None:
        self.page.goto(self.server.url + fragment)

    def wait_count(self, text: str) -> None:
        self.page.wait(
            f"document.querySelector('#pager-top .count') && "
            f"document.querySelector('#pager-top .count').textContent === {json.dumps(text)}"
        )

    def rows(self) -> list[str]:
        return self.page.eval(
            "[...document.querySelectorAll('#candidates tbody tr')].map(tr => tr.cells[0].textContent)"
        )

    def close(self) -> None:
        self.page.close()
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.slow
def test_browse_a_synth_store_filter_open_a_history_and_follow_lineage(browser, store, T):
    v = SynthPage(browser, store)
    page = v.page
    try:
        v.open()
        v.wait_count("1–7 of 7")
        assert (
            page.eval("document.querySelector('#run').textContent")
            == "out · synthesis store · 4 cards · 7 candidates · 6 accepted"
        )
        funnel_rows = page.eval("[...document.querySelectorAll('#funnel tbody tr')].map(tr => tr.dataset.gate)")
        assert funnel_rows[0] == "parse" and funnel_rows[-1] == "accepted" and "negative" in funnel_rows

        page.choose("#filters select[name=gate]", "negative")
        page.click("#apply")
        v.wait_count("1–1 of 1")
        assert v.rows() == [T["weak"]] and "gate=negative" in page.eval("location.hash")
        page.click("#clear")
        v.wait_count("1–7 of 7")
        page.choose("#filters select[name=state]", "accepted")
        page.choose("#filters select[name=kind]", "multiply")
        page.click("#apply")
        v.wait_count("1–3 of 3")
        assert all(r.endswith("-m0") for r in v.rows())
        page.click("#clear")
        v.wait_count("1–7 of 7")
        page.choose("#filters select[name=card]", "card-weak")
        page.click("#apply")
        v.wait_count("1–2 of 2")

        # one candidate: its attempts in order, each gate's verdict, the critic's diagnosis, the repair, the acceptance
        page.click("#candidates tbody tr:first-child a.open")
        page.wait("document.querySelectorAll('#history section.attempt').length === 2")
        heads = page.eval("[...document.querySelectorAll('#history section.attempt h2')].map(x => x.textContent)")
        assert heads[0].startswith("Attempt 0 · generate") and heads[1].startswith("Attempt 1 · repair")
        first = page.eval("document.querySelector('#history section.attempt').textContent")
        assert (
            "✗ failed" in first
            and "mutant_survived" in first
            and "weak_verifier" in first
            and "✓ repaired verifiers" in first
        )
        assert (
            page.eval(
                "document.querySelectorAll('#history section.attempt')[0].querySelector('tr.gate-fail').dataset.gate"
            )
            == "negative"
        )
        assert page.eval("document.querySelector('#acceptance h2').textContent") == "Accepted"
        assert page.eval("document.querySelector('#accepted-from').textContent").startswith("from attempt 1 at ")

        # lineage: to the variant, back to its parent, then the card's tree
        page.click("#variants a.variant-link")
        page.wait(
            f"document.querySelector('.summary') && document.querySelector('.summary').textContent.includes('{T['weak']}-m0')"
        )
        page.click(".summary a.parent-link")
        page.wait("document.querySelectorAll('#history section.attempt').length === 2")
        page.click(".summary a.card-link")
        page.wait("document.querySelector('#lineage')")
        tree = page.eval("[...document.querySelectorAll('#lineage a')].map(a => a.textContent)")
        assert tree == [T["weak"], T["weak"] + "-m0"]
        page.click("#lineage a.variant-link")
        page.wait(f"document.querySelector('#acceptance') && location.hash.endsWith('{T['weak']}-m0')")
        page.click("#back")
        v.wait_count("1–2 of 2")  # back to the list as it was left
        v.open("#/lineage")
        page.wait("document.querySelectorAll('#cards tbody tr').length === 4")
        assert page.problems() == []
    finally:
        v.close()


@pytest.mark.slow
def test_hostile_store_text_is_shown_as_text_in_every_place(browser, tmp_path):
    v = SynthPage(browser, hostile_store(tmp_path / "out"))
    page = v.page
    try:
        v.open("#/?state=rejected")
        v.wait_count("1–1 of 1")
        assert XSS in page.eval("document.querySelector('#candidates td.reason').textContent")
        page.click("#candidates tbody tr:first-child a.open")
        page.wait("document.querySelector('#history section.attempt')")
        page.eval("document.querySelectorAll('details').forEach(d => d.open = true), 0")
        body = page.eval("document.querySelector('main').textContent")
        assert body.count(XSS) >= 5  # raw reply, gate message, its details, the diagnosis, the repair error (+ reason)
        assert page.eval(INJECTED) == 0
        v.open("#/lineage/card-x")
        page.wait("document.querySelector('#lineage')")
        page.eval("document.querySelectorAll('details').forEach(d => d.open = true), 0")
        assert json.dumps(XSS)[1:-1] in page.eval(
            "document.querySelector('pre.card').textContent"
        )  # inside the card's JSON
        assert page.eval(INJECTED) == 0
        assert page.problems() == []
    finally:
        v.close()


@pytest.mark.slow
def test_a_synth_panel_that_parsed_store_text_as_markup_is_caught(browser, tmp_path):
    """The planted defect: text() builds nodes from markup. The check above would fire on the synth panel."""
    assets = tmp_path / "assets"
    shutil.copytree(ASSETS, assets)
    js = (assets / "app.js").read_text()
    safe = 'return document.createTextNode(s === null || s === undefined ? "" : String(s));'
    assert safe in js
    (assets / "app.js").write_text(
        js.replace(safe, 'const t = document.createElement("span"); t.innerHTML = String(s ?? ""); return t;')
    )
    v = SynthPage(browser, hostile_store(tmp_path / "out"), assets=assets)
    try:
        v.open("#/candidate/card-x-s0000")
        v.page.wait("document.querySelector('#history section.attempt')")
        assert v.page.eval("document.querySelectorAll('#pwned-img, #pwned-bold').length") > 0
        assert v.page.eval("window.__pwned === undefined")  # the CSP still kept the script from running
    finally:
        v.close()


# -- scale: a large store, paged through indexes ----------------------------------------------------------

ROUTE_CALLS = [
    ("candidates", {}),
    ("candidates", {"state": ["rejected"], "offset": ["5000"]}),
    ("candidates", {"card": ["card-0100"]}),
    ("candidates", {"kind": ["multiply"], "offset": ["9000"]}),
    ("candidates", {"gate": ["negative"]}),
    ("candidate", {"id": ["card-0100-s0050"]}),
    ("lineage", {}),
    ("lineage", {"card": ["card-0100"]}),
]


def traced_plans(out: Path) -> tuple[dict, list[str]]:
    """Each route's answer, and the query plan steps of every SELECT the routes ran."""
    from agentmill.synth.view_source import SynthViewSource

    source, seen = SynthViewSource(out), []
    connect = source._connect

    def traced():
        db = connect()
        db.set_trace_callback(seen.append)
        return db

    source._connect = traced
    answers = {(name, json.dumps(p)): source.routes()[name](p) for name, p in ROUTE_CALLS}
    db = sqlite3.connect(out / "synth.sqlite")
    try:
        steps = [
            row[3]
            for sql in dict.fromkeys(seen)
            if sql.startswith("SELECT")
            for row in db.execute("EXPLAIN QUERY PLAN " + sql)
        ]
    finally:
        db.close()
    return answers, steps


def full_scans(steps: list[str]) -> list[str]:
    # a scan of a big table that no index serves (a covering-index scan of a count is fine)
    return [
        s
        for s in steps
        if re.match(r"SCAN (gate_results|diagnoses|repairs|acceptances|attempts|candidates|[agcd])\b", s)
        and "INDEX" not in s
    ]


def test_a_large_store_pages_through_indexes(tmp_path):
    from tests.view.synth_big import big_synth_store

    counts = big_synth_store(tmp_path / "out")
    answers, steps = traced_plans(tmp_path / "out")
    page = answers[("candidates", "{}")]
    assert page["total"] == counts["candidates"] > 30_000 and len(page["candidates"]) == 50
    assert answers[("candidates", json.dumps({"gate": ["negative"]}))]["total"] == counts["failed_negative"]
    assert len(answers[("candidate", json.dumps({"id": ["card-0100-s0050"]}))]["attempts"]) >= 1
    assert answers[("lineage", "{}")]["total"] == 200
    assert full_scans(steps) == [], full_scans(steps)
    # the planted defect: without the store's indexes the same routes scan whole tables
    db = sqlite3.connect(tmp_path / "out" / "synth.sqlite")
    for (name,) in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'"
    ).fetchall():
        db.execute(f"DROP INDEX {name}")
    db.commit()
    db.close()
    assert len(full_scans(traced_plans(tmp_path / "out")[1])) >= 3
