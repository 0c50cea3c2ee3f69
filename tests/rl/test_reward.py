"""The reward is the task's verifier run on what the policy's completion did in the sandbox: 1 for
the task's own solution written as the policy would write it, 0 for a completion that does nothing,
and tampering with the verifier is never rewarded (penalised when asked). Rows come from a real
export (tests/rl/conftest.py) whose tasks were moved before any reward is computed."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentmill.rl import AgentmillInteraction, GRPOReward, TaskNotFound, compute_score
from tests.conftest import sandbox
from tests.rl.conftest import TERMINAL, TOOLS

pytestmark = sandbox


def terminus(commands: list[tuple[str, float]] = (), complete: bool = True, analysis: str = "") -> str:
    return json.dumps(
        {
            "analysis": analysis,
            "plan": "",
            "task_complete": complete,
            "commands": [{"keystrokes": k, "duration": d} for k, d in commands],
        }
    )


def solve(rl_export, task: str) -> str:
    """The task's reference solution, typed into the terminal as one command (what a policy could write)."""
    script = (rl_export.tasks_dir / task / "solution" / "solve.sh").read_text()
    return terminus([(f"bash <<'AGENTMILL_EOF'\n{script}AGENTMILL_EOF\n", 3.0)])


NOP = terminus([], complete=True)
PREPARED_REWARD = (
    "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && chmod 0444 /logs/verifier/reward.txt"
    " && chmod 0555 /logs/verifier\n"
)


def verl_score(rl_export, task: str, completion: str, **kwargs):
    row = rl_export.row(task)
    return compute_score(
        row["data_source"],
        completion,
        row["reward_model"]["ground_truth"],
        row["extra_info"],
        tasks=[str(rl_export.tasks_dir)],
        **kwargs,
    )


@pytest.mark.parametrize("task", TERMINAL)
def test_verl_compute_score_oracle_1_nop_0(rl_export, task):
    assert verl_score(rl_export, task, solve(rl_export, task)) == 1.0
    assert verl_score(rl_export, task, NOP) == 0.0


def test_grpo_reward_batch_in_trl_conversational_format(rl_export):
    rows = [rl_export.row(t) for t in TERMINAL for _ in range(2)]
    completions = [[{"role": "assistant", "content": c}] for t in TERMINAL for c in (solve(rl_export, t), NOP)]
    reward = GRPOReward(tasks=rl_export.tasks_dir, concurrency=2)
    scores = reward(
        prompts=[r["prompt"] for r in rows],
        completions=completions,
        reward_model=[r["reward_model"] for r in rows],
        extra_info=[r["extra_info"] for r in rows],
        data_source=[r["data_source"] for r in rows],
        trainer_state=None,
    )
    assert scores == [1.0, 0.0, 1.0, 0.0]
    assert [s.outcome for s in reward.last] == ["passed", "failed", "passed", "failed"]
    assert reward.__name__ == "agentmill_verifier"


def test_reasoning_is_never_executed(rl_export):
    task = TERMINAL[0]
    # a think block holding a command that would wreck the work, before the real answer
    wreck = terminus([("rm -rf /app\n", 0.5)], complete=True)
    completion = f"<think>maybe {wreck}</think>\n{solve(rl_export, task)}"
    assert verl_score(rl_export, task, completion, return_dict=True)["score"] == 1.0
    assert verl_score(rl_export, task, f"<think>{solve(rl_export, task)}</think>\n{NOP}") == 0.0


def test_tool_task_calls_are_run_through_the_tasks_tools(rl_export):
    task = TOOLS[0]
    row = rl_export.row(task)
    calls = json.loads((rl_export.tasks_dir / task / "solution" / "calls.json").read_text())
    openai_style = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": c["tool"], "arguments": json.dumps(c["arguments"])},
            }
            for i, c in enumerate(calls)
        ],
    }
    hermes_text = "".join(
        f"<tool_call>{json.dumps({'name': c['tool'], 'arguments': c['arguments']})}</tool_call>\n" for c in calls
    )
    wrong = "".join(
        f"<tool_call>{json.dumps({'name': c['tool'], 'arguments': c['arguments']})}</tool_call>" for c in calls[:-1]
    )  # everything but the write that solves it
    reward = GRPOReward(tasks=[rl_export.tasks_dir])
    completions = [[openai_style], hermes_text, "I resolved the incident.", wrong]
    scores = reward(
        prompts=[row["prompt"]] * 4,
        completions=completions,
        reward_model=[row["reward_model"]] * 4,
        extra_info=[row["extra_info"]] * 4,
    )
    assert scores == [1.0, 1.0, 0.0, 0.0], [s.model_dump() for s in reward.last]


def test_planted_tamper_scores_0_and_is_penalised_when_asked(rl_export):
    task = TERMINAL[0]
    attack = terminus([(PREPARED_REWARD, 0.5)])
    plain = verl_score(rl_export, task, attack, return_dict=True)
    assert plain["score"] == 0.0 and plain["tampered"] and "prepared_logs" in plain["tamper_kinds"]
    penalised = verl_score(rl_export, task, attack, tamper_penalty=1.0, return_dict=True)
    assert penalised["score"] == -1.0 and penalised["outcome"] == "failed"
    # the honest solution is never penalised, and an honest failure is not tamper
    assert verl_score(rl_export, task, solve(rl_export, task), tamper_penalty=1.0) == 1.0
    assert verl_score(rl_export, task, NOP, tamper_penalty=1.0) == 0.0


