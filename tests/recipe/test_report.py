"""The recipe report: contents from fabricated runs, partial runs, a real oracle rollout, and headless Chromium.

Set AGENTMILL_UPDATE_SCREENSHOT=1 to rewrite docs/report.png from the realistic fabricated run.
"""

import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentmill.recipe.records import Drop, StageReport, TaskEntry, save_tasks
from agentmill.recipe.report import _bins, histogram, write_report
from agentmill.rollout.ledger import Ledger
from agentmill.rollout.status import mean_se
from tests.conftest import mixed_dataset, sandbox

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {
    "swe-smith": (90, 0.55),
    "stackexchange-superuser": (80, 0.35),
    "stackexchange-tezos": (70, 0.3),
    "issue-tasks": (60, 0.45),
}


def drops(n: int, reasons: dict[str, float], prefix: str) -> list[Drop]:
    names = list(reasons)
    weights = list(reasons.values())
    rng = random.Random(prefix)
    return [Drop(name=f"{prefix}-{i}", reason=rng.choices(names, weights)[0]) for i in range(n)]


def fabricate_run(run: Path, *, nasty: str = "", rollout: bool = True) -> dict:
    """A realistic recipe run: six stages with drops, four sources, one rollout attempt per task."""
    run.mkdir(parents=True)
    (run / "recipe.toml").write_text('name = "ot-agent-top4"\n[mix]\ntop_n = 4\n[teacher]\nmodel = "glm-4.7"\n')
    funnel = [
        StageReport(stage="collect sources", kind="source", count_in=1200, count_out=1200, notes=["8 sources"]),
        StageReport(
            stage="deduplicate",
            kind="filter",
            count_in=1200,
            count_out=1080,
            dropped=drops(120, {"exact duplicate": 3, "near duplicate (minhash >= 0.9)": 5}, "dup"),
        ),
        StageReport(
            stage="verify with oracle",
            kind="verify",
            count_in=1080,
            count_out=820,
            dropped=drops(
                260,
                {
                    "oracle failed": 6,
                    "nop agent passed (trivial)": 2,
                    "image build failed": 2,
                    "verifier timed out": 1,
                    "flaky: oracle passed 1 of 3": 1,
                },
                "ver",
            ),
        ),
        StageReport(
            stage="mix top-4 sources",
            kind="mix",
            count_in=820,
            count_out=400,
            dropped=drops(420, {"source not in top 4": 4, "over per-source quota": 3}, "mix"),
        ),
        StageReport(
            stage="augment: harden", kind="augment", count_in=400, count_out=560, notes=["+160 hardened variants"]
        ),
        StageReport(
            stage="filter: response length",
            kind="filter",
            count_in=560,
            count_out=300,
            dropped=drops(260, {"response shorter than 2k tokens" + nasty: 1}, "len"),
        ),
    ]
    (run / "funnel.json").write_text(json.dumps([s.model_dump() for s in funnel], indent=1))
    tasks = [
        TaskEntry(
            name=f"{src}-{i:03d}",
            path=f"/data/tasks/{src}-{i:03d}",
            source=src,
            content_hash=f"h{src}{i}",
            instruction="do it",
        )
        for src, (n, _) in SOURCES.items()
        for i in range(n)
    ]
    save_tasks(tasks, run / "tasks.jsonl")
    expected = {"rewards": {}}
    if not rollout:
        return expected
    rng = random.Random(7)
    trials = run / "rollout" / "trials"
    trials.mkdir(parents=True)
    ledger = Ledger(run / "rollout" / "ledger.sqlite")
    for t in [*tasks, TaskEntry(name="stray-task", path="/x", source="?", content_hash="x", instruction="x")]:
        p = SOURCES.get(t.source, (0, 0.5))[1]
        outcome = rng.choices(["passed", "failed", "agent_timeout", "verifier_error"], [p, 1 - p, 0.08, 0.02])[0]
        reward = None if outcome == "verifier_error" else float(outcome == "passed")
        turns = max(1, int(rng.gammavariate(2.5, 5)))
        tokens = sum(rng.randint(80, 900) for _ in range(turns))
        trial_id = f"{t.name}__0"
        folder = trials / trial_id
        folder.mkdir()
        (folder / "trial.json").write_text(json.dumps({"trial_id": trial_id, "task": t.name, "attempt": 0}))
        result = {
            "task": t.name,
            "outcome": outcome,
            "reward": reward,
            "tokens": {"prompt": tokens * 6, "completion": tokens},
        }
        (folder / "result.json").write_text(json.dumps(result))
        (folder / "telemetry.json").write_text(json.dumps({"assistant_turns": turns, "assistant_tokens": tokens}))
        (folder / "trajectory.json").write_text("{}")  # not read when telemetry.json exists
        ledger.start(trial_id, t.name, t.content_hash, 0)
        ledger.finish(trial_id, result)
        if reward is not None:
            expected["rewards"].setdefault(t.source if t.name != "stray-task" else "(not in tasks.jsonl)", []).append(
                reward
            )
    ledger.close()
    return expected


