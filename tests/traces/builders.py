"""Hand-built trajectories with known telemetry, written as real run folders."""

from __future__ import annotations

import json
from pathlib import Path

from agentmill.traces.atif import AgentInfo, Metrics, Observation, ObservationResult, Step, ToolCall, Trajectory
from agentmill.traces.telemetry import compute_telemetry


def terminus_trajectory(
    turns: list[tuple[str, str]], *, reasoning: str | None = None, parse_errors: int = 0, subagent: bool = False
) -> Trajectory:
    """turns: (keystrokes, terminal output) per agent turn."""
    steps = [
        Step(step_id=1, source="system", message="You drive a terminal."),
        Step(step_id=2, source="user", message="Task: do the thing."),
    ]
    for i, (keys, output) in enumerate(turns):
        reply = json.dumps(
            {
                "analysis": f"turn {i}",
                "plan": "",
                "commands": [{"keystrokes": keys, "duration": 0.1}],
                "task_complete": False,
            }
        )
        steps.append(
            Step(
                step_id=len(steps) + 1,
                source="agent",
                message=reply,
                reasoning_content=reasoning,
                tool_calls=[
                    ToolCall(
                        tool_call_id=f"c{i}", function_name="terminal", arguments={"keystrokes": keys, "duration": 0.1}
                    )
                ],
                observation=Observation(results=[ObservationResult(source_call_id=f"c{i}", content=output)]),
                metrics=Metrics(prompt_tokens=100, completion_tokens=20),
            )
        )
    for j in range(parse_errors):
        steps.append(
            Step(
                step_id=len(steps) + 1,
                source="agent",
                message="not json",
                extra={"parse_error": "no JSON object found"},
                observation=Observation(results=[ObservationResult(content="Your previous answer could not be used")]),
                metrics=Metrics(prompt_tokens=100, completion_tokens=5),
            )
        )
    return Trajectory(
        session_id="s",
        agent=AgentInfo(name="terminus", version="1", model_name="m"),
        steps=steps,
        extra={"parent_session_id": "p"} if subagent else None,
    ).summarize()


def write_trial(
    run: Path,
    trial_id: str,
    trajectory: Trajectory,
    *,
    outcome: str = "passed",
    reward: float | None = 1.0,
    completed: bool = True,
    task: str = "t",
    task_hash: str | None = None,
) -> Path:
    folder = run / "trials" / trial_id
    folder.mkdir(parents=True)
    result = {
        "trial_id": trial_id,
        "task": task,
        "outcome": outcome,
        "reward": reward,
        "agent_metadata": {"terminus": {"completed": completed}},
    }
    trial = {
        "trial_id": trial_id,
        "task": task,
        "task_hash": task_hash or f"hash-{task}",
        "task_source": "/data/src-a",
        "verifier_hash": "v" * 8,
        "instruction": "Task: do the thing.",
        "attempt": 0,
        "agent": "terminus",
        "agent_version": "1",
        "model": "teacher-x",
        "sampling": {"temperature": 0.7},
    }
    (folder / "trial.json").write_text(json.dumps(trial))
    (folder / "result.json").write_text(json.dumps(result))
    # json.dumps escapes lone surrogates (as other tools' writers may): exports must cope
    (folder / "trajectory.json").write_text(json.dumps(trajectory.model_dump(mode="python")))
    (folder / "telemetry.json").write_text(compute_telemetry(trajectory, result).model_dump_json())
    return folder


# Text that exercises every cleaning and redaction path: secrets of several kinds, control bytes, escape
# sequences, lone surrogates, non-ASCII letters that regex case folding maps to ASCII, shell prompts.
NASTY = [
    "AKIAIOSFODNN7EXAMPLE",
    "export OPENAI_API_KEY=abcd1234efgh",
    "postgres://admin:hunter22@db:5432/x",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabcdefghABCD==\n-----END RSA PRIVATE KEY-----",
    "Authorization: Bearer abcDEF123456ghiJKL.789",
    "ghp_" + "a1B2c3D4e5" * 4,
    "\x1b[31mred\x1b[0m\x07",
    "bad\x00byte\x9f",
    "half \ud800 surrogate",
    "AUTHOR\u0130ZATION: Bearer abcDEF123456ghiJKL",
    "caf\u00e9 \u65e5\u672c",
    "root@box:/app# ",
    "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "[REDACTED:env_secret]",
    "KEY=$TOKEN",
]


