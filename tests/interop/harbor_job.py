"""Harbor job folders written field by field as Harbor lays them out (job config/result, trial
config/result, agent/trajectory.json in ATIF, verifier output and reward files), for the importer's tests."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

JOB_ID = "0f5d1e7c-3b7a-4a56-9a43-3f0a0c8e2b11"


def atif(task: str, turns: int = 2, *, extra_fields: bool = False) -> dict:
    """A Terminus-2 style ATIF v1.4 trajectory: system, user, then `turns` agent steps with a tool call each."""
    steps = [
        {
            "step_id": 1,
            "timestamp": "2026-05-01T10:00:00.000Z",
            "source": "system",
            "message": "You are an agent in a terminal.",
        },
        {"step_id": 2, "timestamp": "2026-05-01T10:00:00.100Z", "source": "user", "message": f"Solve {task}."},
    ]
    for i in range(turns):
        step = {
            "step_id": len(steps) + 1,
            "timestamp": f"2026-05-01T10:00:0{i + 1}.000Z",
            "source": "agent",
            "model_name": "openai/teacher",
            "message": json.dumps(
                {
                    "analysis": f"turn {i}",
                    "plan": "run it",
                    "commands": [{"keystrokes": f"echo {i}\n", "duration": 0.1}],
                    "task_complete": i == turns - 1,
                }
            ),
            "reasoning_content": f"thinking {i}",
            "tool_calls": [
                {
                    "tool_call_id": f"call_{i}",
                    "function_name": "bash_command",
                    "arguments": {"keystrokes": f"echo {i}\n"},
                }
            ],
            "observation": {"results": [{"source_call_id": f"call_{i}", "content": f"$ echo {i}\n{i}\n"}]},
            "metrics": {"prompt_tokens": 100 + i, "completion_tokens": 20, "cached_tokens": 10},
        }
        if extra_fields:  # fields of later ATIF versions that agentmill does not model
            step["is_copied_context"] = False
            step["metrics"]["logprobs"] = [-0.1, -0.2]
        steps.append(step)
    doc = {
        "schema_version": "ATIF-v1.4",
        "session_id": f"session-{task}",
        "agent": {"name": "terminus-2", "version": "2.0.0", "model_name": "openai/teacher"},
        "steps": steps,
        "final_metrics": {
            "total_prompt_tokens": 201,
            "total_completion_tokens": 40,
            "total_cached_tokens": 20,
            "total_steps": len(steps),
        },
    }
    if extra_fields:
        doc["continued_trajectory_ref"] = None
        doc["agent"]["extra"] = {"parser": "json"}
    return doc


def _environment() -> dict:
    return {
        "type": "docker",
        "import_path": None,
        "force_build": False,
        "delete": True,
        "stream": False,
        "cpu_enforcement_policy": "auto",
        "memory_enforcement_policy": "auto",
        "override_cpus": None,
        "override_memory_mb": None,
        "override_storage_mb": None,
        "override_gpus": None,
        "override_tpu": None,
        "mounts": None,
        "extra_docker_compose": [],
        "kwargs": {},
        "extra_allowed_hosts": [],
    }


AGENT = {
    "name": "terminus-2",
    "import_path": None,
    "model_name": "openai/teacher",
    "base_url": None,
    "model_api_key_name": None,
    "model_api_format": None,
    "skip_model_parsing": False,
    "n_concurrent": None,
    "concurrency_group": None,
    "skills": [],
    "override_timeout_sec": None,
    "override_setup_timeout_sec": None,
    "max_timeout_sec": None,
    "resume_trajectory": False,
    "load_trajectory": None,
    "extra_allowed_hosts": [],
    "kwargs": {},
    "mcp_servers": [],
}
RETRY = {
    "max_retries": 0,
    "include_exceptions": None,
    "exclude_exceptions": ["AgentTimeoutError", "CancelledError"],
    "wait_multiplier": 1.0,
    "min_wait_sec": 1.0,
    "max_wait_sec": 60.0,
}
VERIFIER = {"override_timeout_sec": None, "max_timeout_sec": None, "disable": False}
# the error policy Harbor writes for the exception types these fixtures use (harbor: models/trial/error_policy.py)
POLICY = {
    "AgentTimeoutError": (False, True, True),
    "ContextLengthExceededError": (False, True, True),
    "VerifierTimeoutError": (False, True, False),
    "RewardFileNotFoundError": (False, True, False),
    "RateLimitError": (True, True, False),
    "CancelledError": (False, False, False),
}


def write_job(root: Path, trials: list[dict], *, stats: dict | None = None, legacy_stats: bool = False) -> Path:
    """trials: dicts with task, name, and optionally reward (float), rewards (dict), exception (type), trajectory (dict or None),
    stdout. `stats`: the job's result.json stats (default: the progress counters, no evals); `legacy_stats`: the
    n_trials/n_errors names of Harbor's older releases. Returns the job folder, laid out as Harbor 0.26 writes it."""
    job = root / "2026-05-01__10-00-00"
    job.mkdir(parents=True)
    (job / "config.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "job_name": job.name,
                "jobs_dir": "jobs",
                "n_attempts": 1,
                "install_only": False,
                "skip_credential_checks": False,
                "timeout_multiplier": 1.0,
                "agent_timeout_multiplier": None,
                "verifier_timeout_multiplier": None,
                "agent_setup_timeout_multiplier": None,
                "environment_build_timeout_multiplier": None,
                "debug": False,
                "n_concurrent_trials": 4,
                "quiet": False,
                "retry": RETRY,
                "override_error_policy": {},
                "environment": _environment(),
                "verifier": VERIFIER,
                "metrics": [],
                "agents": [AGENT],
                "user_agent": None,
                "datasets": [
                    {
                        "path": "datasets/demo",
                        "name": None,
                        "version": None,
                        "ref": None,
                        "registry_url": None,
                        "registry_path": None,
                        "repo": None,
                        "overwrite": False,
                        "download_dir": None,
                        "task_names": None,
                        "exclude_task_names": None,
                        "n_tasks": None,
                    }
                ],
                "tasks": [],
                "artifacts": [],
                "extra_instruction_paths": [],
                "extra_instructions": [],
                "source_jobs": [],
            },
            indent=4,
        )
    )
    folders = [write_trial(job, **t) for t in trials]
    locks = [json.loads((f / "lock.json").read_text()) for f in folders if (f / "lock.json").exists()]
    (job / "lock.json").write_text(
        json.dumps(
            {
                "schema_version": 3,
                "created_at": "2026-05-01T10:00:00Z",
                "harbor": {"version": "0.26.0", "is_editable": False},
                "n_concurrent_trials": 4,
                "retry": {k: v for k, v in RETRY.items() if v is not None},
                "trials": locks,
            },
            indent=4,
        )
    )
    errored = sum(1 for t in trials if t.get("exception"))
    if stats is None:
        stats = {
            "n_completed_trials": len(trials),
            "n_errored_trials": errored,
            "n_running_trials": 0,
            "n_pending_trials": 0,
            "n_cancelled_trials": 0,
            "n_retries": 0,
            "evals": {},
            "n_input_tokens": None,
            "n_cache_tokens": None,
            "n_output_tokens": None,
            "cost_usd": None,
        }
    if legacy_stats:
        stats = {"n_trials": len(trials), "n_errors": errored, "evals": {}}
    (job / "result.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "id": JOB_ID,
                "started_at": "2026-05-01T10:00:00",
                "updated_at": "2026-05-01T10:05:00",
                "finished_at": "2026-05-01T10:05:00",
                "n_total_trials": len(trials),
                "stats": stats,
            },
            indent=4,
        )
    )
    return job


