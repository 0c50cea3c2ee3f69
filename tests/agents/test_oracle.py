"""The oracle's trajectory is stored like a model's: secrets in its script or output redacted."""

import asyncio

from agentmill.agents import OracleAgent
from agentmill.agents.base import AgentResult
from agentmill.images import ImageBuilder
from agentmill.rollout import run_trial
from agentmill.tasks import load_task
from agentmill.verify import Outcome
from tests.conftest import sandbox, scratch_cache, simple_task

pytestmark = sandbox


def test_secrets_in_the_solution_and_its_output_are_redacted(tmp_path):
    solve = 'echo hello > /app/out.txt\nexport OPENAI_API_KEY=abcd1234efgh\necho "AKIA""IOSFODNN7EXAMPLE"\n'
    task = load_task(simple_task(tmp_path, solve_sh=solve))
    result = AgentResult()
    trial = asyncio.run(
        run_trial(task, OracleAgent(), ImageBuilder(cache=scratch_cache(tmp_path)), agent_result=result)
    )
    assert trial.outcome is Outcome.PASSED
    (step,) = [s for s in result.steps if s.source == "agent"]
    script = step.tool_calls[0].arguments["command"]
    assert "OPENAI_API_KEY=[REDACTED:env_secret]" in script and "abcd1234efgh" not in script
    output = step.observation.results[0].content
    assert "[REDACTED:aws_access_key]" in output and "AKIAIOSFODNN7EXAMPLE" not in output