def test_unknown_task_is_a_clear_error(rl_export):
    with pytest.raises(TaskNotFound, match="no task with content hash 0123456789abcdef"):
        compute_score("agentmill/x", NOP, "0123456789abcdef" * 4, {}, tasks=[str(rl_export.tasks_dir)])
    with pytest.raises(TaskNotFound, match="names no task"):
        compute_score("agentmill/x", NOP, "", {}, tasks=[str(rl_export.tasks_dir)])
    # in a TRL batch, a stale row is left out (None) with a warning; a batch where nothing resolves is an error
    row = rl_export.row(TERMINAL[0])
    reward = GRPOReward(tasks=rl_export.tasks_dir)
    with pytest.warns(UserWarning, match="left a completion out: no task with content hash 0123456789abcdef"):
        scores = reward(
            prompts=[None, None],
            completions=[NOP, NOP],
            extra_info=[{}, {}],
            reward_model=[{"ground_truth": "0123456789abcdef" * 4}, row["reward_model"]],
        )
    assert scores == [None, 0.0]
    with pytest.raises(TaskNotFound):
        reward(prompts=[None], completions=[NOP], reward_model=[{"ground_truth": "f" * 64}], extra_info=[{}])


def test_live_multi_turn_episode_through_the_interaction_interface(rl_export):
    task = TERMINAL[1]
    row = rl_export.row(task)

    async def play():
        inter = AgentmillInteraction({"name": "agentmill", "tasks": [str(rl_export.tasks_dir)]})
        iid = await inter.start_interaction(None, **row["extra_info"]["interaction_kwargs"])
        msgs = list(row["prompt"])

        async def say(content):
            msgs.append({"role": "assistant", "content": content})
            out = await inter.generate_response(iid, msgs)
            if not out[0]:
                msgs.append({"role": "user", "content": out[1]})
            return out

        looked = await say(terminus([("echo marker-$((6*7))\n", 0.3)], complete=False))
        assert looked[0] is False and "marker-42" in looked[1]
        assert await inter.calculate_score(iid) == 0.0  # nothing verified yet
        solved = await say(solve(rl_export, task).replace('"task_complete": true', '"task_complete": false'))
        assert solved[0] is False
        claimed = await say(NOP)
        assert claimed[0] is False and "confirm" in claimed[1].lower()  # terminus asks once
        done, response, score, data = await say(NOP)
        assert (done, response, score, data["outcome"]) == (True, "", 1.0, "passed")
        assert await inter.calculate_score(iid) == 1.0
        await inter.finalize_interaction(iid)

        # an episode abandoned half-way ends cleanly and scores what it left behind
        other = await inter.start_interaction("abandoned", **row["extra_info"]["interaction_kwargs"])
        episode = inter._episodes[other]
        await inter.finalize_interaction(other)
        assert episode.final is not None and episode.final.scored.outcome == "failed" and episode.final.score == 0.0

    asyncio.run(play())


def test_hostile_completions_score_0_and_never_stop_the_batch(rl_export):
    """What a policy may write is hostile: garbage, a killed terminal, every process killed, a flood of
    output. Each scores 0 on its own episode; the honest completion in the same batch still scores 1."""
    task = TERMINAL[0]
    row = rl_export.row(task)
    hostile = [
        "not json at all {{{",
        terminus([("tmux kill-server\n", 0.5)]),
        terminus([("kill -9 -1\n", 0.5)]),
        terminus([("yes | head -c 50000000\n", 2.0)]),
        {"role": "assistant", "content": None},
    ]
    completions = [*hostile, solve(rl_export, task)]
    reward = GRPOReward(tasks=rl_export.tasks_dir, concurrency=3)
    scores = reward(
        prompts=[row["prompt"]] * len(completions),
        completions=completions,
        reward_model=[row["reward_model"]] * len(completions),
        extra_info=[row["extra_info"]] * len(completions),
    )
    assert scores == [0.0] * len(hostile) + [1.0], [s.model_dump() for s in reward.last]
    assert not any(s.tampered for s in reward.last)
    # killing its own terminal or processes is the agent's failure, unverified: never worth more than failing
    assert {s.outcome for s in reward.last[1:3]} == {"agent_error"}
    with pytest.raises(ValueError, match="less than or equal to 0"):
        GRPOReward(tasks=rl_export.tasks_dir, error_reward=0.5)


def test_reward_calls_from_several_threads(rl_export):
    """Trainers call reward functions from worker threads, each with its own event loop: every loop
    gets its own image builder (asyncio locks belong to one loop) and every score is right."""
    from concurrent.futures import ThreadPoolExecutor

    from agentmill.rl.reward import shared_builder

    async def builder_of_this_loop():
        return shared_builder(), shared_builder()

    (a1, a2), (b1, _) = asyncio.run(builder_of_this_loop()), asyncio.run(builder_of_this_loop())
    assert a1 is a2 and a1 is not b1
    jobs = [(t, solve(rl_export, t), 1.0) for t in TERMINAL] + [(t, NOP, 0.0) for t in TERMINAL]
    with ThreadPoolExecutor(len(jobs)) as pool:
        scores = list(pool.map(lambda j: verl_score(rl_export, j[0], j[1]), jobs))
    assert scores == [want for _, _, want in jobs]
