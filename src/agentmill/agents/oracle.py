"""The oracle runs the task's reference solution: the check that a task is solvable as written."""

from __future__ import annotations

from agentmill.agents.base import AgentResult
from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks.model import Task


class OracleAgent:
    name = "oracle"
    version = "1"
    needs_solution = True

    async def run(self, task: Task, sandbox: Sandbox, result: AgentResult) -> None:
        if task.solution_script is None:
            raise RuntimeError(f"{task.path}: no solution to run")
        command = f"bash /solution/{task.solution_script}"
        result.steps.append({"step_id": 1, "source": "agent", "message": "run the reference solution",
                             "tool_calls": [{"tool_call_id": "call_1", "function_name": "bash", "arguments": {"command": command}}]})
        run = await sandbox.exec(command, timeout=task.config.agent.timeout_sec, env=task.config.solution.env)
        result.steps[-1]["observation"] = {"results": [{"source_call_id": "call_1", "content": (run.stdout + run.stderr)[-10_000:]}]}
        result.metadata["solution_exit_code"] = run.returncode
        if run.timed_out:
            raise TimeoutError("the solution exceeded the agent timeout")
