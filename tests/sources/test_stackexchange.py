"""`stackexchange`: a Posts.xml dump of our own making -> unverified tasks that load, roll out, check
and export with reward null, and that RL exports refuse."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentmill.errors import AgentmillError
from agentmill.sources.html_markdown import html_to_markdown
from agentmill.sources.stackexchange import generate
from agentmill.tasks import load_dataset, write_task
from agentmill.tasks.model import TaskConfig, VerifierSection
from tests.conftest import sandbox
from tests.traces.builders import terminus_trajectory, write_trial

POSTS = Path(__file__).parent / "fixtures" / "Posts.xml"
AGENTMILL = [sys.executable, "-m", "agentmill.cli"]


def agentmill(*args):
    return subprocess.run([*AGENTMILL, *args], capture_output=True, text=True, timeout=300)


@pytest.fixture
def se_tasks(tmp_path):
    report = generate(POSTS, tmp_path / "se", tags=["bash", "sed", "jq", "sqlite"])
    return tmp_path / "se" / "tasks", report


def test_questions_become_tasks_and_filters_count_their_drops(se_tasks):
    tasks, report = se_tasks
    assert sorted(report.kept) == [
        "se-1-how-do-i-print-one-field-of-every-json-o",
        "se-2-replace-a-word-in-place-in-many-files",
    ]
    assert report.reasons == {"low_score": 1, "no_accepted_answer": 1, "tag_mismatch": 1}
    ds = load_dataset(tasks)
    assert ds.errors == [] and ds.warnings == []
    jq = next(t for t in ds.tasks if t.name.startswith("se-1"))
    assert not jq.verified and jq.test_script == "" and jq.tests_sources == ()
    assert jq.instruction.startswith("# How do I print one field")
    assert '```\n{"user": "ada", "ms": 12}' in jq.instruction and "**user**" in jq.instruction
    # the accepted answer is reference material, only where an oracle would look
    answer = "jq -r .user events.jsonl"
    assert answer in (jq.path / "solution" / "reference.md").read_text()
    shown = [p for p in jq.path.rglob("*") if p.is_file() and "solution" not in p.parts]
    assert not any(answer in p.read_text() for p in shown)
    assert "apt-get install -y --no-install-recommends jq" in jq.dockerfile.read_text()  # named in its tags


def test_filters_by_score_and_accepted_answer(tmp_path):
    report = generate(POSTS, tmp_path / "a", min_score=5, accepted=False)
    assert sorted(report.kept) == ["se-1-how-do-i-print-one-field-of-every-json-o", "se-5-registry-key-for-the-taskbar"]
    assert report.reasons == {"low_score": 3}
    with pytest.raises(AgentmillError, match="not a Posts.xml"):
        bad = tmp_path / "Posts.xml"
        bad.write_text("<posts><row Id='1'")
        generate(bad, tmp_path / "b")


def test_html_to_markdown_keeps_code_lists_links_and_quotes():
    md = html_to_markdown(
        '<p>Use <code>a &amp;&amp; b</code> <a href="https://x.org">here</a></p>'
        "<pre><code>for f in *; do\n  echo $f\ndone\n</code></pre><ol><li>one</li><li>two</li></ol>"
        "<blockquote><p>quoted</p></blockquote>"
    )
    assert md == (
        "Use `a && b` [here](https://x.org)\n\n```\nfor f in *; do\n  echo $f\ndone\n```\n\n"
        "1. one\n2. two\n\n> quoted\n"
    )


def test_a_verified_task_still_needs_its_test_script(tmp_path):
    root = write_task(
        tmp_path / "t", instruction="x\n", test_sh="true\n", config=TaskConfig(verifier=VerifierSection(kind="tests"))
    )
    (root / "tests" / "test.sh").unlink()
    ds = load_dataset(tmp_path)
    assert ds.tasks == [] and "verifier entry point is required" in str(ds.errors[0].problem)


@sandbox
def test_unverified_tasks_roll_out_check_and_export_with_reward_null(se_tasks, tmp_path):
    tasks, _ = se_tasks
    r = agentmill("check", str(tasks), "--json", str(tmp_path / "check.json"))
    assert r.returncode == 0, r.stdout + r.stderr  # "no verifier" is not a failure
    rows = json.loads((tmp_path / "check.json").read_text())
    assert {row["verdict"] for row in rows} == {"no_verifier"}
    assert all(row["reason"].startswith("no verifier") and row["nop"] is None for row in rows)

    run = tmp_path / "run"
    r = agentmill("rollout", str(tasks), "--agent", "nop", "--out", str(run))
    assert r.returncode == 0, r.stderr
    results = [json.loads(p.read_text()) for p in run.glob("trials/*/result.json")]
    assert len(results) == 2 and {(x["outcome"], x["reward"]) for x in results} == {("unverified", None)}
    assert all(x["timings"]["verifier"] == 0.0 and x["verifier_stdout"] == "" for x in results)
    shown = r.stdout + r.stderr
    assert "unverified: 2" in shown and "0 errors" in shown and "pass@1" not in shown  # not scored as failures

    r = agentmill("export", str(run), "--format", "trl", "--out", str(tmp_path / "sft.jsonl"), "--min-turns", "0")
    assert r.returncode == 0, r.stderr
    sft = [json.loads(line) for line in (tmp_path / "sft.jsonl").read_text().splitlines()]
    assert len(sft) == 2 and all(row["provenance"]["reward"] is None for row in sft)

    r = agentmill("export", str(run), "--format", "rl", "--out", str(tmp_path / "rl.jsonl"))
    assert r.returncode != 0 and "2 task(s) have no verifier" in r.stderr and "drop_outcomes" in r.stderr
    assert not (tmp_path / "rl.jsonl").exists()


def test_trace_filters_apply_to_unverified_traces_and_rl_refuses_them(tmp_path):
    run = tmp_path / "run"
    turns = [("ls\n", "a"), ("pwd\n", "/app")]
    write_trial(run, "u1", terminus_trajectory(turns), outcome="unverified", reward=None, task="q1")
    write_trial(run, "u2", terminus_trajectory(turns[:1]), outcome="unverified", reward=None, task="q2")
    write_trial(run, "p", terminus_trajectory(turns), task="verified")
    r = agentmill("export", str(run), "--format", "trl", "--out", str(tmp_path / "a.jsonl"), "--min-turns", "2")
    assert r.returncode == 0, r.stderr
    kept = [json.loads(line)["provenance"]["task"] for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert sorted(kept) == ["q1", "verified"]  # min_turns removed the one-turn unverified trace
    r = agentmill(
        "export",
        str(run),
        "--format",
        "trl",
        "--out",
        str(tmp_path / "b.jsonl"),
        "--min-turns",
        "0",
        "--reward",
        "success",
    )
    kept = [json.loads(line)["provenance"]["task"] for line in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert kept == ["verified"]  # an unverified trace is not a success
    r = agentmill("export", str(run), "--format", "rl", "--out", str(tmp_path / "rl.jsonl"))
    assert r.returncode != 0 and "q1, q2" in r.stderr
    r = agentmill(
        "export", str(run), "--format", "rl", "--out", str(tmp_path / "rl.jsonl"), "--drop-outcome", "unverified"
    )
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in (tmp_path / "rl.jsonl").read_text().splitlines()]
    assert [row["extra_info"]["task"] for row in rows] == ["verified"]


def test_the_cli_and_a_recipe_source(tmp_path, monkeypatch, declared_source_kinds):
    from agentmill.recipe.schema import load_recipe
    from agentmill.recipe.stages.sources import load_sources

    r = agentmill("sources", "stackexchange", str(POSTS), "--out", str(tmp_path / "cli"), "--tag", "sed", "--tag", "jq")
    assert r.returncode == 0, r.stderr
    assert "2 tasks kept of 2 candidates" in r.stdout and "tag_mismatch 3" in r.stdout
    monkeypatch.setenv("AGENTMILL_CACHE", str(tmp_path / "cache"))
    recipe = tmp_path / "r.toml"
    recipe.write_text(
        f'[[sources]]\nname = "su"\nkind = "stackexchange"\npath = "{POSTS}"\n'
        'params = { tags = ["sed"], min_score = 1 }\n'
    )
    tasks, _ = load_sources(load_recipe(recipe)[0])
    assert [t.name for t in tasks] == ["su/se-2-replace-a-word-in-place-in-many-files"]
