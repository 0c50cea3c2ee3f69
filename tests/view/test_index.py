"""The viewer's index and queries: a real run's facts against the exporter's own funnel, list queries,
a 100,000-trial ledger paged by indexed queries, a run that grows and shrinks, unreadable folders."""

import shutil
import sqlite3

import pytest

from agentmill.rollout.ledger import Ledger
from agentmill.traces.export import export_run
from agentmill.traces.filters import FilterSpec
from agentmill.view import open_source
from agentmill.view.queries import BadQuery, TrialQuery
from tests.view.synthetic import synthetic_ledger


def q(**params) -> TrialQuery:
    return TrialQuery.from_params({k: [str(v)] for k, v in params.items()})


def page(source, **params) -> dict:
    return source.trials({k: [str(v)] for k, v in params.items()})


def test_real_run_facts_match_the_ledger_and_the_export_funnel(real_run, tmp_path):
    filters = tmp_path / "filters.toml"
    filters.write_text('[filters]\nmin_turns = 0\nreward = "success"\n')
    source = open_source(real_run, filters=filters)
    s = source.summary({})
    assert s["facets"]["trials"] == 10 and s["facets"]["tasks"] == 5
    assert {o["value"]: o["count"] for o in s["facets"]["outcomes"]} == {"passed": 6, "failed": 4}
    assert s["facets"]["tampered"] == 2 and s["filters"]["source"] == str(filters)

    # the exporter's funnel over the same run and spec: every rule's drops are the trials the index says it dropped first
    spec = FilterSpec.from_toml(filters)
    report = export_run(real_run, "trl", tmp_path / "out.jsonl", spec=spec)
    for step in report.funnel[1:]:
        assert page(source, kept=step.name)["total"] == step.dropped, step.name
    assert page(source, kept="kept")["total"] == report.rows == 6
    tampered = page(source, tamper="yes")["trials"]
    assert {t["task"] for t in tampered} == {"plants-conftest"}
    assert all(
        t["tamper"] == 2
        and t["tamper_kinds"] == "runner_config"
        and t["filter_reason"] == "tamper"
        and t["filters_failed"] == "tamper,reward"
        for t in tampered
    )

    # the defaults (no --filters): oracle trials have one assistant turn, so min_turns drops the rest
    default = open_source(real_run, index=tmp_path / "default.sqlite")
    reasons = {r["value"]: r["count"] for r in default.summary({})["facets"]["filter_reasons"]}
    assert reasons == {"tamper": 2, "min_turns": 8}
    assert {t["turns"] for t in page(default, limit=100)["trials"]} == {1}


def test_list_filters_search_sort_and_paging(real_run, tmp_path):
    source = open_source(real_run, index=tmp_path / "i.sqlite")
    assert page(source, outcome="failed")["total"] == 4
    assert page(source, outcome="failed,passed")["total"] == 10
    assert {t["task"] for t in page(source, q="host")["trials"]} == {"hostile-output"}
    assert page(source, q="%")["total"] == 0  # LIKE wildcards are searched for, not obeyed
    assert page(source, task="dedupe-photos")["total"] == 2 and page(source, task="dedupe")["total"] == 0
    assert page(source, reward_min=0.5)["total"] == 6 and page(source, reward_max=0.5)["total"] == 4
    assert page(source, turns_min=2)["total"] == 0 and page(source, turns_max=1)["total"] == 10
    assert page(source, tamper="no")["total"] == 8
    assert page(source, tokens_max=0)["total"] == 10  # the oracle spends no tokens
    ordered = page(source, sort="task", desc=1, limit=3)
    assert [t["task"] for t in ordered["trials"]] == ["wrong-answer", "wrong-answer", "plants-conftest"]
    assert ordered["total"] == 10
    rest = page(source, sort="task", desc=1, limit=3, offset=9)["trials"]
    assert [t["task"] for t in rest] == ["csv-revenue-by-region"]
    trial = source.trial({"id": [rest[0]["trial_id"]]})
    assert [a["attempt"] for a in trial["attempts"]] == [0, 1] and trial["row"]["task"] == "csv-revenue-by-region"
    assert "quantity * unit_price" in trial["task"]["instruction"] and trial["task"]["exists"]
    for bad, name in (
        ({"sort": "reward; DROP TABLE trials"}, "sort"),
        ({"limit": "9999"}, "limit"),
        ({"turns_min": "many"}, "turns_min"),
        ({"tamper": "maybe"}, "tamper"),
        ({"offset": "-1"}, "offset"),
    ):
        with pytest.raises(BadQuery, match=f"'{name}'"):
            TrialQuery.from_params({k: [v] for k, v in bad.items()})


