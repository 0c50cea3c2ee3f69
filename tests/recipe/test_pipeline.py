"""A recipe end to end over the bundled tasks split into sources, with a scripted model server:
each stage's counts are right, and changing only the trace filter reruns only the trace filter
and the export (checked from the cache records)."""

import asyncio
import json
from pathlib import Path

import pytest

from agentmill.errors import AgentmillError
from agentmill.recipe.cache import read_log
from agentmill.recipe.pipeline import Pipeline
from agentmill.recipe.schema import load_recipe
from agentmill.tasks import load_dataset, sample_dataset_path
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer, Reply, terminus_json

pytestmark = sandbox

SOURCES = {
    "text": ["top-word-frequencies", "ini-to-env-file", "extract-email-addresses"],
    "data": ["csv-revenue-by-region", "json-users-to-csv"],
    "ops": ["errors-per-hour"],
}


def policy_for_samples(names: list[str] | None = None):
    """Augmentation: a prefixed rewrite. Terminal agent: types the task's reference solution.
    `names`: the sample tasks it knows (default: this test's sources; scripts/before_after.py: all)."""
    names = [n for ns in SOURCES.values() for n in ns] if names is None else names
    tasks = load_dataset(sample_dataset_path(), names=names).tasks
    solutions = {t.instruction.strip()[:80]: (t.path / "solution" / "solve.sh").read_text() for t in tasks}

    def policy(request):
        msgs = request["messages"]
        if "Does the rewritten task ask for exactly what the original asks?" in msgs[-1]["content"]:
            return Reply(json.dumps({"same_task": True, "reason": "same files, numbers and format"}))
        if "Rewrite the following task" in msgs[-1]["content"]:
            original = msgs[-1]["content"].split("Task:\n", 1)[1].rsplit("\n\nAnswer with", 1)[0]
            return Reply(
                "A colleague from the platform team left this request in the tracker this morning; they need it "
                "done before the weekly data review and asked for exactly the result described below.\n\n" + original
            )
        first_user = next(m["content"] for m in msgs if m["role"] == "user")
        turns = sum(m["role"] == "assistant" for m in msgs)
        script = next((s for key, s in solutions.items() if key in first_user), "true\n")
        if turns == 0:
            return Reply(terminus_json([(f"bash <<'AGENTMILL_EOF'\n{script}AGENTMILL_EOF\n", 1.0)]))
        if turns == 1:
            return Reply(terminus_json([("ls\n", 0.1)]))
        return Reply(terminus_json(complete=True))

    return policy


def recipe_text(base_url: str, min_turns: int, allow_empty: bool = False) -> str:
    sources = "\n".join(
        f'[[sources]]\nname = "{name}"\nsample = true\ntasks = {json.dumps(names)}\nscore = {1.0 - i / 10}\n'
        for i, (name, names) in enumerate(SOURCES.items())
    )
    return f"""
[recipe]
name = "e2e"
seed = 1

[model]
name = "scripted"
base_url = "{base_url}"
temperature = 0.0

{sources}

[augment]
strategies = ["rewrite"]
sources = ["data"]

[[task_filters]]
kind = "starts"

[[task_filters]]
kind = "dedupe"
params = {{ threshold = 0.95 }}  # the scripted rewrites are close to their originals

[mix]
top_n = 2
budget = 6

[rollout]
agent = "terminus"
concurrency = 4
max_turns = 4

[trace_filters]
min_turns = {min_turns}

[[exports]]
format = "trl"
file = "trl.jsonl"
allow_empty = {str(allow_empty).lower()}
"""


def pipeline_for(tmp_path: Path, base_url: str, min_turns: int, allow_empty: bool = False) -> Pipeline:
    path = tmp_path / "recipe.toml"
    path.write_text(recipe_text(base_url, min_turns, allow_empty))
    recipe, raw = load_recipe(path)
    return Pipeline(recipe, raw, tmp_path / "run")


def run(tmp_path: Path, base_url: str, min_turns: int, allow_empty: bool = False):
    pipeline = pipeline_for(tmp_path, base_url, min_turns, allow_empty)
    reports = asyncio.run(pipeline.run())
    return pipeline, {r.stage: r for r in reports}


def test_recipe_end_to_end_and_cache_reuse(tmp_path):
    with ChatServer(policy_for_samples()) as srv:
        first, reports = run(tmp_path, srv.base_url, min_turns=3)
        assert (reports["sources"].count_in, reports["sources"].count_out) == (6, 6)
        assert (reports["augment"].count_in, reports["augment"].count_out) == (6, 8)  # + 2 rewrites of 'data'
        assert reports["filter0-starts"].count_out == 8
        assert reports["filter1-dedupe"].count_out == 8
        mix = reports["mix"]
        assert mix.count_out == 6  # top 2 (text, data) x 3
        assert mix.reasons() == {"source 'ops' not in the top 2": 1, "over the quota of 3 for 'data'": 1}
        assert reports["rollout"].count_out == 6
        tf = reports["trace_filters"]
        assert tf.count_in == 6 and tf.count_out == 6  # every trace has 4 assistant turns (solve, look, claim, confirm)
        assert reports["export-trl"].count_out == 6
        rows = [json.loads(line) for line in (tmp_path / "run" / "exports" / "trl.jsonl").read_text().splitlines()]
        assert len(rows) == 6 and all(r["provenance"]["outcome"] == "passed" for r in rows)
        assert {
            s: all(e["status"] == "ran" for e in read_log(first.cache.log, first.run_id) if e["stage"] == s)
            for s in reports
        } == {s: True for s in reports}
        tasks = [json.loads(line) for line in (tmp_path / "run" / "tasks.jsonl").read_text().splitlines()]
        augmented = [t for t in tasks if t["strategy"] == "rewrite"]
        assert augmented and all(t["parent"] for t in augmented)

        # change only the trace filter: only it and the export run again; the export finds zero rows and
        # stops the run, naming the rule that removed the last traces (it is not marked done)
        second = pipeline_for(tmp_path, srv.base_url, min_turns=5)
        with pytest.raises(
            AgentmillError,
            match=r"export-trl: 0 rows: stage trace_filters removed the last records "
            r"\(min_turns\): lower \[trace_filters\] min_turns",
        ):
            asyncio.run(second.run())
        log = {e["stage"]: e["status"] for e in read_log(second.cache.log, second.run_id)}
        assert log == {
            "sources": "cached",
            "augment": "cached",
            "filter0-starts": "cached",
            "filter1-dedupe": "cached",
            "mix": "cached",
            "rollout": "cached",
            "trace_filters": "ran",
            "export-trl": "failed",
        }

        third, reports3 = run(tmp_path, srv.base_url, min_turns=5, allow_empty=True)
        log = {e["stage"]: e["status"] for e in read_log(third.cache.log, third.run_id)}
        assert log["trace_filters"] == "cached" and log["export-trl"] == "ran"
        assert reports3["trace_filters"].count_out == 0
        assert reports3["trace_filters"].reasons() == {"min_turns": 6}
        assert reports3["export-trl"].count_out == 0
        funnel = json.loads((tmp_path / "run" / "funnel.json").read_text())
        assert [f["stage"] for f in funnel][:2] == ["sources", "augment"]
        assert (tmp_path / "run" / "rollout" / "ledger.sqlite").exists()
