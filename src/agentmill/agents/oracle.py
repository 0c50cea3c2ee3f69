"""The oracle runs the task's reference solution: the check that a task is solvable as written."""

from __future__ import annotations

from agentmill.agents.base import AgentResult, ScriptedAgentBase
from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks.model import Task
from agentmill.traces.atif import Observation, ObservationResult, Step, ToolCall
from agentmill.traces.text import clean_text, truncate_middle


class OracleAgent(ScriptedAgentBase):
    name = "oracle"
    version = "1"
    needs_solution = True

    async def run(self, task: Task, sandbox: Sandbox, result: AgentResult) -> None:
        if task.solution_script is None:
            raise RuntimeError(f"{task.path}: no solution to run")
        command = f"bash /solution/{task.solution_script}"
        call = ToolCall(tool_call_id="call_1", function_name="bash", arguments={"command": command})
        step = Step(step_id=result.next_id(), source="agent", message="Run the reference solution.", tool_calls=[call])
        result.steps.append(step)
        run = await sandbox.exec(command, timeout=task.config.agent.timeout_sec, env=task.config.solution.env)
        output = truncate_middle(clean_text(run.stdout + run.stderr))
        step.observation = Observation(results=[ObservationResult(source_call_id="call_1", content=output)])
        result.metadata["solution_exit_code"] = run.returncode
        if run.timed_out:
            raise TimeoutError("the solution exceeded the agent timeout")