def test_a_hundred_thousand_trials_page_by_indexed_queries(tmp_path):
    counts = synthetic_ledger(tmp_path / "run", 100_000)
    source = open_source(tmp_path / "run")
    assert source.summary({})["facets"]["trials"] == 100_000
    last = page(source, offset=99_950, limit=50)
    assert last["total"] == 100_000 and len(last["trials"]) == 50
    assert last["trials"][-1]["task"] == "task-00999" and last["trials"][-1]["attempt"] == 99
    assert all(t["facts_error"] == "no trial folder" for t in last["trials"])  # ledger rows only: said, not fatal
    for outcome, n in counts.items():
        assert page(source, outcome=outcome)["total"] == n
    top = page(source, sort="tokens", desc=1, limit=1)["trials"][0]
    ledger = sqlite3.connect(tmp_path / "run" / "ledger.sqlite")
    assert top["tokens"] == ledger.execute("SELECT MAX(prompt_tokens + completion_tokens) FROM trials").fetchone()[0]

    # every list the page asks for is answered through an index; sorted lists need no sort of every row
    db = source.index.connect()

    def plan(params: dict) -> str:
        query = q(**params)
        where, args = query.where()
        return " | ".join(
            r[-1]
            for r in db.execute(
                f"EXPLAIN QUERY PLAN SELECT trial_id FROM trials{where} {query.order()} LIMIT 50 OFFSET 5000", args
            )
        )

    presorted = (
        {},
        {"outcome": "failed"},
        {"sort": "reward", "desc": "1"},
        {"sort": "tokens"},
        {"task": "task-00042"},
        {"sort": "turns"},
        {"sort": "finished", "desc": "1"},
    )
    for params in presorted:
        assert "INDEX" in plan(params) and "TEMP B-TREE" not in plan(params), (params, plan(params))
    for params in ({"kept": "dropped"}, {"tamper": "yes"}, {"kept": "min_turns"}):
        assert "INDEX" in plan(params), (params, plan(params))
    # the check can fail: without the viewer's indexes the same queries scan and sort every row
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='index' AND name LIKE 'trials_%'").fetchall():
        db.execute(f"DROP INDEX {name}")
    db.close()
    db = source.index.connect()  # a fresh connection: cached EXPLAIN statements are not prepared again
    assert "TEMP B-TREE" in plan({}) and "INDEX" not in plan({"sort": "tokens"})
    db.close()


def test_the_index_follows_a_run_that_grows_and_shrinks(tmp_path):
    synthetic_ledger(tmp_path / "run", 100, tasks=10)
    source = open_source(tmp_path / "run")
    assert page(source)["total"] == 100
    ledger = Ledger(tmp_path / "run" / "ledger.sqlite")
    ledger.start("new-trial", "task-new", "hnew", 0)
    source.index.sync(force=True)
    row = page(source, task="task-new")["trials"][0]
    assert row["state"] == "running" and row["outcome"] is None
    ledger.finish("new-trial", {"outcome": "failed", "reward": 0.0, "tokens": {"prompt": 5, "completion": 7}})
    source.index.sync(force=True)
    row = page(source, task="task-new")["trials"][0]
    assert (row["state"], row["outcome"], row["tokens"]) == ("done", "failed", 12)
    ledger.forget(["new-trial", "t0000000"])
    source.index.sync(force=True)
    assert page(source)["total"] == 99 and page(source, task="task-new")["total"] == 0
    ledger.close()
    # a reopened viewer reuses the index file and agrees with it
    assert page(open_source(tmp_path / "run"), task="task-00001")["total"] == 10
    # the index is a cache: a file that is not a database is replaced, not fatal
    (tmp_path / "run" / "view.sqlite").write_bytes(b"garbage" * 1000)
    for suffix in ("-wal", "-shm"):
        (tmp_path / "run" / f"view.sqlite{suffix}").unlink(missing_ok=True)
    assert page(open_source(tmp_path / "run"))["total"] == 99


def test_an_unreadable_trial_folder_is_reported_and_the_rest_still_show(real_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(real_run, run, ignore=shutil.ignore_patterns("view.sqlite*"))
    folders = sorted((run / "trials").iterdir())
    (folders[0] / "result.json").write_text("{not json")
    (folders[1] / "telemetry.json").unlink()  # computed from the trajectory instead
    source = open_source(run)
    rows = {t["trial_id"]: t for t in page(source, limit=100)["trials"]}
    assert (
        rows[folders[0].name]["facts_error"].startswith("JSONDecodeError")
        and rows[folders[0].name]["filter_kept"] is None
    )
    assert rows[folders[1].name]["facts_error"] is None and rows[folders[1].name]["turns"] == 1
    assert sum(r["facts_error"] is None for r in rows.values()) == 9
    shown = source.trial({"id": [folders[0].name]})  # the broken trial still opens: what can be read is shown
    assert shown["result"] == {} and shown["trajectory"]["steps"]


def test_a_recipe_run_folder_opens_through_its_rollout_with_the_recipes_filters(real_run, tmp_path):
    from agentmill.view.verdicts import judge_for

    recipe_run = tmp_path / "recipe-run"
    recipe_run.mkdir()
    (recipe_run / "rollout").symlink_to(real_run)
    smoke = (__import__("pathlib").Path(__file__).resolve().parents[2] / "recipes" / "smoke.toml").read_text()
    (recipe_run / "recipe.toml").write_text(
        smoke + '\n[trace_filters]\nmin_turns = 1\ntamper = "keep"\n' if "[trace_filters]" not in smoke else smoke
    )
    judge = judge_for(recipe_run, real_run)
    assert judge.source.endswith("recipe.toml [trace_filters]")
    source = open_source(recipe_run, index=tmp_path / "i.sqlite")
    assert source.summary({})["facets"]["trials"] == 10
    assert source.judge.spec.model_dump() == judge.spec.model_dump()

    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "funnel.json").write_text("[]")
    from agentmill.errors import AgentmillError

    with pytest.raises(AgentmillError, match="without a finished rollout stage"):
        open_source(tmp_path / "half")
    with pytest.raises(AgentmillError, match="nothing the viewer can open"):
        open_source(tmp_path)
    with pytest.raises(AgentmillError, match="no such folder"):
        open_source(tmp_path / "missing")
