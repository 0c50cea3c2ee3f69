"""One RL episode: the policy's turns, run by the task's agent in a sandbox, verified.

It is a trial (rollout/trial.py) whose model is the policy: the same image, the same fresh
verifier sandbox, the same typed outcomes and tamper evidence. Task code never runs on the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentmill.agents.base import AgentResult
from agentmill.agents.registry import make_agent
from agentmill.images import ImageBuilder
from agentmill.rl.policy import PolicyClient, PolicyExhaustedError, Source
from agentmill.rollout.network import DEFAULT_NETWORK, NetworkMode, agent_internet
from agentmill.rollout.result import TrialResult
from agentmill.rollout.trial import run_trial
from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks.model import Task

AGENT_FOR_KIND = {"terminal": "terminus", "tools": "tools"}  # the agent whose protocol the policy speaks


class EpisodeAgent:
    """The task's model agent driven by the policy. The policy running out of turns ends the episode
    as the agent stopping would; everything else the agent does (and fails at) is its own."""

    needs_solution = False
    needs_model = True

    def __init__(self, inner: Any):
        self.inner = inner
        self.name, self.version = inner.name, inner.version
        self.task_kinds, self.rendering = inner.task_kinds, inner.rendering

    @property
    def model_name(self) -> str | None:
        return self.inner.model_name

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    async def run(self, task: Task, sandbox: Sandbox, result: AgentResult) -> None:
        try:
            await self.inner.run(task, sandbox, result)
        except PolicyExhaustedError:
            result.metadata["policy_exhausted"] = True


@dataclass
class Episode:
    result: TrialResult
    steps: list = field(default_factory=list)  # the agent's trajectory steps (ATIF)

    @property
    def reward(self) -> float | None:
        return self.result.reward

    @property
    def outcome(self) -> str:
        return self.result.outcome.value

    @property
    def tampered(self) -> bool:
        return bool(self.result.tamper)


def episode_agent(task: Task, source: Source, *, agent: str | None = None, max_turns: int = 50) -> EpisodeAgent:
    name = agent or AGENT_FOR_KIND.get(task.kind)
    if name is None:
        raise ValueError(f"{task.path}: no agent for '{task.kind}' tasks")
    # terminus without schema-constrained decoding: the policy's text is used as it was sampled
    inner = make_agent(name, client=PolicyClient(source), max_turns=max_turns, constrained=False)
    return EpisodeAgent(inner)


async def run_episode(
    task: Task,
    source: Source,
    builder: ImageBuilder,
    *,
    agent: str | None = None,
    max_turns: int = 50,
    network: NetworkMode = DEFAULT_NETWORK,
) -> Episode:
    """Run the policy's turns on the task and verify the end state. Never raises for the task's or
    the sandbox's failures: they are typed outcomes on the result. `network`: the agent's internet,
    as in a rollout (rollout/network.py; by default what the task's task.toml says)."""
    runner = episode_agent(task, source, agent=agent, max_turns=max_turns)
    steps = AgentResult()
    result = await run_trial(task, runner, builder, agent_result=steps, internet=agent_internet(network, task))
    result.agent_metadata = steps.metadata
    return Episode(result, steps.steps)
