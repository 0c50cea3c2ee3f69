"""Hand-built trajectories with known telemetry, written as real run folders."""

from __future__ import annotations

import json
from pathlib import Path

from agentmill.traces.atif import AgentInfo, Metrics, Observation, ObservationResult, Step, ToolCall, Trajectory
from agentmill.traces.telemetry import compute_telemetry


def terminus_trajectory(turns: list[tuple[str, str]], *, reasoning: str | None = None, parse_errors: int = 0,
                        subagent: bool = False) -> Trajectory:
    """turns: (keystrokes, terminal output) per agent turn."""
    steps = [Step(step_id=1, source="system", message="You drive a terminal."),
             Step(step_id=2, source="user", message="Task: do the thing.")]
    for i, (keys, output) in enumerate(turns):
        reply = json.dumps({"analysis": f"turn {i}", "plan": "", "commands": [{"keystrokes": keys, "duration": 0.1}],
                            "task_complete": False})
        steps.append(Step(step_id=len(steps) + 1, source="agent", message=reply, reasoning_content=reasoning,
                          tool_calls=[ToolCall(tool_call_id=f"c{i}", function_name="terminal", arguments={"keystrokes": keys, "duration": 0.1})],
                          observation=Observation(results=[ObservationResult(source_call_id=f"c{i}", content=output)]),
                          metrics=Metrics(prompt_tokens=100, completion_tokens=20)))
    for j in range(parse_errors):
        steps.append(Step(step_id=len(steps) + 1, source="agent", message="not json", extra={"parse_error": "no JSON object found"},
                          observation=Observation(results=[ObservationResult(content="Your previous answer could not be used")]),
                          metrics=Metrics(prompt_tokens=100, completion_tokens=5)))
    return Trajectory(session_id="s", agent=AgentInfo(name="terminus", version="1", model_name="m"), steps=steps,
                      extra={"parent_session_id": "p"} if subagent else None).summarize()


def write_trial(run: Path, trial_id: str, trajectory: Trajectory, *, outcome: str = "passed", reward: float | None = 1.0,
                completed: bool = True, task: str = "t", task_hash: str | None = None) -> Path:
    folder = run / "trials" / trial_id
    folder.mkdir(parents=True)
    result = {"trial_id": trial_id, "task": task, "outcome": outcome, "reward": reward,
              "agent_metadata": {"terminus": {"completed": completed}}}
    trial = {"trial_id": trial_id, "task": task, "task_hash": task_hash or f"hash-{task}", "task_source": "/data/src-a",
             "verifier_hash": "v" * 8, "instruction": "Task: do the thing.", "attempt": 0, "agent": "terminus",
             "agent_version": "1", "model": "teacher-x", "sampling": {"temperature": 0.7}}
    (folder / "trial.json").write_text(json.dumps(trial))
    (folder / "result.json").write_text(json.dumps(result))
    # json.dumps escapes lone surrogates (as other tools' writers may): exports must cope
    (folder / "trajectory.json").write_text(json.dumps(trajectory.model_dump(mode="python")))
    (folder / "telemetry.json").write_text(compute_telemetry(trajectory, result).model_dump_json())
    return folder
