"""Live multi-turn episodes, for trainers that generate turn by turn (agent loops).

`LiveEpisode` keeps one task's sandbox open across the policy's turns: `start()` returns the
conversation the agent opens with, each `step(turn)` runs the turn and returns what the agent
tells the policy next, until the agent ends (the policy said it is done, or the turn limit) and
the end state is verified: then `done` and the score. It is the same trial as everywhere else
(rl/episode.py): the agent's loop runs in the background and asks the policy for each turn.

`AgentmillInteraction` adapts it to verl's multi-turn interaction interface (start_interaction,
generate_response -> (should_terminate, response, turn_score, data), calculate_score,
finalize_interaction); rows name their task in `extra_info.interaction_kwargs.task_hash`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from agentmill.errors import AgentmillError
from agentmill.images import ImageBuilder
from agentmill.rl.episode import Episode, run_episode
from agentmill.rl.policy import PolicyTurn, turns_from_completion
from agentmill.rl.resolve import shared_resolver
from agentmill.rl.reward import RewardSettings, Scored, score_episode, shared_builder
from agentmill.rollout.network import DEFAULT_NETWORK
from agentmill.rollout.runner import require_toolkit
from agentmill.tasks.model import Task


@dataclass
class StepResult:
    done: bool
    observation: str = ""  # what the agent tells the policy next ("" when done)
    messages: list[dict[str, Any]] | None = None  # the whole conversation the agent would send now
    scored: Scored | None = None  # when done

    @property
    def score(self) -> float:
        return self.scored.score if self.scored else 0.0


class LiveEpisode:
    def __init__(
        self,
        task: Task,
        settings: RewardSettings,
        *,
        builder: ImageBuilder | None = None,
        agent: str | None = None,
        max_turns: int = 50,
    ):
        self.task, self.settings, self.agent, self.max_turns = task, settings, agent, max_turns
        self.builder = builder  # default: this event loop's shared builder, taken at start()
        self._asks: asyncio.Queue[list[dict[str, Any]]] = asyncio.Queue()
        self._turns: asyncio.Queue[PolicyTurn | None] = asyncio.Queue()
        self._run: asyncio.Task[Episode] | None = None
        self.final: StepResult | None = None

    async def _source(self, messages: list[dict[str, Any]]) -> PolicyTurn | None:
        await self._asks.put([dict(m) for m in messages])
        return await self._turns.get()

    async def start(self) -> StepResult:
        if self._run is not None:
            raise AgentmillError("the episode has already started")
        await asyncio.to_thread(require_toolkit)
        self.builder = self.builder or shared_builder()
        self._run = asyncio.ensure_future(
            run_episode(
                self.task,
                self._source,
                self.builder,
                agent=self.agent,
                max_turns=self.max_turns,
                network=self.settings.network,
            )
        )
        return await self._next()

    async def step(self, completion: Any) -> StepResult:
        """Run the policy's turn (a string, an assistant message, or messages); returns the next observation or the end."""
        if self._run is None:
            raise AgentmillError("start() the episode first")
        if self.final is not None:
            return self.final
        for turn in turns_from_completion(completion) or [PolicyTurn(content="")]:  # at least one turn
            await self._turns.put(turn)
            result = await self._next()
            if result.done:
                break
        return result

    async def close(self) -> StepResult:
        """End the episode now (the policy has no more turns) and verify the end state."""
        if self._run is None:
            raise AgentmillError("start() the episode first")
        while self.final is None:
            await self._turns.put(None)
            await self._next()
        return self.final

    async def _next(self) -> StepResult:
        run = self._run
        if run is None:  # start() sets it before the first call
            raise AgentmillError("start() the episode first")
        ask = asyncio.ensure_future(self._asks.get())
        done, _ = await asyncio.wait({ask, run}, return_when=asyncio.FIRST_COMPLETED)
        if ask in done:
            messages = ask.result()
            return StepResult(False, observation_of(messages), messages)
        ask.cancel()
        self.final = StepResult(True, scored=score_episode(run.result(), self.settings))
        return self.final


def observation_of(messages: list[dict[str, Any]]) -> str:
    """What the agent said since the policy's last turn: the next user message, or the tool results."""
    tail = []
    for m in reversed(messages):
        if m.get("role") == "assistant":
            break
        tail.append(m)
    tail.reverse()
    if any(m.get("role") == "tool" for m in tail):
        return "\n".join(str(m.get("content") or "") for m in tail if m.get("role") == "tool")
    return str(tail[-1].get("content") or "") if tail else ""


class AgentmillInteraction:
    """verl's interaction interface over live episodes. Config (verl's interaction YAML):
    `tasks` (folders to resolve task hashes in), `tamper_penalty`, `error_reward`, `max_turns`, `network` (the agents' internet: "task", "none", "all")."""

    def __init__(self, config: dict[str, Any]):
        self.config = dict(config)
        self.name: str = self.config.get("name", "agentmill")
        self.settings = RewardSettings(
            tasks=self.config.get("tasks") or [],
            tamper_penalty=self.config.get("tamper_penalty"),
            error_reward=self.config.get("error_reward", 0.0),
            network=self.config.get("network", DEFAULT_NETWORK),
        )
        self.max_turns = int(self.config.get("max_turns", 50))
        self._episodes: dict[str, LiveEpisode] = {}

    async def start_interaction(
        self, instance_id: str | None = None, *, task_hash: str | None = None, agent: str | None = None, **_kwargs: Any
    ) -> str:
        if not task_hash:
            raise AgentmillError("start_interaction needs the row's task_hash (extra_info.interaction_kwargs)")
        instance_id = instance_id or str(uuid4())
        task = shared_resolver(self.settings.tasks).resolve(task_hash)
        episode = LiveEpisode(task, self.settings, agent=agent, max_turns=self.max_turns)
        self._episodes[instance_id] = episode
        await episode.start()
        return instance_id

    async def generate_response(
        self, instance_id: str, messages: list[dict[str, Any]], **_kwargs: Any
    ) -> tuple[bool, str, float, dict[str, Any]]:
        episode = self._episodes[instance_id]
        reply = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
        result = await episode.step(reply if reply is not None else "")
        if result.done:
            if result.scored is None:  # _next scores every episode it ends
                raise AgentmillError(f"{instance_id}: the episode ended without a score")
            return True, "", result.score, result.scored.model_dump()
        return False, result.observation, 0.0, {}

    async def calculate_score(self, instance_id: str | None = None, **_kwargs: Any) -> float:
        episode = self._episodes.get(instance_id) if instance_id else None
        return episode.final.score if episode is not None and episode.final is not None else 0.0

    async def finalize_interaction(self, instance_id: str | None = None, **_kwargs: Any) -> None:
        episode = self._episodes.pop(instance_id, None) if instance_id else None
        if episode is not None and episode._run is not None and episode.final is None:
            await episode.close()  # the sandbox is stopped and cleaned up by the trial's own path
