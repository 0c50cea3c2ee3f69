"""RL episodes give the agent the internet as a rollout does: where the task allows it (or the
trainer says `network="all"`), never where the trainer says "none"; the verifier never. A task
whose verifier rewards an agent that saw a network interface shows which one the policy had."""

from __future__ import annotations

import asyncio
import json

from agentmill.rl.reward import RewardSettings, score_completion
from agentmill.tasks import load_task
from agentmill.tasks.model import EnvironmentSection, TaskConfig
from tests.conftest import REWARD_IF, simple_task
from tests.network.helpers import internet_tools

pytestmark = internet_tools

# the policy's one turn: write the network interfaces it sees (loopback alone without a network)
LOOK = json.dumps(
    {
        "analysis": "",
        "plan": "",
        "task_complete": True,
        "commands": [
            {"keystrokes": "awk -F: 'NR > 2 {print $1}' /proc/net/dev | tr -d ' ' > /app/out.txt\n", "duration": 1.0}
        ],
    }
)


def _score(tmp_path, allow: bool, network: str) -> float:
    root = tmp_path / f"{allow}-{network}"
    config = TaskConfig(environment=EnvironmentSection(allow_internet=allow))
    path = simple_task(root, test_sh=REWARD_IF.format(cond="grep -qvx lo /app/out.txt"), config=config)
    settings = RewardSettings(tasks=[root], network=network)
    return asyncio.run(score_completion(load_task(path).content_hash, LOOK, settings, agent="terminus")).score


def test_an_episode_has_the_internet_where_the_task_allows_it_and_the_trainer_does(tmp_path):
    assert _score(tmp_path, allow=True, network="task") == 1.0  # planted: run_trial without internet -> 0
    assert _score(tmp_path, allow=True, network="none") == 0.0  # the trainer's word wins
    assert _score(tmp_path, allow=False, network="task") == 0.0  # honest twin: the task did not ask