def test_report_shows_funnel_sources_shapes_rewards_and_outcomes(tmp_path):
    expected = fabricate_run(tmp_path / "run")
    out = write_report(tmp_path / "run", tmp_path / "report.html")
    page = out.read_text()
    assert "Recipe report: ot-agent-top4" in page
    for stage in ("collect sources", "deduplicate", "verify with oracle", "mix top-4 sources", "augment: harden"):
        assert stage in page
    # funnel row: in, out, kept, dropped; reasons ranked by count
    assert re.search(
        r"<td>mix top-4 sources</td><td>mix</td><td class=num>820</td><td class=num>400</td>"
        r"<td class=num>49%</td><td class=num>420</td><td>source not in top 4 ×\d+; over per-source quota ×\d+</td>",
        page,
    )
    assert "+160 hardened variants" in page and "; +2 more" in page  # five reasons, top three shown
    assert "<td>swe-smith</td><td class=num>90</td><td class=num>30.0%</td>" in page
    m, se = mean_se(expected["rewards"]["swe-smith"])
    assert f"{m:.3f} ± {se:.3f}" in page
    assert "(not in tasks.jsonl)" in page  # a trial whose task the set does not list
    assert "Assistant turns per trajectory" in page and "Assistant (completion) tokens per trajectory" in page
    assert "agent_timeout" in page and "All sources" in page and "pass@1" in page
    assert page.count("<svg") == 6  # funnel, sources, two histograms, rewards, outcomes


def test_report_is_self_contained_and_escaped(tmp_path):
    fabricate_run(tmp_path / "run", nasty=' <script>alert("x")</script> & "q"')
    page = write_report(tmp_path / "run", tmp_path).read_text()  # a folder: report.html inside
    assert (tmp_path / "report.html").exists()
    assert "<script" not in page and "alert(&quot;x&quot;)" in page and "&amp; &quot;q&quot;" in page
    for ref in ("src=", "href=", "url(", "@import", "http:", "https:", "<link", "<img"):
        assert ref not in page, ref


def test_partial_runs_render_what_exists(tmp_path):
    fabricate_run(tmp_path / "run", rollout=False)
    page = write_report(tmp_path / "run", tmp_path / "a.html").read_text()
    assert "deduplicate" in page and "swe-smith" in page and page.count("No rollout in this run") == 3
    empty = tmp_path / "empty"
    empty.mkdir()
    page = write_report(empty, tmp_path / "b.html").read_text()
    assert "Recipe report: empty" in page and "No funnel.json" in page and "No tasks.jsonl" in page
    (empty / "funnel.json").write_text('[{"stage": "x", "count_in": "many"}]')
    assert "Unreadable files" in write_report(empty, tmp_path / "c.html").read_text()


def test_histogram_bins():
    assert _bins([1, 2, 2, 5]) == [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]  # one bin per integer
    assert _bins([0, 1000]) == [
        0,
        50,
        100,
        150,
        200,
        250,
        300,
        350,
        400,
        450,
        500,
        550,
        600,
        650,
        700,
        750,
        800,
        850,
        900,
        950,
        1000,
        1050,
    ]
    assert _bins([0.2, 0.2]) == [0, 1]
    edges = _bins([3, 17, 240, 999, 4321])
    assert edges[0] <= 3 and edges[-1] > 4321 and len(edges) <= 22
    assert histogram([], xlabel="turns").startswith("<p")


@sandbox
def test_report_of_a_real_oracle_rollout(tmp_path):
    data = mixed_dataset(tmp_path / "ds", good=2)
    run = tmp_path / "run"
    run.mkdir()
    save_tasks(
        [
            TaskEntry(
                name=n,
                path=str(data / n),
                source="easy" if n.startswith("good") else "hard",
                content_hash=n,
                instruction="x",
            )
            for n in ("good0", "good1", "bad")
        ],
        run / "tasks.jsonl",
    )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentmill.cli",
            "rollout",
            str(data),
            "--agent",
            "oracle",
            "--out",
            str(run / "rollout"),
            "-c",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    page = write_report(run, tmp_path / "r.html").read_text()
    assert (
        "<td>easy</td><td class=num>2</td><td class=num>2</td><td class=num>1.000 ± 0.000</td><td class=num>100.0%</td>"
        in page
    )
    assert (
        "<td>hard</td><td class=num>1</td><td class=num>1</td><td class=num>0.000 ± 0.000</td><td class=num>0.0%</td>"
        in page
    )
    assert "No funnel.json" in page


# ---------------------------------------------------------------- headless Chromium

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CONSOLE = re.compile(r':CONSOLE[:(]\d+\)?\] "(.*)", source: (.*)')
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install chromium)")


def open_in_chromium(page: Path, tmp_path: Path, screenshot: Path, size: str = "1000,800") -> list[str]:
    """Load the page headless, take a screenshot, return the console messages Chromium logged."""
    profile = tmp_path / f"profile-{page.stem}"
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        "--hide-scrollbars",
        f"--window-size={size}",
        f"--screenshot={screenshot}",
        page.resolve().as_uri(),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert screenshot.exists() and screenshot.stat().st_size > 1000
    return [m.group(0) for m in CONSOLE.finditer(r.stderr)]


@needs_chromium
def test_report_opens_in_chromium_without_console_errors(tmp_path):
    # The detector must see a real console error, or a clean result would mean nothing.
    broken = tmp_path / "broken.html"
    broken.write_text('<!DOCTYPE html><html><body><script>console.error("planted"); nope();</script></body></html>')
    logged = open_in_chromium(broken, tmp_path, tmp_path / "broken.png")
    assert any('"planted"' in m for m in logged) and any("nope is not defined" in m for m in logged)

    fabricate_run(tmp_path / "run")
    report = write_report(tmp_path / "run", tmp_path / "report.html")
    shot = tmp_path / "report.png"
    assert open_in_chromium(report, tmp_path, shot, size="1180,2330") == []
    if os.environ.get("AGENTMILL_UPDATE_SCREENSHOT"):
        shutil.copyfile(shot, ROOT / "docs" / "report.png")
