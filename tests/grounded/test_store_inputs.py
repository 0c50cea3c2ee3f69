"""What a ground run reads back: the user's own seeds file, its store's results and seeds, the
config's patterns and the benchmarks of `decontaminate`. Each bad input is one clear error that
names the file (and line or field) and exits non-zero; good input is used as given."""

import asyncio
import json

import pytest
from typer.testing import CliRunner

from agentmill.cli import app
from agentmill.errors import AgentmillError
from agentmill.grounded import run as ground_run
from agentmill.grounded.pipeline import SeedOutcome
from agentmill.grounded.run import GroundConfig, run_ground
from tests.grounded.test_environment import ROLES
from tests.grounded.test_run_seeds import config

runner = CliRunner()


@pytest.fixture(scope="module")
def seeds_text(tmp_path_factory):
    path = tmp_path_factory.mktemp("seeds") / "seeds.jsonl"
    res = runner.invoke(app, ["ground", "seeds", "--k", "3", "--json", str(path)])
    assert res.exit_code == 0, res.output
    return path.read_text()


def recording(calls):
    async def ground_seed(seed, *_args, on_stage=None, **_kw):
        calls.append(seed)
        if on_stage:
            on_stage("teacher (first run)")
        return SeedOutcome(seed_id=seed.seed_id, stage="done")

    return ground_seed


def test_the_users_seeds_file_is_run_as_edited(tmp_path, seeds_text, monkeypatch):
    rows = [json.loads(line) for line in seeds_text.splitlines()]
    rows[1]["requirement"] = "Reconcile the quarter's vendor invoices against the purchase orders."
    edited = tmp_path / "mine.jsonl"
    edited.write_text("".join(json.dumps(r) + "\n\n" for r in reversed(rows)))
    calls, stages = [], []
    monkeypatch.setattr(ground_run, "ground_seed", recording(calls))
    cfg = config(tmp_path, seeds_file=str(edited))
    asyncio.run(run_ground(cfg, tmp_path / "store", on_stage=lambda sid, what: stages.append((sid, what))))
    assert [s.seed_id for s in calls] == [r["seed_id"] for r in reversed(rows)]  # the file's seeds, in its order
    assert calls[1].requirement.startswith("Reconcile the quarter's vendor invoices")
    assert stages == [(r["seed_id"], "teacher (first run)") for r in reversed(rows)]


@pytest.mark.parametrize(
    "mangle, words",
    [
        (lambda rows: rows[:1] + ["{not json"], [":2: not a seed"]),
        (lambda rows: [dict(rows[0], seed_id="../../etc")], [":1: seed_id '../../etc' is not a plain name"]),
        (lambda rows: [rows[0], rows[0]], [":2: seed_id", "appears twice"]),
        (lambda rows: [dict(rows[0], pattern="juggling")], [":1: pattern 'juggling' is unknown"]),
        (lambda rows: [], ["no seeds in the file"]),
    ],
)
def test_a_bad_seeds_file_is_one_error_before_anything_runs(tmp_path, seeds_text, mangle, words):
    rows = [json.loads(line) for line in seeds_text.splitlines()]
    bad = tmp_path / "mine.jsonl"
    bad.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in mangle(rows)))
    (tmp_path / "g.toml").write_text(ROLES)
    res = runner.invoke(
        app, ["ground", "run", str(tmp_path / "g.toml"), "--out", str(tmp_path / "store"), "--seeds-file", str(bad)]
    )
    assert res.exit_code == 2 and all(w in res.output for w in words) and "Traceback" not in res.output, res.output
    assert not (tmp_path / "store").exists()


def test_patterns_in_the_config_are_checked_like_the_flag(tmp_path):
    (tmp_path / "g.toml").write_text('patterns = ["juggling"]\n' + ROLES)
    res = runner.invoke(app, ["ground", "run", str(tmp_path / "g.toml"), "--out", str(tmp_path / "store")])
    assert res.exit_code == 2 and "field 'patterns'" in res.output and "unknown ['juggling']" in res.output, res.output
    (tmp_path / "g.toml").write_text('patterns = ["audit and reconciliation"]\n' + ROLES)
    assert GroundConfig.load(tmp_path / "g.toml").patterns == ["audit and reconciliation"]


def test_a_corrupted_result_stops_the_run_naming_the_file(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(ground_run, "ground_seed", recording(calls))
    cfg = config(tmp_path, seeds=2)
    store = tmp_path / "store"
    asyncio.run(run_ground(cfg, store))
    victim = sorted((store / "results").glob("*.json"))[0]
    victim.write_text('{"seed_id": "x", "stage": ')  # cut off by a full disk
    calls.clear()
    with pytest.raises(
        AgentmillError, match=rf"{victim.name}: corrupted or not a SeedOutcome.*delete it to run that seed again"
    ):
        asyncio.run(run_ground(cfg, store))
    assert calls == []  # checked before any seed ran


def test_a_corrupted_store_seeds_file_is_one_error_for_the_report(tmp_path, monkeypatch):
    monkeypatch.setattr(ground_run, "ground_seed", recording([]))
    store = tmp_path / "store"
    asyncio.run(run_ground(config(tmp_path, seeds=1), store))
    (store / "seeds.jsonl").write_text((store / "seeds.jsonl").read_text() + '{"seed_id": 3}\n')
    res = runner.invoke(app, ["ground", "report", str(store)])
    assert res.exit_code == 2 and "seeds.jsonl:2: not a seed" in res.output and "Traceback" not in res.output, (
        res.output
    )


def test_decontaminate_refuses_an_empty_or_unloadable_benchmark(tmp_path):
    store = tmp_path / "store"
    (store / "tasks").mkdir(parents=True)
    (tmp_path / "empty").mkdir()
    res = runner.invoke(app, ["ground", "decontaminate", str(store), "--benchmark", str(tmp_path / "empty")])
    assert res.exit_code == 2 and "no tasks loaded" in res.output and "0 contaminated" not in res.output, res.output
    res = runner.invoke(app, ["ground", "decontaminate", str(store), "--benchmark", str(tmp_path / "missing")])
    assert res.exit_code == 2 and "missing" in res.output and "0 contaminated" not in res.output, res.output
