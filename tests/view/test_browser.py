"""The viewer in real headless Chromium (DevTools protocol over a pipe): navigation, filtering, a
trajectory, verifier and task tabs, attempts side by side, hostile output kept as text, a
100,000-trial ledger paged, and no console errors.

AGENTMILL_UPDATE_SCREENSHOT=1 with AGENTMILL_VIEW_RUN=<a run folder> (e.g. runs/smoke from the
README's main job) rewrites docs/view.png from that real run.
"""

import json
import os
import shutil
from pathlib import Path

import pytest

from agentmill.view import ViewServer, open_source
from agentmill.view.server import ASSETS
from tests.view.conftest import XSS
from tests.view.synthetic import synthetic_ledger

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


class Viewer:
    """A viewer server on one run and a Chromium tab on it."""

    def __init__(self, browser, run: Path, index: Path, assets: Path = ASSETS, **options):
        self.server = ViewServer(open_source(run, index=index, **options), 0, assets=assets)
        self.server.start_background()
        self.page = browser.new_page()

    def open(self, fragment: str = "") -> None:
        self.page.goto(self.server.url + fragment)

    def close(self) -> None:
        self.page.close()
        self.server.shutdown()
        self.server.server_close()

    def rows(self) -> list[dict]:
        return self.page.eval("""[...document.querySelectorAll('#trials tbody tr')].map(tr => ({
            task: tr.cells[1].textContent, outcome: tr.cells[3].textContent, verdict: tr.cells[9].textContent,
            tamper: tr.cells[8].textContent}))""")

    def count_text(self) -> str:
        return self.page.eval("document.querySelector('#pager-top .count').textContent")

    def wait_count(self, text: str) -> None:
        self.page.wait(
            f"document.querySelector('#pager-top .count') && "
            f"document.querySelector('#pager-top .count').textContent === {json.dumps(text)}"
        )
        self.no_stray_values()

    def no_stray_values(self) -> None:
        """No JavaScript null/undefined/NaN rendered as words into the page (outside the shown texts themselves)."""
        words = self.page.eval("""(() => { const c = document.querySelector('main').cloneNode(true);
            c.querySelectorAll('pre').forEach(p => p.remove());
            return c.textContent.match(/\\b(null|undefined|NaN)\\b/g); })()""")
        assert not words, words


@pytest.fixture
def viewer(browser, real_run, tmp_path):
    v = Viewer(browser, real_run, tmp_path / "i.sqlite")
    yield v
    v.close()


INJECTED = (
    "document.querySelectorAll('#pwned-img, #pwned-bold, #pwned-frame, main script, main img, main iframe').length"
    " + (window.__pwned === undefined ? 0 : 100)"
)


def test_problem_detector_sees_console_errors_exceptions_and_csp_refusals(browser, real_run, tmp_path):
    """The no-console-errors checks below mean something only if planted errors are seen."""
    assets = tmp_path / "assets"
    shutil.copytree(ASSETS, assets)
    (assets / "app.js").write_text('console.error("planted error"); nope();\n')
    (assets / "index.html").write_text(
        (ASSETS / "index.html").read_text().replace("</body>", "<script>window.inline = 1</script></body>")
    )
    v = Viewer(browser, real_run, tmp_path / "i.sqlite", assets=assets)
    try:
        v.open()
        v.page.wait("document.readyState === 'complete'")
        problems = "\n".join(v.page.problems())
        assert "planted error" in problems and "nope is not defined" in problems
        assert "Content Security Policy" in problems and v.page.eval("window.inline === undefined")
    finally:
        v.close()


