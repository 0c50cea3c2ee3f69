"""Which agents get the internet: a trial's agent sandbox has a user-mode network (sandbox/internet.py:
public addresses only) when its task allows it AND the user does.

- The task: `[environment] allow_internet = true` in task.toml. A task that does not say gets none:
  Harbor's own default is network on, but an agent with the internet can look its answers up and
  fetch what it likes, and a trial whose result depends on the outside world is not reproducible;
  a task that needs the network says so (and `check` explains a solution that failed without it).
- The user: `--network task` (the default: what each task says), `--network none` (no trial gets
  a network, whatever its task says) or `--network all` (every agent gets the internet, whatever its
  task says: for task collections written for Docker's network-on default, such as legacy
  Terminal-Bench tasks, whose task.yaml cannot say), on `rollout`, `check` and `eval`, and `network`
  in a recipe's [rollout] stage.

The verifier never gets a network. The setting a trial ran with is recorded in its result
(`internet`) and is part of its identity (rollout/identity.py).
"""

from __future__ import annotations

from typing import Literal

from agentmill.tasks.model import Task

NetworkMode = Literal["task", "none", "all"]
NETWORK_MODES: tuple[str, ...] = ("task", "none", "all")
DEFAULT_NETWORK: NetworkMode = "task"


def agent_internet(mode: str, task: Task) -> bool:
    """Whether this task's agent gets the internet under the user's `mode`."""
    return internet_allowed(mode, task.config.environment.allow_internet)


def internet_allowed(mode: str, task_allows: bool) -> bool:
    """The same rule from what a task reference carries (planning loads no task)."""
    return mode == "all" or (mode == "task" and task_allows)


def check_mode(mode: str, where: str = "--network") -> NetworkMode:
    """`mode` if known, else a ValueError that names where it came from and what is allowed."""
    if mode not in NETWORK_MODES:
        raise ValueError(f"{where}: {mode!r} is not one of {', '.join(NETWORK_MODES)}")
    return mode  # type: ignore[return-value]
