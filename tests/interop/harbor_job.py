"""Harbor job folders written field by field as Harbor lays them out (job config/result, trial
config/result, agent/trajectory.json in ATIF, verifier output and reward files), for the importer's tests."""

from __future__ import annotations

import json
from pathlib import Path

JOB_ID = "0f5d1e7c-3b7a-4a56-9a43-3f0a0c8e2b11"


def atif(task: str, turns: int = 2, *, extra_fields: bool = False) -> dict:
    """A Terminus-2 style ATIF v1.4 trajectory: system, user, then `turns` agent steps with a tool call each."""
    steps = [{"step_id": 1, "timestamp": "2026-05-01T10:00:00.000Z", "source": "system", "message": "You are an agent in a terminal."},
             {"step_id": 2, "timestamp": "2026-05-01T10:00:00.100Z", "source": "user", "message": f"Solve {task}."}]
    for i in range(turns):
        step = {"step_id": len(steps) + 1, "timestamp": f"2026-05-01T10:00:0{i + 1}.000Z", "source": "agent", "model_name": "openai/teacher",
                "message": json.dumps({"analysis": f"turn {i}", "plan": "run it", "commands": [{"keystrokes": f"echo {i}\n", "duration": 0.1}],
                                       "task_complete": i == turns - 1}),
                "reasoning_content": f"thinking {i}",
                "tool_calls": [{"tool_call_id": f"call_{i}", "function_name": "bash_command", "arguments": {"keystrokes": f"echo {i}\n"}}],
                "observation": {"results": [{"source_call_id": f"call_{i}", "content": f"$ echo {i}\n{i}\n"}]},
                "metrics": {"prompt_tokens": 100 + i, "completion_tokens": 20, "cached_tokens": 10}}
        if extra_fields:  # fields of later ATIF versions that agentmill does not model
            step["is_copied_context"] = False
            step["metrics"]["logprobs"] = [-0.1, -0.2]
        steps.append(step)
    doc = {"schema_version": "ATIF-v1.4", "session_id": f"session-{task}", "agent": {"name": "terminus-2", "version": "2.0.0", "model_name": "openai/teacher"},
           "steps": steps, "final_metrics": {"total_prompt_tokens": 201, "total_completion_tokens": 40, "total_cached_tokens": 20, "total_steps": len(steps)}}
    if extra_fields:
        doc["continued_trajectory_ref"] = None
        doc["agent"]["extra"] = {"parser": "json"}
    return doc


def write_job(root: Path, trials: list[dict]) -> Path:
    """trials: dicts with task, name, and optionally reward (float), rewards (dict), exception (type), trajectory (dict or None),
    stdout. Returns the job folder."""
    job = root / "2026-05-01__10-00-00"
    job.mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({
        "job_name": job.name, "jobs_dir": "jobs", "n_attempts": 1, "timeout_multiplier": 1.0, "debug": False,
        "orchestrator": {"type": "local", "n_concurrent_trials": 4}, "environment": {"type": "docker", "force_build": False, "delete": True},
        "verifier": {"disable": False}, "metrics": [], "agents": [{"name": "terminus-2", "model_name": "openai/teacher"}],
        "datasets": [{"path": "datasets/demo"}], "tasks": []}, indent=2))
    for t in trials:
        write_trial(job, **t)
    (job / "result.json").write_text(json.dumps({
        "id": JOB_ID, "started_at": "2026-05-01T10:00:00", "finished_at": "2026-05-01T10:05:00", "n_total_trials": len(trials),
        "stats": {"n_trials": len(trials), "n_errors": 0, "evals": {}}}, indent=2))
    return job


def write_trial(job: Path, *, task: str, name: str, reward: float | None = None, rewards: dict | None = None,
                exception: str | None = None, trajectory: dict | None | bool = True, stdout: str = "tests ran\n",
                started: str = "2026-05-01T10:00:00.000000", metadata: dict | None = None) -> Path:
    folder = job / name
    (folder / "agent").mkdir(parents=True)
    (folder / "verifier").mkdir()
    if rewards is None and reward is not None:
        rewards = {"reward": reward}
    if rewards is not None:
        if set(rewards) == {"reward"}:
            (folder / "verifier" / "reward.txt").write_text(f"{rewards['reward']}\n")
        else:
            (folder / "verifier" / "reward.json").write_text(json.dumps(rewards))
    (folder / "verifier" / "test-stdout.txt").write_text(stdout)
    (folder / "verifier" / "test-stderr.txt").write_text("")
    if trajectory is True:
        trajectory = atif(task)
    if trajectory:
        (folder / "agent" / "trajectory.json").write_text(json.dumps(trajectory, indent=2))
    config = {"task": {"path": f"datasets/demo/{task}", "git_url": None, "git_commit_id": None, "overwrite": False, "download_dir": None, "source": "demo"},
              "trial_name": name, "trials_dir": str(job), "timeout_multiplier": 1.0,
              "agent": {"name": "terminus-2", "import_path": None, "model_name": "openai/teacher", "kwargs": {}},
              "environment": {"type": "docker", "force_build": False, "delete": True}, "verifier": {"disable": False},
              "job_id": JOB_ID}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    exc = None
    if exception:
        exc = {"exception_type": exception, "exception_message": f"{exception} happened", "exception_traceback": "Traceback ...",
               "occurred_at": "2026-05-01T10:00:30"}
        (folder / "exception.txt").write_text(f"{exception}: happened\n")
    phase = lambda a, b: {"started_at": f"2026-05-01T10:00:{a:02d}", "finished_at": f"2026-05-01T10:00:{b:02d}"}  # noqa: E731
    result = {
        "id": f"{abs(hash(name)) % 10**8:08d}-0000-4000-8000-000000000000", "task_name": task, "trial_name": name,
        "trial_uri": f"file:///jobs/{job.name}/{name}", "task_id": {"path": f"datasets/demo/{task}"}, "source": "demo",
        "task_checksum": f"checksum-{task}", "config": config,
        "agent_info": {"name": "terminus-2", "version": "2.0.0", "model_info": {"name": "teacher", "provider": "openai"}},
        "agent_result": {"n_input_tokens": 201, "n_cache_tokens": 20, "n_output_tokens": 40, "cost_usd": 0.0012,
                         "rollout_details": None, "metadata": metadata},
        "verifier_result": {"rewards": rewards} if rewards is not None else None,
        "exception_info": exc, "started_at": started, "finished_at": "2026-05-01T10:00:40",
        "environment_setup": phase(0, 5), "agent_setup": phase(5, 7), "agent_execution": phase(7, 30), "verifier": phase(30, 40),
        "newer_harbor_field": {"ignored": True},  # later Harbor releases add fields: readers must not choke
    }
    (folder / "result.json").write_text(json.dumps(result, indent=2))
    return folder
