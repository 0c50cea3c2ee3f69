"""`agentmill ground ...` through the CLI: a one-seed run against scripted endpoints (real HTTP),
resume, the HTML report, the SFT export of admitted runs, ratings and contamination commands."""

import json
from contextlib import ExitStack

import tomli_w
from typer.testing import CliRunner

from agentmill.cli import app
from agentmill.grounded.corpus import build_corpus
from agentmill.grounded.roles import ROLE_NAMES
from tests.conftest import sandbox, scratch_cache
from tests.grounded import scripted
from tests.grounded.test_e2e import _const
from tests.helpers.chat_server import ChatServer
from tests.recipe.test_report import CHROMIUM, open_in_chromium

runner = CliRunner()


@sandbox
def test_ground_run_report_export_and_resume(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTMILL_CACHE", str(scratch_cache(tmp_path)))
    corpus = build_corpus(tmp_path / "corpus", bulk=False)
    policies = {
        "assembler": scripted.assembler_policy(),
        "grapher": _const(scripted.GRAPH),
        "compiler": scripted.compiler_policy(leak_first=False),
        "teacher": scripted.teacher_policy([scripted.GOOD]),
        "reviser": scripted.reviser_policy(),
        "judge": scripted.judge_policy(),
    }
    with ExitStack() as stack:
        servers = {r: stack.enter_context(ChatServer(p)) for r, p in policies.items()}
        config = {
            "seeds": 1,
            "patterns": ["data analysis and reporting"],
            "corpus_dir": str(corpus),
            "settings": {"attempts": 1, "max_turns": 6},
            "roles": {
                r: {"base_url": servers[r].base_url, "model": f"m-{r}", "max_retries": 0}
                for r in ROLE_NAMES
                if r in servers
            },
        }
        (tmp_path / "ground.toml").write_text(tomli_w.dumps(config))
        store = tmp_path / "store"
        res = runner.invoke(app, ["ground", "run", str(tmp_path / "ground.toml"), "--out", str(store)])
        assert res.exit_code == 0, res.output
        assert "1 of 1 seeds admitted" in res.output
        sent = {r: len(s.requests) for r, s in servers.items()}
        again = runner.invoke(app, ["ground", "run", str(tmp_path / "ground.toml"), "--out", str(store)])
        assert (
            again.exit_code == 0 and {r: len(s.requests) for r, s in servers.items()} == sent
        )  # resumed: nothing re-asked
    funnel = json.loads((store / "funnel.json").read_text())
    assert funnel == {"seeds": 1, "stages": {"done": 1}, "attempts": {"admitted": 1}, "admitted_tasks": 1}
    assert len(json.loads((store / "coverage.json").read_text())) == 1
    page = (store / "report.html").read_text()
    assert 'id="coverage"' in page and "data analysis and reporting" in page and "attempts: admitted" in page
    if CHROMIUM:  # rendered by a real browser, without a console error (the detector is tested in test_report)
        assert open_in_chromium(store / "report.html", tmp_path, tmp_path / "ground-report.png", size="1100,1600") == []
    out = tmp_path / "sft.jsonl"
    res = runner.invoke(app, ["export", str(store / "sft"), "--format", "trl", "--out", str(out), "--min-turns", "1"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 1 and "Iowa" in json.dumps(rows[0]["messages"])
    # the admitted task passes agentmill's own task check as far as it can go without a judge: the
    # oracle (reference deliverables) passes the artifact checks, the nop agent does not, and the
    # rubric is reported as needing a judge (never "ok" on the checks alone)
    res = runner.invoke(app, ["check", str(store / "tasks"), "--json", str(tmp_path / "check.json")])
    verdicts = json.loads((tmp_path / "check.json").read_text())
    assert res.exit_code == 0 and [v["verdict"] for v in verdicts] == ["needs_judge"], res.output
    assert verdicts[0]["oracle"]["outcome"] == "unjudged" and verdicts[0]["nop"]["outcome"] == "failed"
    assert "needs a judge (set AGENTMILL_JUDGE_MODEL" in verdicts[0]["reason"] and "1/1 ok" not in res.output
    bench = tmp_path / "bench"
    (bench / "b1" / "tests").mkdir(parents=True)
    (bench / "b1" / "instruction.md").write_text("Reverse a linked list in C and print it.")
    (bench / "b1" / "task.toml").write_text('[metadata]\nsource = "bench"\n')  # an empty one is a broken task
    (bench / "b1" / "tests" / "test.sh").write_text("true\n")
    res = runner.invoke(app, ["ground", "decontaminate", str(store), "--benchmark", str(bench)])
    assert res.exit_code == 0 and "0 contaminated" in res.output, res.output


def test_ratings_command_and_bad_input(tmp_path):
    f = tmp_path / "c.jsonl"
    f.write_text("".join(json.dumps({"a": "base", "b": "sft", "winner": w}) + "\n" for w in ["B"] * 3 + ["A"]))
    res = runner.invoke(app, ["ground", "ratings", str(f), "--anchor", "base", "--bootstrap", "50"])
    assert res.exit_code == 0 and "1667.0" in res.output and "sft" in res.output, res.output
    res = runner.invoke(app, ["ground", "ratings", str(f), "--anchor", "nobody"])
    assert res.exit_code == 2 and "not among the systems" in res.output
    f.write_text(json.dumps({"a": "x", "b": "y", "winner": "x"}) + "\n")
    res = runner.invoke(app, ["ground", "ratings", str(f), "--anchor", "x"])
    assert res.exit_code == 2 and "winner must be" in res.output


def test_seeds_command_and_bad_config(tmp_path):
    res = runner.invoke(app, ["ground", "seeds", "--k", "3", "--json", str(tmp_path / "s.jsonl")])
    assert res.exit_code == 0, res.output
    assert len((tmp_path / "s.jsonl").read_text().splitlines()) == 3
    res = runner.invoke(app, ["ground", "seeds", "--pattern", "juggling"])
    assert res.exit_code == 2 and "unknown" in res.output
    (tmp_path / "bad.toml").write_text("seeds = 0\n[roles]\n")
    res = runner.invoke(app, ["ground", "run", str(tmp_path / "bad.toml"), "--out", str(tmp_path / "s")])
    assert res.exit_code == 2 and "bad.toml: field 'seeds'" in res.output