def write_trial(
    job: Path,
    *,
    task: str,
    name: str,
    reward: float | None = None,
    rewards: dict | None = None,
    exception: str | None = None,
    trajectory: dict | None | bool = True,
    stdout: str = "tests ran\n",
    started: str = "2026-05-01T10:00:00.000000",
    metadata: dict | None = None,
    lock: bool = True,
    steps: list[dict] | None = None,
    future_field: bool = True,
) -> Path:
    """One trial folder as Harbor writes it (lock.json too, unless `lock` is false); returns the folder.
    `steps`: a multi-step trial's step_results (its tokens and failures then sit on the steps)."""
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
    task_config = {
        "path": f"datasets/demo/{task}",
        "git_url": None,
        "git_commit_id": None,
        "name": None,
        "ref": None,
        "overwrite": False,
        "download_dir": None,
        "source": "demo",
    }
    config = {
        "schema_version": 1,
        "task": task_config,
        "trial_name": name,
        "trials_dir": str(job),
        "install_only": False,
        "timeout_multiplier": 1.0,
        "agent_timeout_multiplier": None,
        "verifier_timeout_multiplier": None,
        "agent_setup_timeout_multiplier": None,
        "environment_build_timeout_multiplier": None,
        "agent": AGENT,
        "user_agent": None,
        "environment": _environment(),
        "verifier": VERIFIER,
        "override_error_policy": {},
        "artifacts": [],
        "extra_instruction_paths": [],
        "extra_instructions": [],
        "job_id": JOB_ID,
        "source_trial": None,
    }
    (folder / "config.json").write_text(json.dumps(config, indent=4))
    digest = "sha256:" + hashlib.sha256(task.encode()).hexdigest()
    trial_lock = {
        "schema_version": 2,
        "task": {"name": task, "type": "local", "digest": digest, "source": "demo", "path": f"datasets/demo/{task}"},
        "install_only": False,
        "timeout_multiplier": 1.0,
        "agent": {k: v for k, v in AGENT.items() if v is not None},
        "bridge_inputs": {},
        "skills": [],
        "environment": {k: v for k, v in _environment().items() if v is not None},
        "verifier": {"disable": False, "environment_mode": "shared"},
        "artifacts": [],
        "override_error_policy": {},
    }
    if lock:
        (folder / "lock.json").write_text(json.dumps(trial_lock, indent=4))
    exc = None
    if exception:
        retry, grade, valid = POLICY.get(exception, (True, True, True))
        exc = {
            "exception_type": exception,
            "exception_message": f"{exception} happened",
            "exception_traceback": "Traceback ...",
            "occurred_at": "2026-05-01T10:00:30",
            "policy": {"should_retry": retry, "should_grade": grade, "has_valid_reward": valid},
        }
        (folder / "exception.txt").write_text(f"{exception}: happened\n")
    phase = lambda a, b: {"started_at": f"2026-05-01T10:00:{a:02d}", "finished_at": f"2026-05-01T10:00:{b:02d}"}  # noqa: E731
    valid = bool(rewards) and (exc is None or exc["policy"]["has_valid_reward"])
    agent_result = {
        "n_input_tokens": 201,
        "n_cache_tokens": 20,
        "n_output_tokens": 40,
        "cost_usd": 0.0012,
        "model_usage": {
            "openai/teacher": {"n_input_tokens": 201, "n_cache_tokens": 20, "n_output_tokens": 40, "cost_usd": 0.0012}
        },
        "rollout_details": None,
        "metadata": metadata,
    }
    result = {
        "schema_version": 1,
        "id": str(uuid.uuid5(uuid.UUID(JOB_ID), name)),
        "task_name": task,
        "trial_name": name,
        "trial_uri": f"file:///jobs/{job.name}/{name}",
        "task_id": {"path": f"datasets/demo/{task}"},
        "source": "demo",
        "task_checksum": f"checksum-{task}",
        "config": config,
        "agent_info": {
            "name": "terminus-2",
            "version": "2.0.0",
            "model_info": {"name": "teacher", "provider": "openai"},
        },
        "agent_result": None if steps else agent_result,
        "verifier_result": {"rewards": rewards} if rewards is not None else None,
        "verifier_environment_mode": "shared",
        "exception_info": None if steps else exc,
        "started_at": started,
        "finished_at": "2026-05-01T10:00:40",
        "environment_setup": phase(0, 5),
        "agent_setup": phase(5, 7),
        "agent_execution": phase(7, 30),
        "verifier": phase(30, 40),
        "step_results": steps,
        "reward_valid": valid,
    }
    if future_field:  # later Harbor releases add fields: readers must not choke
        result["newer_harbor_field"] = {"ignored": True}
    (folder / "result.json").write_text(json.dumps(result, indent=4))
    return folder
