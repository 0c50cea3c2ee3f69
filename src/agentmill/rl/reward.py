"""The verifier's reward for a policy's completion, for the trainers people use.

- verl: `compute_score(data_source, solution_str, ground_truth, extra_info=None, **reward_kwargs)`,
  the signature of verl's `custom_reward_function` (its `reward_kwargs` config reaches it as keyword
  arguments: `tasks`, `tamper_penalty`, `return_dict`). `ground_truth` is the task's content hash.
- TRL GRPO: `GRPOReward(tasks=...)` is a reward function `(prompts, completions, **columns) ->
  list[float]`; the row's `reward_model` / `extra_info` columns arrive as keyword lists.

Each completion runs as one episode (rl/episode.py) in a fresh sandbox on the task resolved by
hash (rl/resolve.py), and scores what the task's verifier says. Tampering with the verifier
already scores 0; `tamper_penalty=P` scores it -P instead, so the policy learns it is worse than
failing. Episodes that end in a sandbox, verifier or task error, or `unjudged` (a judged check with no judge), score `error_reward` (at most 0:
the policy can end its own episode that way, e.g. by killing every process in its sandbox).
"""

from __future__ import annotations

import asyncio
import math
import threading
import warnings
import weakref
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentmill.errors import AgentmillError
from agentmill.images import ImageBuilder
from agentmill.rl.episode import Episode, run_episode
from agentmill.rl.policy import scripted, turns_from_completion
from agentmill.rl.resolve import TaskNotFound, shared_resolver
from agentmill.rollout.network import DEFAULT_NETWORK, NetworkMode
from agentmill.rollout.runner import require_toolkit
from agentmill.verify.outcome import Outcome

# not the policy's doing: the sandbox, the verifier, the endpoint, a broken task, or a judged check that
# never ran (unjudged: its reward is unknown, so it must never pay what a pass pays)
HARNESS_FAULTS = {
    Outcome.SANDBOX_ERROR,
    Outcome.VERIFIER_ERROR,
    Outcome.VERIFIER_TIMEOUT,
    Outcome.INFRA_ERROR,
    Outcome.TASK_ERROR,
    Outcome.UNJUDGED,
}


NOT_FOUND = "task_not_found"  # a batch item whose task is in none of the folders (score NaN: left out)


class RewardSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tasks: list[Path] = Field(default_factory=list)  # folders to find tasks in (else $AGENTMILL_RL_TASKS)
    tamper_penalty: float | None = Field(None, ge=0)  # None: tampering scores 0, like any failure
    # sandbox / verifier / task failures. Never above a failure's 0: a policy can cause a sandbox error
    # itself (were an agent-caused death ever typed as the machinery's, it must not pay more than failing)
    error_reward: float = Field(0.0, le=0.0)
    concurrency: int = Field(4, gt=0)  # episodes at once within one batch
    # the agents' internet (rollout/network.py): "task" (what each task.toml says), "none" or "all"
    network: NetworkMode = DEFAULT_NETWORK


class Scored(BaseModel):
    model_config = ConfigDict(extra="forbid")

    score: float
    outcome: str
    verifier_reward: float | None = None
    tampered: bool = False
    tamper_kinds: str = ""  # comma-separated kinds of evidence
    error: str = ""


def score_episode(episode: Episode, settings: RewardSettings) -> Scored:
    r = episode.result
    kinds = ",".join(sorted({t.kind.value for t in r.tamper}))
    if r.tamper and settings.tamper_penalty is not None:
        score = -settings.tamper_penalty
    elif r.outcome in HARNESS_FAULTS:
        score = settings.error_reward
    else:
        score = float(r.reward or 0.0)
    return Scored(
        score=score,
        outcome=r.outcome.value,
        verifier_reward=r.reward,
        tampered=bool(r.tamper),
        tamper_kinds=kinds,
        error=(r.exception or "") if r.outcome in HARNESS_FAULTS else "",
    )


# one image builder per event loop: its per-image locks are asyncio locks, which belong to one loop
# (reward functions called from several threads each run their own loop)
_builders: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_builder_lock = threading.Lock()
_toolkit_checked = False


def shared_builder() -> ImageBuilder:
    loop = asyncio.get_running_loop()
    with _builder_lock:
        builder = _builders.get(loop)
        if builder is None:
            builder = _builders[loop] = ImageBuilder()
        return builder


async def score_completion(
    task_hash: str,
    completion: Any,
    settings: RewardSettings,
    *,
    agent: str | None = None,
    builder: ImageBuilder | None = None,
) -> Scored:
    """Resolve the task, run the completion's turns on it in a sandbox, score the verifier's verdict."""
    global _toolkit_checked
    if not _toolkit_checked:  # never score without the offline verifier toolkit the tests rely on
        await asyncio.to_thread(require_toolkit)
        _toolkit_checked = True
    task = shared_resolver(settings.tasks).resolve(task_hash)
    try:
        turns = turns_from_completion(completion)
    except TypeError as e:
        raise AgentmillError(f"task {task.name}: {e}") from None
    episode = await run_episode(
        task, scripted(turns), builder or shared_builder(), agent=agent, network=settings.network
    )
    return score_episode(episode, settings)