def test_navigate_filter_open_a_trajectory_and_compare_attempts(viewer, tmp_path):
    page = viewer.page
    viewer.open()
    viewer.wait_count("1–10 of 10")
    assert {r["task"] for r in viewer.rows()} == {
        "csv-revenue-by-region",
        "dedupe-photos",
        "wrong-answer",
        "hostile-output",
        "plants-conftest",
    }
    assert page.eval("document.querySelector('#run').textContent").startswith(
        "run · agent oracle · 10 trials · 5 tasks"
    )

    # filter by outcome (the select lists the outcomes with counts), then search by text
    page.choose("#filters select[name=outcome]", "failed")
    page.click("#apply")
    viewer.wait_count("1–4 of 4")
    assert {r["outcome"] for r in viewer.rows()} == {"failed"}
    assert "outcome=failed" in page.eval("location.hash")
    page.type("#filters input[name=q]", "wrong")
    page.click("#apply")
    viewer.wait_count("1–2 of 2")
    assert {r["task"] for r in viewer.rows()} == {"wrong-answer"}
    page.click("#clear")
    viewer.wait_count("1–10 of 10")

    # tamper evidence and the export filters' verdict, as filters and in the rows
    page.choose("#filters select[name=tamper]", "yes")
    page.click("#apply")
    viewer.wait_count("1–2 of 2")
    assert all(r["tamper"] == "tamper ×2" and r["verdict"] == "dropped: tamper" for r in viewer.rows())
    page.click("#clear")
    viewer.wait_count("1–10 of 10")
    page.choose("#filters select[name=kept]", "min_turns")
    page.choose("#filters select[name=sort]", "task")
    page.choose("#filters select[name=desc]", "1")
    page.click("#apply")
    viewer.wait_count("1–8 of 8")
    assert [r["task"] for r in viewer.rows()][:2] == ["wrong-answer", "wrong-answer"]
    assert page.eval("document.querySelector('#trials tbody tr .tag.dropped').title").startswith(
        "dropped; fails min_turns: >= 5"
    )
    page.type("#filters input[name=reward_min]", "lots")  # a bad number: the page says which parameter
    page.click("#apply")
    page.wait(
        "document.querySelector('.error') && document.querySelector('.error').textContent.includes(\"'reward_min'\")"
    )
    viewer.open("#/?task=csv-revenue-by-region")
    viewer.wait_count("1–2 of 2")

    # open a trajectory: the oracle's command, and what it printed, step by step
    page.click("#trials tbody tr:first-child a.open")
    page.wait("document.querySelectorAll('.step').length === 2")
    steps = page.eval("[...document.querySelectorAll('.step')].map(s => s.textContent)")
    assert steps[0].startswith("#1 user") and "quantity * unit_price" in steps[0]
    assert (
        "#2 agent" in steps[1] and "csv.DictReader(fh)" in steps[1] and "observation (as the model saw it)" in steps[1]
    )
    assert page.eval("document.querySelector('.summary').textContent").count("passed") == 1
    viewer.no_stray_values()
    page.click("#tab-verifier")
    page.wait("document.querySelector('#filter-rules')")
    body = page.eval("document.querySelector('#tab-body').textContent")
    assert "4/4 checks passed" in body and '"reward": 1' in body and "✗ min_turns: >= 5 assistant turns" in body
    page.click("#tab-task")
    page.wait("document.querySelectorAll('a.task-file').length > 3")
    page.click('a.task-file[data-path="environment/Dockerfile"]')
    page.wait("document.querySelector('.task-file-text')")
    assert page.eval("document.querySelector('.task-file-text').textContent").startswith("FROM debian:bookworm-slim")

    # the other attempt, then both side by side
    page.click("#attempts a.attempt")
    page.wait(
        "document.querySelector('#attempts .cur') && document.querySelector('#attempts .cur').textContent.startsWith('attempt 1')"
    )
    page.click("#attempts a.compare-link")
    page.wait("document.querySelectorAll('#compare .col.left .step').length === 2")
    assert page.eval("document.querySelectorAll('#compare .col.right .step').length") == 2
    assert page.eval(
        "[...document.querySelectorAll('#compare .summary')].map(s => s.textContent.match(/attempt: (\\d)/)[1])"
    ) == ["1", "0"]
    assert page.screenshot(tmp_path / "compare.png").stat().st_size > 5000

    # back to the list as it was left (its filter kept), and compare any two trials picked in the list
    page.click("#back")
    viewer.wait_count("1–2 of 2")
    assert page.eval("document.querySelector('#filters input[name=task]').value") == "csv-revenue-by-region"
    page.click("#clear")
    viewer.wait_count("1–10 of 10")
    page.click("#trials tbody tr:nth-child(1) input.pick")
    assert page.eval("document.querySelector('#compare-selected').disabled")
    page.click("#trials tbody tr:nth-child(10) input.pick")
    page.click("#compare-selected")
    page.wait("document.querySelectorAll('#compare .summary').length === 2")
    problems = page.problems()  # the one bad request made on purpose above, and nothing else
    assert len(problems) == 1 and "status of 400" in problems[0] and "reward_min=lots" in problems[0], problems


def test_hostile_trajectory_text_is_shown_as_text_and_never_runs(viewer):
    page = viewer.page
    viewer.open("#/?task=hostile-output")
    viewer.wait_count("1–2 of 2")
    page.click("#trials tbody tr:first-child a.open")
    page.wait("document.querySelectorAll('.step').length === 2")
    observation = page.eval("document.querySelector('pre.obs').textContent")
    assert observation.strip() == XSS  # exactly what the model saw, markup and all
    assert XSS in page.eval("document.querySelector('pre.call').textContent")
    assert XSS in page.eval("document.querySelector('.step.user pre').textContent")
    for tab in ("verifier", "task"):
        page.click(f"#tab-{tab}")
        page.wait(f"document.querySelector('#tab-{tab}.on')")
        assert XSS in page.eval("document.querySelector('#tab-body').textContent")
        assert page.eval(INJECTED) == 0
    page.click("a.compare-link")
    page.wait("document.querySelectorAll('#compare pre.obs').length === 2")
    assert page.eval(INJECTED) == 0
    assert page.problems() == []


