"""A recipe whose rollout agent comes from the registry (here `tools`, on a mixed dataset: the
terminal task it cannot run is dropped with the reason), and a `harbor-job` export, a folder written
whole and replaced when the stage runs again. The model is a scripted chat server (real HTTP)."""

import asyncio
import json
from pathlib import Path

import pytest

from agentmill.errors import AgentmillError
from agentmill.recipe.pipeline import Pipeline
from agentmill.recipe.schema import load_recipe
from agentmill.tasks import sample_tools_path
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer, Reply

pytestmark = sandbox


def recipe(tmp_path: Path, base_url: str, min_turns: int, agent: str = "tools") -> Pipeline:
    path = tmp_path / "recipe.toml"
    path.write_text(f"""
[recipe]
name = "agents-and-folders"

[model]
name = "scripted"
base_url = "{base_url}"

[[sources]]
name = "terminal"
sample = true
tasks = ["csv-revenue-by-region"]

[[sources]]
name = "tools"
path = "{sample_tools_path()}"
tasks = ["itsm-resolve-printer-incident"]

[mix]
top_n = 2
budget = 2

[rollout]
agent = "{agent}"
max_turns = 3

[trace_filters]
min_turns = {min_turns}
drop_outcomes = []

[[exports]]
format = "harbor-job"
file = "job"
""")
    loaded, raw = load_recipe(path)
    return Pipeline(loaded, raw, tmp_path / "run")


def test_a_registered_agent_runs_and_a_folder_export_is_replaced_on_rerun(tmp_path):
    with ChatServer(lambda _req: Reply("I could not find the incident.")) as srv:
        reports = {r.stage: r for r in asyncio.run(recipe(tmp_path, srv.base_url, min_turns=1).run())}
        rollout = reports["rollout"]
        assert rollout.count_out == 1
        assert rollout.reasons() == {"a 'terminal' task: the tools agent works on tools tasks": 1}
        assert any(
            r["messages"][0]["role"] == "system" and r.get("tools") for r in srv.requests
        )  # the tools agent spoke
        job = tmp_path / "run" / "exports" / "job"
        trials = [p for p in job.iterdir() if p.is_dir()]
        assert len(trials) == 1 and (job / "result.json").is_file() and (job / "config.json").is_file()
        first = json.loads((job / "result.json").read_text())

        # only the trace filter changes: the export runs again and replaces its folder (no "already exists")
        reports = {r.stage: r for r in asyncio.run(recipe(tmp_path, srv.base_url, min_turns=0).run())}
        assert reports["export-harbor-job"].count_out == 1
        again = json.loads((job / "result.json").read_text())
        assert again["id"] != first["id"] and not (job.parent / ".job.earlier").exists()


def test_an_unknown_agent_is_refused_when_the_recipe_loads(tmp_path):
    with pytest.raises(AgentmillError, match=r"rollout\.agent.*unknown agent 'claude-code' \(known: .*terminus.*tools"):
        recipe(tmp_path, "http://127.0.0.1:9/v1", 1, agent="claude-code")
