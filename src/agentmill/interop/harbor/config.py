"""The config and lock records of a Harbor job folder, as `export --format harbor-job` writes them.

Field by field what Harbor's models dump (harbor: models/job/config.py JobConfig, RetryConfig, DatasetConfig;
models/trial/config.py TrialConfig, TaskConfig, AgentConfig, EnvironmentConfig, VerifierConfig;
models/job/lock.py JobLock, TrialLock, TaskLock), with the values of an agentmill run: the trials ran in
agentmill's bubblewrap sandbox, named by `import_path` (Harbor's environment `type` is one of its own backends,
none of which ran them), and nothing was retried or overridden. Fields Harbor leaves out when empty
(`env`, `include_logs`, ...) are left out here too; locks are written without their None fields, as Harbor does.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

# Harbor's environment config names a custom backend by "module:Class"
SANDBOX_IMPORT_PATH = "agentmill.sandbox.bwrap:BwrapSandbox"
N_CONCURRENT_TRIALS = 4  # Harbor's default: agentmill's run config is not carried into the job

RETRY = {
    "max_retries": 0,
    "include_exceptions": None,
    "exclude_exceptions": None,
    "wait_multiplier": 1.0,
    "min_wait_sec": 1.0,
    "max_wait_sec": 60.0,
}
VERIFIER = {"override_timeout_sec": None, "max_timeout_sec": None, "disable": False}
# agentmill verifies every trial in a fresh sandbox, apart from the agent's (Harbor's "separate" mode)
VERIFIER_ENVIRONMENT_MODE = "separate"


def environment_config(ran_in: dict | None = None) -> dict[str, Any]:
    """Where the trial ran: agentmill's sandbox, or (a trial imported from Harbor) the backend Harbor named."""
    ran_in = ran_in if isinstance(ran_in, dict) and (ran_in.get("type") or ran_in.get("import_path")) else None
    kind, path = (ran_in.get("type"), ran_in.get("import_path")) if ran_in else (None, SANDBOX_IMPORT_PATH)
    return {
        "type": kind,
        "import_path": path,
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


def agent_config(name: str | None, model: str | None) -> dict[str, Any]:
    return {
        "name": name,
        "import_path": None,
        "model_name": model,
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


def dataset_config(path: str) -> dict[str, Any]:
    """A local dataset folder (Harbor: a `path`, or a registry `name`, never both)."""
    return {
        "path": path,
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


def task_config(path: str, source: str | None) -> dict[str, Any]:
    """A local task (Harbor: a `path`, or a package `name`, never both)."""
    return {
        "path": path,
        "git_url": None,
        "git_commit_id": None,
        "name": None,
        "ref": None,
        "overwrite": False,
        "download_dir": None,
        "source": source,
    }


def trial_config(
    *, task: dict, trial_name: str, trials_dir: str, agent: dict, job_id: str, environment: dict | None = None
) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "task": task,
        "trial_name": trial_name,
        "trials_dir": trials_dir,
        "install_only": False,
        "timeout_multiplier": 1.0,
        "agent_timeout_multiplier": None,
        "verifier_timeout_multiplier": None,
        "agent_setup_timeout_multiplier": None,
        "environment_build_timeout_multiplier": None,
        "agent": agent,
        "user_agent": None,
        "environment": environment or environment_config(),
        "verifier": dict(VERIFIER),
        "override_error_policy": {},
        "artifacts": [],
        "extra_instruction_paths": [],
        "extra_instructions": [],
        "job_id": job_id,
        "source_trial": None,
    }


def job_config(
    *,
    job_name: str,
    jobs_dir: str,
    n_attempts: int,
    agents: list[dict],
    datasets: list[dict],
    tasks: list[dict],
    environment: dict | None = None,
) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "job_name": job_name,
        "jobs_dir": jobs_dir,
        "n_attempts": n_attempts,
        "install_only": False,
        "skip_credential_checks": False,
        "timeout_multiplier": 1.0,
        "agent_timeout_multiplier": None,
        "verifier_timeout_multiplier": None,
        "agent_setup_timeout_multiplier": None,
        "environment_build_timeout_multiplier": None,
        "debug": False,
        "n_concurrent_trials": N_CONCURRENT_TRIALS,
        "quiet": False,
        "retry": dict(RETRY),
        "override_error_policy": {},
        "environment": environment or environment_config(),
        "verifier": dict(VERIFIER),
        "metrics": [],
        "agents": agents,
        "user_agent": None,
        "datasets": datasets,
        "tasks": tasks,
        "artifacts": [],
        "extra_instruction_paths": [],
        "extra_instructions": [],
        "source_jobs": [],
    }


def task_digest(task_hash: str | None, task_name: str) -> str:
    """Harbor's `sha256:<64 hex>` task digest. agentmill's task hash is a sha256 over the task folder (its own
    recipe, not Harbor's packager's, so the two tools give one task different digests); any other hash a run
    carries (an imported trial's checksum) is hashed again into that form."""
    if task_hash and re.fullmatch(r"[0-9a-f]{64}", task_hash):
        return f"sha256:{task_hash}"
    return "sha256:" + hashlib.sha256((task_hash or f"task:{task_name}").encode()).hexdigest()


def trial_lock(
    config: dict, *, task_name: str, digest: str, verifier_mode: str = VERIFIER_ENVIRONMENT_MODE
) -> dict[str, Any]:
    """A trial's lock.json (TrialLock, schema 2): its resolved inputs, from its config."""
    task = config["task"]
    lock = {
        "schema_version": 2,
        "task": {"name": task_name, "type": "local", "digest": digest, "source": task["source"], "path": task["path"]},
        "install_only": config["install_only"],
        "timeout_multiplier": config["timeout_multiplier"],
        "agent": config["agent"],
        "bridge_inputs": {},
        "skills": [],
        "environment": config["environment"],
        "verifier": {**config["verifier"], "environment_mode": verifier_mode},
        "artifacts": config["artifacts"],
        "override_error_policy": config["override_error_policy"],
    }
    return without_none(lock)


def job_lock_head(created_at: str) -> dict[str, Any]:
    """The job's lock.json (JobLock, schema 3) less its `trials`, which are written one by one. `harbor` records
    the Harbor release that ran the job: none did."""
    return without_none(
        {
            "schema_version": 3,
            "created_at": created_at,
            "harbor": {},
            "n_concurrent_trials": N_CONCURRENT_TRIALS,
            "retry": dict(RETRY),
        }
    )


def without_none(value: Any) -> Any:
    """What pydantic's `exclude_none` leaves of a dump: no None-valued field at any depth."""
    if isinstance(value, dict):
        return {k: without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_none(v) for v in value]
    return value
