"""The oracle runs the task's reference solution: the check that a task is solvable as written."""

from __future__ import annotations

from agentmill.agents.base import AgentResult, ScriptedAgentBase
from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks.behaviour import behaviour_for
from agentmill.tasks.model import Task
from agentmill.traces.atif import Observation, ObservationResult, Step, ToolCall
from agentmill.traces.redact import scrub
from agentmill.traces.text import truncate_middle


class OracleAgent(ScriptedAgentBase):
    name = "oracle"
    version = "1"
    runs_one_command = True  # on a terminal task: one solve.sh
    needs_solution = True

    async def run(self, task: Task, sandbox: Sandbox, result: AgentResult) -> None:
        solution = task.solution_script
        if solution is None:
            raise RuntimeError(f"{task.path}: no solution to run")
        if await behaviour_for(task).oracle(task, sandbox, result):  # the kind's own way (tool calls)
            return
        command = f"bash /solution/{solution}"
        # The trajectory shows the script itself, so oracle traces are demonstrations an agent
        # could have typed (agents never see /solution).
        script = _solution_text(task, solution)
        call = ToolCall(tool_call_id="call_1", function_name="bash", arguments={"command": script})
        step = Step(
            step_id=result.next_id(), source="agent", message="", tool_calls=[call], extra={"executed_as": command}
        )
        result.steps.append(step)
        run = await sandbox.exec(command, timeout=task.config.agent.timeout_sec, env=task.config.solution.env)
        output = truncate_middle(scrub(run.stdout + run.stderr)[0])  # stored redacted, cut after redaction
        step.observation = Observation(results=[ObservationResult(source_call_id="call_1", content=output)])
        result.metadata["solution_exit_code"] = run.returncode
        if run.timed_out:
            raise TimeoutError("the solution exceeded the agent timeout")


def _solution_text(task: Task, solution: str) -> str:
    for src in task.solution_sources:
        path = src / solution if src.is_dir() else src
        if path.is_file():
            return scrub(path.read_text(errors="replace"))[0]
    return f"bash /solution/{solution}"
