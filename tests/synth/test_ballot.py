"""The solver ballot stops early: once the target has solved more than it may, or the solver has failed
more than it may, no further trial starts (counted at the scripted endpoints: what was actually asked),
and the trials that ran are recorded."""

from __future__ import annotations

import asyncio
import itertools
import threading

import pytest

from agentmill.images import ImageBuilder
from agentmill.models.client import ModelClient
from agentmill.synth.candidate import Candidate, GymSet, write_task_folder
from agentmill.synth.config import SynthConfig
from agentmill.synth.gates import BallotGate
from agentmill.synth.gates.ballot import solver_tally, target_tally
from agentmill.synth.gates.base import GateContext
from agentmill.tasks.tool_task import load_tool_task
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer, Reply
from tests.synth.scripted import FINAL, GYM


@pytest.mark.parametrize(
    "k, target_max, solver_min, target_wave, solver_wave",
    [
        (3, 1, 2, 2, 2),  # the default: two trials each can already decide either way
        (5, 1, 3, 2, 3),  # the target is too easy after 2 passes; the solver needs 3 passes or 3 failures
        (3, 3, 2, 0, 2),  # the target may solve all: it needs no trial at all
        (3, 1, 0, 2, 0),  # the solver needs no pass: no solver trial
    ],
)
def test_each_wave_runs_only_trials_that_cannot_outrun_the_verdict(k, target_max, solver_min, target_wave, solver_wave):
    t, s = target_tally(k, target_max), solver_tally(k, solver_min)
    assert (0 if t.verdict else t.wave()) == target_wave and (0 if s.verdict else s.wave()) == solver_wave
    # exactly one verdict is reached within k trials, whatever the order of passes and failures
    for outcomes in itertools.product([True, False], repeat=k):
        tally = target_tally(k, target_max)
        for passed in outcomes:
            if tally.verdict:
                break
            tally.passes += passed
            tally.fails += not passed
        assert tally.verdict is not None and tally.trials <= k


class Player:
    """A tools-agent model that solves the first `solves` trials that ask it and gives up on the rest.
    A trial is recognised by the id of its first tool call, so concurrent trials never mix."""

    def __init__(self, solves: int):
        self.solves, self.started, self.lock = solves, 0, threading.Lock()

    def __call__(self, request: dict) -> Reply:
        calls = FINAL["good"]["calls"]
        mine = [c["id"] for m in request["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        if not mine:  # a trial's first turn
            with self.lock:
                trial, self.started = self.started, self.started + 1
            if trial >= self.solves:
                return Reply("I could not find a way to do this.")
        else:
            trial = int(mine[0].split("-")[0][1:])
        done = len(mine)
        if done >= len(calls):
            return Reply("Done: the ticket is closed.")
        return Reply(
            None,
            tool_calls=[
                {"id": f"t{trial}-c{done}", "name": calls[done]["tool"], "arguments": calls[done]["arguments"]}
            ],
        )


def _ballot(tmp_path, target: Player, solver: Player):
    with ChatServer(target) as t_server, ChatServer(solver) as s_server:
        roles = {r: {"base_url": t_server.base_url, "model": r} for r in ("generator", "critic", "judge")}
        roles["target"] = {"base_url": t_server.base_url, "model": "target", "max_retries": 0}
        roles["solver"] = {"base_url": s_server.base_url, "model": "solver", "max_retries": 0}
        config = SynthConfig.model_validate(
            {"env": {"gym_dir": GYM}, "synth": {"cards": "x.jsonl"}, "ballot": {"k": 3, "max_turns": 6}, "roles": roles}
        )
        cand = Candidate(candidate_id="cand", card_id="c", body=FINAL["good"])
        folder = write_task_folder(cand, tmp_path / "tasks" / "cand", GymSet(gym_dir=GYM))

        async def go():
            clients = {
                r: ModelClient(base_url=roles[r]["base_url"], model=r, max_retries=0) for r in ("target", "solver")
            }
            ctx = GateContext(
                candidate=cand,
                task=load_tool_task(folder),
                task_dir=folder,
                work_dir=tmp_path / "work",
                builder=ImageBuilder(),
                clients=clients,
                settings=config,
            )
            try:
                return await BallotGate().run(ctx)
            finally:
                for c in clients.values():
                    await c.close()

        return asyncio.run(go())


def _trials(ledger_dir) -> int:
    from agentmill.rollout.ledger import Ledger

    ledger = Ledger(ledger_dir / "ledger.sqlite")
    try:
        return sum(r["state"] == "done" for r in ledger.rows())
    finally:
        ledger.close()


@sandbox
@pytest.mark.parametrize(
    "target_solves, solver_solves, code, target_trials, solver_trials",
    [
        (3, 3, "too_easy", 2, 2),  # 2 of 2: already too easy; a third trial of either would be wasted
        (0, 3, "ok", 2, 2),  # 0 of 2 target, 2 of 2 solver: decided without the third trials
        (1, 3, "ok", 3, 2),  # the target split 1/1: one more target trial, no more solver trials
        (3, 1, "too_easy", 2, 2),  # the solver split 1/1, but the target was too easy: the solver stops too
        (1, 0, "too_hard", 2, 2),  # the solver failed 2 of 2: it can no longer reach 2, the target stops too
    ],
)
def test_the_ballot_stops_once_the_verdict_is_known(
    tmp_path, target_solves, solver_solves, code, target_trials, solver_trials
):
    target, solver = Player(target_solves), Player(solver_solves)
    r = _ballot(tmp_path, target, solver)
    assert r.code == code, r
    # what crossed the wire: trials started = conversations opened at each endpoint
    assert (target.started, solver.started) == (target_trials, solver_trials)
    assert (r.details["target_trials"], r.details["solver_trials"]) == (target_trials, solver_trials)
    assert (_trials(tmp_path / "work" / "ballot-target"), _trials(tmp_path / "work" / "ballot-solver")) == (
        target_trials,
        solver_trials,
    )
    assert r.details["target_solves"] == min(target_solves, target_trials)
    assert r.details["stopped_early"] is (target_trials + solver_trials < 6)