def varied_trajectory(i: int, rng, nasty: list[str] = NASTY) -> Trajectory:
    """Trajectory `i` of a varied run: terminus and tool-calling agents, known and unknown; most texts
    plain (as in real runs), some with a NASTY text planted in an output, a reply, reasoning or arguments."""

    def text(base: str) -> str:
        return base + (" " + rng.choice(nasty) if rng.random() < 0.08 else "")

    kind = i % 5
    turns = rng.randint(1, 9)
    if kind in (0, 1, 2):
        steps = [
            (
                text(f"cd /app && grep -n 'item {i}-{t}' data.csv | head\n"),
                text("\n".join(f"{k}: row {i},{t},{k},value-{k * t}" for k in range(rng.randint(0, 6)))),
            )
            for t in range(turns)
        ]
        traj = terminus_trajectory(
            steps,
            reasoning=text(f"Checking step {i}.") if kind != 2 else None,
            parse_errors=rng.randint(0, 1),
            subagent=rng.random() < 0.05,
        )
        if rng.random() < 0.2:
            traj.steps[1].message = text("Task: fix the totals.")
        return traj
    tools = [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "description": "Run it.",
                "parameters": {
                    "type": "object",
                    "properties": {"command": {"type": "string"}, "timeout": {"type": "number", "minimum": 0.1}},
                },
            },
        }
    ]
    steps = [
        Step(step_id=1, source="system", message="You call tools.", extra={"tools": tools} if kind == 3 else None),
        Step(step_id=2, source="user", message=text("Fix the bug.")),
    ]
    for t in range(turns):
        calls = [
            ToolCall(
                tool_call_id=f"c{t}-{k}",
                function_name="bash" if k == 0 else "read_file",
                arguments={"command": text(f"cat f{t}.py"), "n": k * 0.5},
                extra={"arguments_text": text(f'{{"command": "cat f{t}.py", "n": {k}}}')}
                if rng.random() < 0.5
                else None,
            )
            for k in range(rng.randint(0, 2))
        ]
        results = [
            ObservationResult(source_call_id=c.tool_call_id, content=text(f"print({t})"))
            for c in calls
            if rng.random() < 0.9
        ]
        steps.append(
            Step(
                step_id=len(steps) + 1,
                source="agent",
                message=text(f"Step {t}."),
                reasoning_content=text("Hmm.") if rng.random() < 0.5 else None,
                tool_calls=calls or None,
                observation=Observation(results=results) if results else None,
                metrics=Metrics(prompt_tokens=10, completion_tokens=3),
            )
        )
    steps.append(Step(step_id=len(steps) + 1, source="agent", message=text("Done.")))
    agent = AgentInfo(name="tools" if kind == 3 else "toolbot", version="1", model_name="m")
    return Trajectory(session_id=f"s{i}", agent=agent, steps=steps).summarize()


def write_varied_run(run: Path, n: int, *, seed: int = 0, nasty: list[str] = NASTY) -> None:
    """A run folder of `n` varied trials (outcomes, rewards, tasks, agents; see varied_trajectory), one
    whose trajectory is not JSON and one without telemetry.json, for exports to be compared on."""
    import random

    rng = random.Random(seed)
    outcomes = [
        ("passed", 1.0),
        ("failed", 0.0),
        ("passed", 1.0),
        ("agent_timeout", 0.0),
        ("agent_error", None),
        ("failed", 0.5),
        ("verifier_error", None),
    ]
    for i in range(n):
        outcome, reward = outcomes[i % len(outcomes)]
        write_trial(
            run,
            f"v{i:05d}",
            varied_trajectory(i, rng, nasty),
            outcome=outcome,
            reward=reward,
            task=f"task{i % 13}",
            completed=rng.random() < 0.7,
        )
    (write_trial(run, "broken", terminus_trajectory([("ls\n", "a")])) / "trajectory.json").write_text("{not json")
    (write_trial(run, "no-telemetry", terminus_trajectory([("ls\n", "a")] * 6)) / "telemetry.json").unlink()
