"""The recipe verbs as a user runs them: the plan comes from the stage objects (keys, cache), the dry
run writes nothing, a stage is marked done only once it finished, ablation matrices are validated
before anything is built and any left-out variant fails the command, `table` names bad input."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentmill.errors import AgentmillError
from agentmill.recipe.pipeline import Pipeline, build_stages
from agentmill.recipe.schema import parse_recipe
from agentmill.recipe.stage import STAGES
from tests.conftest import sandbox

AGENTMILL = [sys.executable, "-m", "agentmill.cli"]


def agentmill(*args, cwd=None, timeout=600):
    return subprocess.run([*AGENTMILL, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


# A cheap real recipe: two bundled tasks, the nop agent (no model), every trace kept, empty exports allowed.
NOP_RECIPE = """
[recipe]
name = "nop"

[[sources]]
name = "text"
sample = true
tasks = ["ini-to-env-file", "extract-email-addresses"]

[[task_filters]]
kind = "dedupe"

[rollout]
agent = "nop"

[trace_filters]
min_turns = 0

[[exports]]
format = "trl"
file = "trl.jsonl"
allow_empty = true

[[exports]]
format = "rl"
file = "rl.jsonl"
"""


def write_recipe(folder: Path, text: str = NOP_RECIPE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "recipe.toml").write_text(text)
    return folder / "recipe.toml"


def plan_keys(text: str) -> dict[str, str]:
    import tomllib

    recipe = parse_recipe(tomllib.loads(text), where="r")
    return {p.stage: p.key for p in Pipeline(recipe, {}, Path("/nonexistent/run")).plan()}


def test_stages_come_from_the_registry_and_keys_follow_the_flow():
    assert {
        "sources",
        "augment",
        "mix",
        "rollout",
        "trace_filters",
        "export",
        "starts",
        "dedupe",
        "askllm",
        "response_length",
        "decontaminate",
    } <= set(STAGES.names())
    base = plan_keys(NOP_RECIPE)
    assert list(base) == ["sources", "filter0-dedupe", "mix", "rollout", "trace_filters", "export-trl", "export-rl"]
    # a later setting changes only its own key and those downstream of it
    changed = plan_keys(NOP_RECIPE.replace("min_turns = 0", "min_turns = 2"))
    assert [s for s in base if base[s] != changed[s]] == ["trace_filters", "export-trl"]  # rl rows ignore min_turns
    changed = plan_keys(NOP_RECIPE.replace('kind = "dedupe"', 'kind = "dedupe"\nparams = { threshold = 0.5 }'))
    assert [s for s in base if base[s] != changed[s]] == [
        "filter0-dedupe",
        "mix",
        "rollout",
        "trace_filters",
        "export-trl",
        "export-rl",
    ]


def test_bad_stage_settings_fail_at_planning_naming_the_key(tmp_path):
    path = write_recipe(tmp_path, NOP_RECIPE.replace('kind = "dedupe"', 'kind = "dedupe_typo"'))
    r = agentmill("run", str(path), "--dry-run")
    assert r.returncode == 2 and "recipe.toml: task_filters.0.kind: unknown task filter 'dedupe_typo'" in r.stderr
    assert "known: askllm, decontaminate, dedupe, response_length, starts" in r.stderr
    path = write_recipe(tmp_path, NOP_RECIPE.replace('kind = "dedupe"', 'kind = "dedupe"\nparams = { treshold = 0.5 }'))
    r = agentmill("run", str(path), "--dry-run")
    assert r.returncode == 2 and "task_filters.0" in r.stderr and "param 'treshold': unknown param" in r.stderr
    with pytest.raises(
        AgentmillError, match="task_filters.0.kind: unknown task filter 'rollout'"
    ):  # a stage of another kind is not a filter
        build_stages(
            parse_recipe({"sources": [{"name": "s", "sample": True}], "task_filters": [{"kind": "rollout"}]}, where="r")
        )


def test_dry_run_writes_nothing(tmp_path):
    path = write_recipe(tmp_path / "r")
    run, cache = tmp_path / "run", tmp_path / "cache"
    r = agentmill("run", str(path), "--out", str(run), "--cache", str(cache), "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "to run" in r.stdout and "export-rl" in r.stdout
    assert not run.exists() and not cache.exists()
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["recipe.toml"]


@sandbox
def test_a_failed_stage_is_not_marked_done_and_a_rerun_resumes(tmp_path):
    bad = NOP_RECIPE.replace(
        'kind = "dedupe"', f'kind = "decontaminate"\nparams = {{ benchmarks = ["{tmp_path}/no-such-benchmark"] }}'
    )
    path = write_recipe(tmp_path / "r", bad)
    run = tmp_path / "run"
    r = agentmill("run", str(path), "--out", str(run))
    assert r.returncode == 2 and "no-such-benchmark" in r.stderr and "Traceback" not in r.stderr
    log = [json.loads(line) for line in (run / "cache.jsonl").read_text().splitlines()]
    assert [(e["stage"], e["status"]) for e in log] == [("sources", "ran"), ("filter0-decontaminate", "failed")]
    assert "no-such-benchmark" in log[-1]["error"]
    assert not list((run / "stages" / "filter0-decontaminate").glob("*/done.json"))
    assert [s["stage"] for s in json.loads((run / "funnel.json").read_text())] == ["sources"]  # what finished

    (tmp_path / "no-such-benchmark").mkdir()  # fix the cause: the rerun reuses sources and runs the rest
    r = agentmill("run", str(path), "--out", str(run))
    assert r.returncode == 0, r.stderr
    log = [json.loads(line) for line in (run / "cache.jsonl").read_text().splitlines()][2:]
    assert [(e["stage"], e["status"]) for e in log] == [
        ("sources", "cached"),
        ("filter0-decontaminate", "ran"),
        ("mix", "ran"),
        ("rollout", "ran"),
        ("trace_filters", "ran"),
        ("export-trl", "ran"),
        ("export-rl", "ran"),
    ]
    funnel = {s["stage"]: s for s in json.loads((run / "funnel.json").read_text())}
    assert funnel["rollout"]["count_out"] == 2 and funnel["export-rl"]["count_out"] == 2
    assert len((run / "exports" / "rl.jsonl").read_text().splitlines()) == 2
    r = agentmill("report", str(run))
    assert r.returncode == 0 and (run / "report.html").exists()


def test_a_recipe_that_keeps_nothing_says_where_the_records_went(tmp_path):
    path = write_recipe(
        tmp_path / "r", NOP_RECIPE.replace('"ini-to-env-file", "extract-email-addresses"', '"no-such-task"')
    )
    r = agentmill("run", str(path), "--out", str(tmp_path / "run"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert (
        "export-rl: 0 rows: stage sources produced no records (source 'text': task 'no-such-task' not found); "
        "or set allow_empty = true on this export"
    ) in r.stderr


SCORE = """
import json, sys
variant, out = sys.argv[1], sys.argv[2]
if variant == "broken-eval":
    sys.exit("eval crashed")