async def score_batch(
    items: list[tuple[str, Any, str | None]], settings: RewardSettings, *, builder: ImageBuilder | None = None
) -> list[Scored]:
    """(task hash, completion, agent) per sample, scored concurrently (bounded), in order."""
    gate = asyncio.Semaphore(settings.concurrency)

    async def one(task_hash: str, completion: Any, agent: str | None) -> Scored:
        async with gate:
            try:
                return await score_completion(task_hash, completion, settings, agent=agent, builder=builder)
            except TaskNotFound as e:  # one stale row: reported and left out, the batch goes on
                return Scored(score=math.nan, outcome=NOT_FOUND, error=str(e))

    scored = list(await asyncio.gather(*(one(*item) for item in items)))
    if scored and all(s.outcome == NOT_FOUND for s in scored):  # nothing resolves: the setup is wrong, say so
        raise TaskNotFound(scored[0].error)
    return scored


def run_sync(coro: Coroutine) -> Any:
    """Run a coroutine from synchronous code, also when the caller's thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = e

    thread = threading.Thread(target=target, name="agentmill-reward")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def task_hash_of(ground_truth: Any, extra_info: Any) -> str:
    """The row's task: `reward_model.ground_truth`, else `extra_info.task_hash`."""
    if isinstance(ground_truth, str) and ground_truth:
        return ground_truth
    if isinstance(extra_info, dict) and isinstance(extra_info.get("task_hash"), str) and extra_info["task_hash"]:
        return extra_info["task_hash"]
    raise TaskNotFound(
        "the row names no task: reward_model.ground_truth and extra_info.task_hash are empty "
        "(was it exported with `agentmill export --format rl`?)"
    )


def _agent_of(extra_info: Any) -> str | None:
    return extra_info.get("agent") or None if isinstance(extra_info, dict) else None


# --- verl ---------------------------------------------------------------------------------------


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict | None = None,
    *,
    tasks: list[str] | str | None = None,
    tamper_penalty: float | None = None,
    error_reward: float = 0.0,
    network: NetworkMode = DEFAULT_NETWORK,
    return_dict: bool = False,
    **_ignored: Any,
) -> float | dict:
    """verl's custom reward function. Returns the score, or with `return_dict` a dict whose "score"
    is the reward and whose other keys (outcome, tampered, ...) verl logs as reward extra info."""
    settings = RewardSettings(
        tasks=tasks or [], tamper_penalty=tamper_penalty, error_reward=error_reward, network=network
    )
    scored = run_sync(
        score_completion(task_hash_of(ground_truth, extra_info), solution_str, settings, agent=_agent_of(extra_info))
    )
    return scored.model_dump() if return_dict else scored.score


async def compute_score_async(
    data_source: str, solution_str: str, ground_truth: str, extra_info: dict | None = None, **kwargs: Any
) -> float | dict:
    """The same for verl's asynchronous reward loop (it awaits coroutine functions)."""
    return await asyncio.to_thread(compute_score, data_source, solution_str, ground_truth, extra_info, **kwargs)


# --- TRL ----------------------------------------------------------------------------------------


class GRPOReward:
    """A TRL `reward_funcs` entry: `GRPOTrainer(..., reward_funcs=[GRPOReward(tasks="datasets/")])`.

    Every completion of the batch runs in its own sandbox (at most `concurrency` at once); the
    scores of the last batch, with outcomes and tamper evidence, stay in `last` for logging. A row
    whose task is in none of the folders gets None (left out, with a warning); a batch where no row
    resolves raises TaskNotFound (the folders are wrong)."""

    __name__ = "agentmill_verifier"  # TRL names the reward in its logs after it

    def __init__(
        self,
        tasks: Sequence[str | Path] | str | Path | None = None,
        *,
        tamper_penalty: float | None = None,
        error_reward: float = 0.0,
        concurrency: int = 4,
        network: NetworkMode = DEFAULT_NETWORK,
        builder: ImageBuilder | None = None,
    ):
        roots = [tasks] if isinstance(tasks, (str, Path)) else list(tasks or [])
        self.settings = RewardSettings(
            tasks=roots,
            tamper_penalty=tamper_penalty,
            error_reward=error_reward,
            concurrency=concurrency,
            network=network,
        )
        self.builder = builder
        self.last: list[Scored] = []
        self.history: list[Scored] = []  # every score of this reward function's life, in order

    def __call__(self, prompts: list[Any], completions: list[Any], **columns: Any) -> list[float | None]:
        n = len(completions)
        truths = columns.get("reward_model") or [None] * n
        infos = columns.get("extra_info") or [None] * n
        items = [
            (task_hash_of((t or {}).get("ground_truth") if isinstance(t, dict) else None, info), c, _agent_of(info))
            for t, info, c in zip(truths, infos, completions)
        ]
        self.last = run_sync(score_batch(items, self.settings, builder=self.builder))
        self.history += self.last
        for s in self.last:
            if s.outcome == NOT_FOUND:
                warnings.warn(f"agentmill reward left a completion out: {s.error}", stacklevel=2)
        # None is TRL's "no reward from this function" (it becomes NaN and is left out of the sum)
        return [None if s.outcome == NOT_FOUND else s.score for s in self.last]