def test_a_page_that_parsed_agent_text_as_markup_is_caught(browser, real_run, tmp_path):
    """The planted defect: text() builds nodes from markup. The XSS checks fire; the CSP still stops the script."""
    assets = tmp_path / "assets"
    shutil.copytree(ASSETS, assets)
    js = (assets / "app.js").read_text()
    safe = 'return document.createTextNode(s === null || s === undefined ? "" : String(s));'
    assert safe in js
    (assets / "app.js").write_text(
        js.replace(safe, 'const t = document.createElement("span"); t.innerHTML = String(s ?? ""); return t;')
    )
    v = Viewer(browser, real_run, tmp_path / "i.sqlite", assets=assets)
    try:
        v.open("#/?task=hostile-output")
        v.wait_count("1–2 of 2")
        v.page.click("#trials tbody tr:first-child a.open")
        v.page.wait("document.querySelectorAll('.step').length === 2")
        assert v.page.eval("document.querySelectorAll('#pwned-img, #pwned-bold').length") > 0  # the detector sees it
        assert v.page.eval("window.__pwned === undefined")  # and the Content-Security-Policy kept it from running
        assert any("Content Security Policy" in p for p in v.page.problems())
    finally:
        v.close()


def test_a_hundred_thousand_trials_page_in_the_browser(browser, tmp_path):
    counts = synthetic_ledger(tmp_path / "run", 100_000)
    v = Viewer(browser, tmp_path / "run", tmp_path / "i.sqlite")
    page = v.page
    try:
        v.open()
        v.wait_count("1–50 of 100,000")
        page.click("#pager-top a.next")
        v.wait_count("51–100 of 100,000")
        assert v.rows()[0]["task"] == "task-00000" and page.eval("location.hash").endswith("offset=50")
        v.open("#/?offset=99950")
        v.wait_count("99,951–100,000 of 100,000")
        assert v.rows()[-1]["task"] == "task-00999"
        page.choose("#filters select[name=outcome]", "agent_timeout")
        page.choose("#filters select[name=sort]", "tokens")
        page.choose("#filters select[name=desc]", "1")
        page.click("#apply")
        v.wait_count(f"1–50 of {counts['agent_timeout']:,}")
        tokens = page.eval(
            "[...document.querySelectorAll('#trials tbody tr')].map(tr => +tr.cells[6].textContent.replace(/,/g, ''))"
        )
        assert tokens == sorted(tokens, reverse=True) and len(tokens) == 50
        page.click("#trials tbody tr:first-child a.open")  # a ledger row without a folder still opens
        page.wait(
            "document.querySelector('#tab-body') && document.querySelector('#tab-body').textContent.includes('no folder')"
        )
        assert page.problems() == []
    finally:
        v.close()


@pytest.mark.skipif(
    not (os.environ.get("AGENTMILL_UPDATE_SCREENSHOT") and os.environ.get("AGENTMILL_VIEW_RUN")),
    reason="set AGENTMILL_UPDATE_SCREENSHOT=1 and AGENTMILL_VIEW_RUN=<run folder> to rewrite docs/view.png",
)
def test_screenshot_of_a_real_run(browser, tmp_path):
    run = Path(os.environ["AGENTMILL_VIEW_RUN"])
    v = Viewer(browser, run, tmp_path / "i.sqlite")
    try:
        v.open()
        v.page.wait("document.querySelectorAll('#trials tbody tr').length > 0")
        v.page.click("#trials tbody tr:first-child a.open")
        v.page.wait("document.querySelectorAll('.step').length > 2")
        v.page.screenshot(tmp_path / "view.png", max_height=1500)
        assert v.page.problems() == []
        shutil.copyfile(tmp_path / "view.png", ROOT / "docs" / "view.png")
    finally:
        v.close()


def test_a_tool_calling_trajectory(browser, tools_run, tmp_path):
    v = Viewer(browser, tools_run, tmp_path / "i.sqlite")
    page = v.page
    try:
        v.open()
        v.wait_count("1–1 of 1")
        page.click("#trials tbody tr:first-child a.open")
        page.wait("document.querySelectorAll('.step.agent').length === 3")
        names = page.eval("[...document.querySelectorAll('.call-name')].map(n => n.textContent)")
        assert names == ["get_incident", "set_incident_state", "add_work_note"]
        call = json.loads(page.eval("document.querySelectorAll('pre.call')[1].textContent"))
        assert call == {"number": "INC0020005", "state": "on_hold", "on_hold_reason": "awaiting_vendor"}
        result = json.loads(page.eval("document.querySelectorAll('pre.obs')[1].textContent"))
        assert result["number"] == "INC0020005"
        system = page.eval("document.querySelector('.step.system').textContent")
        assert "system message (" in system and "tools offered (" in system  # folded, not spread over the page
        assert page.eval("[...document.querySelectorAll('.step.system details')].every(d => !d.open)")  # closed
        v.no_stray_values()
        assert page.problems() == []
    finally:
        v.close()