json.dump({"bench": [1.0, 2.0]}, open(out, "w"))
"""


def test_ablate_validates_every_variant_before_building(tmp_path):
    write_recipe(tmp_path)
    (tmp_path / "score.py").write_text(SCORE)
    (tmp_path / "matrix.toml").write_text(
        f'base = "recipe.toml"\neval = "{sys.executable} score.py {{variant}} {{results}}"\n'
        '[[variants]]\nname = "fine"\n'
        '[[variants]]\nname = "typo"\nset = { "mix.top_nn" = 2 }\n'
        '[[variants]]\nname = "bad-param"\nset = { "task_filters.0.params" = { threshold = 5 } }\n'
    )
    r = agentmill("ablate", str(tmp_path / "matrix.toml"), "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert "2 of 3 variant(s) are invalid; nothing was built" in r.stderr
    assert "variant 'typo': mix.top_nn: Extra inputs are not permitted" in r.stderr
    assert "variant 'bad-param'" in r.stderr and "param 'threshold'" in r.stderr
    assert not (tmp_path / "out").exists()


@sandbox
def test_ablate_exits_non_zero_when_a_variant_is_left_out(tmp_path):
    write_recipe(tmp_path)
    (tmp_path / "score.py").write_text(SCORE)
    (tmp_path / "matrix.toml").write_text(
        f'base = "recipe.toml"\neval = "{sys.executable} score.py {{variant}} {{results}}"\n'
        '[[variants]]\nname = "fine"\n[[variants]]\nname = "broken-eval"\n'
    )
    r = agentmill("ablate", str(tmp_path / "matrix.toml"), "--out", str(tmp_path / "out"))
    assert r.returncode == 1, r.stderr
    assert "1 variant(s) left out: broken-eval" in r.stderr
    assert "fine" in r.stdout  # the table of the variants that succeeded is still printed
    assert json.loads((tmp_path / "out" / "results.json").read_text()) == {"fine": {"bench": [1.0, 2.0]}}


@sandbox
def test_a_damaged_stage_cache_is_one_error_naming_the_file(tmp_path):
    path = write_recipe(tmp_path / "r", NOP_RECIPE.replace("[rollout]", "[mix]\nbudget = 1\n\n[rollout]"))
    run = tmp_path / "run"
    assert agentmill("run", str(path), "--out", str(run)).returncode == 0
    damaged = next((run / "stages" / "filter0-dedupe").glob("*/tasks.jsonl"))
    damaged.write_text('{"name": "x"}\n')
    (run / "stages" / "mix").rename(tmp_path / "old-mix")  # mix must run again and read the damaged file
    r = agentmill("run", str(path), "--out", str(run))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{damaged}: line 1:" in r.stderr and "delete the stage's cache folder" in r.stderr


@pytest.mark.parametrize(
    "results, words",
    [
        ({"v": {"swe": [1, "0.5"]}}, "benchmark 'swe': expected a list of numbers; item 1 is str '0.5'"),
        ({"v": {"swe": 0.5}}, "benchmark 'swe': expected a list of numbers, got float 0.5"),
        ({"v": [1, 2]}, "'v': expected an object"),
    ],
)
def test_table_names_the_bad_field_in_one_line(tmp_path, results, words):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    r = agentmill("table", str(path))
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "Traceback" not in r.stderr
    assert str(path) in r.stderr and words in r.stderr
    path.write_text("{not json")
    r = agentmill("table", str(path))
    assert r.returncode == 2 and "cannot read results" in r.stderr and "Traceback" not in r.stderr
