"""A terminus trial asks its first turn while its sandbox still starts, once a trial of the same image
has shown what a fresh terminal looks like, and keeps that request only if the guess was right.

Real sandboxes (each start slowed by a sleep in front of the real one, to open a window) and a real
HTTP chat server: the tests check what the server received and when, against when each sandbox was
ready, and that the recorded trajectory renders to exactly what the server received.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

import agentmill.agents.terminus.agent as terminus_module
import agentmill.rollout.trial as trial_module
from agentmill.agents.base import AgentResult
from agentmill.agents.conversation import Conversation
from agentmill.agents.terminus import TerminusAgent
from agentmill.agents.terminus.first_screen import FirstScreens
from agentmill.errors import AgentmillError, SandboxError
from agentmill.images import ImageBuilder
from agentmill.models import ModelClient, SamplingParams
from agentmill.models.seeding import derived_seed, per_trial
from agentmill.rl.policy import PolicyClient, PolicyTurn
from agentmill.rollout import run_trial
from agentmill.tasks import TaskConfig, load_task, write_task
from agentmill.traces.atif import AgentInfo, Trajectory
from agentmill.traces.render import render
from agentmill.verify import Outcome
from tests.conftest import REWARD_IF, sandbox, scratch_cache
from tests.helpers.chat_server import ChatServer, Reply, terminus_json

pytestmark = sandbox


@pytest.fixture
def screens(monkeypatch):
    """A store of first screens of this test's own (the process-wide one would carry other tests')."""
    store = FirstScreens()
    monkeypatch.setattr(terminus_module, "FIRST_SCREENS", store)
    return store


class SlowStarts:
    """Every agent sandbox's start preceded by the next of `delays` (s); notes when each was ready,
    by the word its task's instruction asks for. A start may be made to fail instead."""

    def __init__(self, monkeypatch, delays: dict[str, float], fail: set[str] = frozenset()):
        self.ready: dict[str, float] = {}
        self.cancelled: set[str] = set()
        real = trial_module._agent_sandbox

        def agent_sandbox(task, agent, spec):
            box = real(task, agent, spec)
            word = word_of(task.instruction)
            real_start = box.start

            async def start():
                try:
                    await asyncio.sleep(delays.get(word, 0.0))
                except asyncio.CancelledError:
                    self.cancelled.add(word)
                    raise
                if word in fail:
                    raise SandboxError(f"planted start failure for {word}")
                await real_start()
                self.ready[word] = time.monotonic()

            box.start = start
            return box

        monkeypatch.setattr(trial_module, "_agent_sandbox", agent_sandbox)


class Wire:
    """The server's side: each request with when it arrived and which task's it is."""

    def __init__(self, policy):
        self.seen: list[tuple[float, str, dict]] = []
        self._lock = threading.Lock()
        self.policy = policy

    def __call__(self, request):
        word = word_of(request["messages"][1]["content"])
        with self._lock:
            self.seen.append((time.monotonic(), word, request))
        return self.policy(request)

    def firsts(self, word: str) -> list[tuple[float, dict]]:
        """The requests of `word`'s trial that carried no reply yet: its first turn, asked."""
        return [
            (t, r) for t, w, r in self.seen if w == word and not any(m["role"] == "assistant" for m in r["messages"])
        ]

    def of(self, word: str) -> list[dict]:
        return [r for _, w, r in self.seen if w == word]


def word_of(text: str) -> str:
    return text.split("word ", 1)[1].split(" ", 1)[0]


def solving(request) -> Reply:
    """Writes the word the task asks for, then claims completion and confirms."""
    turns = sum(1 for m in request["messages"] if m["role"] == "assistant")
    if turns == 0:
        return Reply(terminus_json([(f"echo {word_of(request['messages'][1]['content'])} > /app/out.txt\n", 0.3)]))
    return Reply(terminus_json([], complete=True))


def task_for(tmp_path, word: str, *, timeout: float = 60.0):
    """Tasks of one image (the same environment folder content) that differ in their instruction."""
    return load_task(
        write_task(
            tmp_path / "tasks" / word,
            instruction=f"Write the word {word} into /app/out.txt.",
            config=TaskConfig.model_validate({"agent": {"timeout_sec": timeout}}),
            test_sh=REWARD_IF.format(cond=f"grep -qx {word} /app/out.txt"),
        )
    )


def run(
    tmp_path,
    slow: SlowStarts,
    wire: Wire,
    groups: list[list[str]],
    *,
    seed: int | None = None,
    client_for=None,
    timeout: float = 60.0,
):
    """Each group's trials at once, the groups one after another; returns {word: (trial, agent result)}."""
    out = {}

    async def go(url):
        c = ModelClient(
            base_url=url,
            model="scripted",
            backoff_base=0.01,
            max_retries=1,
            sampling=SamplingParams(temperature=0, seed=seed),
        )
        builder = ImageBuilder(cache=scratch_cache(tmp_path))
        try:
            for group in groups:
                results = {w: AgentResult() for w in group}

                async def one(word):
                    client = client_for(word) if client_for else per_trial(c, f"trial-{word}")
                    return await run_trial(
                        task_for(tmp_path, word, timeout=timeout),
                        TerminusAgent(client, max_turns=6),
                        builder,
                        agent_result=results[word],
                    )

                trials = await asyncio.gather(*(one(w) for w in group))
                out.update({w: (t, results[w]) for w, t in zip(group, trials)})
        finally:
            await c.close()

    with ChatServer(wire) as srv:
        asyncio.run(go(srv.base_url))
    return out


def rendered(result: AgentResult) -> list[dict]:
    trajectory = Trajectory(
        session_id="t", agent=AgentInfo(name="terminus", version=TerminusAgent.version), steps=list(result.steps)
    )
    return render(trajectory, reasoning="drop").messages


def test_a_trial_asks_its_first_turn_while_its_sandbox_starts_once_another_has_shown_the_screen(
    tmp_path, monkeypatch, screens
):
    # `slow`'s sandbox starts 3 s late; two quick trials' terminals show the image's first screen meanwhile
    slow = SlowStarts(monkeypatch, {"slow": 3.0})
    wire = Wire(solving)
    out = run(tmp_path, slow, wire, [["quick", "brisk", "slow"]])
    for word in ("quick", "brisk", "slow"):
        trial, result = out[word]
        assert trial.outcome is Outcome.PASSED, trial.exception
        assert len(wire.firsts(word)) == 1  # asked once: nothing dropped
        # what the trajectory renders to is what the server received last, plus its reply
        assert rendered(result)[:-1] == wire.of(word)[-1]["messages"]
    ((asked, request),) = wire.firsts("slow")
    assert asked < slow.ready["slow"] - 1.0  # asked while its sandbox was still starting
    assert out["slow"][1].metadata["terminus"]["first_turn_ahead"] == "hit"
    for word in ("quick", "brisk"):  # they had nothing to guess from
        assert out[word][1].metadata["terminus"]["first_turn_ahead"] == "not asked"
    # the guessed screen is the slow trial's own: its terminal, in its own folder, showed the same
    assert request["messages"][1]["content"] == out["slow"][1].steps[1].message
    # the agent's time is counted from the ready sandbox: not the 3 s it waited
    assert out["slow"][0].timings.sandbox_start > 3.0 and out["slow"][0].timings.agent < 3.0


def test_a_wrong_guess_is_dropped_its_seed_reused_and_its_image_never_guessed_again(tmp_path, monkeypatch, screens):
    slow = SlowStarts(monkeypatch, {"second": 1.0, "third": 1.0})
    wire = Wire(solving)
    out = run(tmp_path, slow, wire, [["first"], ["zeroth"]], seed=7)
    (key,) = screens._seen
    assert screens.known(key) is not None
    screens._seen[key] = ("root@elsewhere:/# ", 2)  # planted: a guess that the next terminal will not match
    out |= run(tmp_path, slow, wire, [["second"], ["third"]], seed=7)
    for word in ("first", "zeroth", "second", "third"):
        trial, result = out[word]
        assert trial.outcome is Outcome.PASSED, trial.exception
        assert rendered(result)[:-1] == wire.of(word)[-1]["messages"]
    (t_wrong, wrong), (t_real, real) = wire.firsts("second")
    assert "elsewhere" in wrong["messages"][1]["content"] and t_wrong < slow.ready["second"] <= t_real
    assert "elsewhere" not in real["messages"][1]["content"]
    assert all("elsewhere" not in (s.message or "") for s in out["second"][1].steps)
    assert out["second"][1].metadata["terminus"]["first_turn_ahead"] == "miss"
    # the replacement is sent as the first request would have been: the same seed, and the next turns follow
    assert wrong["seed"] == real["seed"] == derived_seed(7, "trial-second", 1)
    assert [r["seed"] for r in wire.of("second")[1:]] == [derived_seed(7, "trial-second", k) for k in (1, 2, 3)]
    # a start whose screen differed once is not guessed again: the third trial asks only when ready
    ((t_third, _),) = wire.firsts("third")
    assert t_third >= slow.ready["third"] and out["third"][1].metadata["terminus"]["first_turn_ahead"] == "not asked"


def test_a_guess_dropped_before_its_request_ran_takes_no_request_number_back():
    """A sandbox ready at once: the guess is checked (and dropped) before its request ever ran. The
    request that replaces it is still request 1 with request 1's seed, and the server saw only it."""
    wire = Wire(solving)

    async def go(url):
        c = ModelClient(
            base_url=url,
            model="scripted",
            backoff_base=0.01,
            max_retries=1,
            sampling=SamplingParams(temperature=0, seed=7),
        )
        try:
            chat = Conversation(per_trial(c, "trial-early"), AgentResult(), {})
            chat.say("system", "sys")
            ahead = chat.ask_ahead("user", "Write the word early now. (a wrong guess)")
            ahead.drop()  # no await in between: the request never started
            chat.say("user", "Write the word early now.")
            await chat.ask()
            await asyncio.sleep(0.05)  # a cancelled request that had started would show up by now
        finally:
            await c.close()

    with ChatServer(wire) as srv:
        asyncio.run(go(srv.base_url))
    ((_, request),) = wire.firsts("early")
    assert len(wire.of("early")) == 1 and "wrong guess" not in request["messages"][1]["content"]
    assert request["seed"] == derived_seed(7, "trial-early", 1)


def test_a_start_that_fails_while_the_first_turn_is_asked_is_the_sandboxs_failure(tmp_path, monkeypatch, screens):
    slow = SlowStarts(monkeypatch, {"broken": 0.5}, fail={"broken"})

    def slow_model(request):  # the early request is still in flight when the start fails
        return Reply(terminus_json([], complete=True), delay=3.0 if "broken" in str(request["messages"]) else 0.0)

    wire = Wire(slow_model)
    run(tmp_path, slow, wire, [["first"], ["zeroth"]])
    began = time.monotonic()
    out = run(tmp_path, slow, wire, [["broken"]])
    trial, result = out["broken"]
    assert len(wire.firsts("broken")) == 1  # it was asked ahead
    assert trial.outcome is Outcome.SANDBOX_ERROR and trial.exception.startswith("sandbox failed to start: planted")
    assert not any(s.source == "agent" for s in result.steps)  # the early reply is nobody's
    assert time.monotonic() - began < 2.5  # the trial did not wait for the model's answer


def test_a_trial_cancelled_while_its_sandbox_starts_cancels_the_start(tmp_path, monkeypatch, screens):
    slow = SlowStarts(monkeypatch, {"late": 5.0})
    run(tmp_path, slow, Wire(solving), [["first"], ["zeroth"]])

    async def go(url):
        c = ModelClient(base_url=url, model="scripted", backoff_base=0.01, max_retries=1)
        try:
            trial = asyncio.ensure_future(
                run_trial(task_for(tmp_path, "late"), TerminusAgent(c), ImageBuilder(cache=scratch_cache(tmp_path)))
            )
            await asyncio.sleep(1.0)
            trial.cancel()
            began = time.monotonic()
            with pytest.raises(asyncio.CancelledError):
                await trial
            return time.monotonic() - began
        finally:
            await c.close()

    wire = Wire(solving)
    with ChatServer(wire) as srv:
        waited = asyncio.run(go(srv.base_url))
    assert len(wire.firsts("late")) == 1  # it had asked ahead
    assert "late" in slow.cancelled and waited < 2.0  # the start was cancelled, not waited out


def test_the_agent_time_limit_runs_from_the_ready_sandbox_and_still_holds(tmp_path, monkeypatch, screens):
    slow = SlowStarts(monkeypatch, {"late": 2.0, "stuck": 2.0})

    def policy(request):
        if "stuck" in request["messages"][1]["content"]:  # keeps the terminal busy past the limit
            return Reply(terminus_json([("sleep 30\n", 30)]))
        return solving(request)

    wire = Wire(policy)
    run(tmp_path, slow, wire, [["first"], ["zeroth"]], timeout=1.5)
    out = run(tmp_path, slow, wire, [["late"], ["stuck"]], timeout=1.5)
    late, stuck = out["late"][0], out["stuck"][0]
    assert out["late"][1].metadata["terminus"]["first_turn_ahead"] == "hit"
    assert late.outcome is Outcome.PASSED, late.exception  # a 2 s start is not the agent's 1.5 s
    assert stuck.outcome is Outcome.AGENT_TIMEOUT and 1.4 < stuck.timings.agent < 2.5


def test_a_policy_being_trained_is_never_asked_ahead(tmp_path, monkeypatch, screens):
    """Its answers depend on the requests before (rl/policy.py): a dropped request would be a turn lost."""
    slow = SlowStarts(monkeypatch, {"second": 1.0})
    asked = []

    def client_for(word):
        turns = [
            PolicyTurn(content=terminus_json([(f"echo {word} > /app/out.txt\n", 0.3)])),
            PolicyTurn(content=terminus_json(complete=True)),
            PolicyTurn(content=terminus_json(complete=True)),
        ]

        async def source(messages):
            asked.append((word, time.monotonic()))
            return turns.pop(0) if turns else None

        return PolicyClient(source)

    out = run(tmp_path, slow, Wire(solving), [["first"], ["zeroth"], ["second"]], client_for=client_for)
    assert len(screens._seen) == 1 and screens.known(next(iter(screens._seen)))  # the third could have guessed
    for word in ("first", "zeroth", "second"):
        assert out[word][0].outcome is Outcome.PASSED, out[word][0].exception
        assert [w for w, _ in asked].count(word) == 3
    assert min(t for w, t in asked if w == "second") >= slow.ready["second"]


def test_asking_ahead_can_be_turned_off_and_a_bad_setting_is_one_clear_error(tmp_path, monkeypatch, screens):
    monkeypatch.setenv("AGENTMILL_ASK_AHEAD", "yes")
    with pytest.raises(AgentmillError, match="AGENTMILL_ASK_AHEAD='yes': expected 1"):
        TerminusAgent(SimpleNamespace(independent_requests=True))
    monkeypatch.setenv("AGENTMILL_ASK_AHEAD", "0")
    slow = SlowStarts(monkeypatch, {"second": 1.0})
    wire = Wire(solving)
    out = run(tmp_path, slow, wire, [["first"], ["zeroth"], ["second"]])
    assert screens.known(next(iter(screens._seen))) and out["second"][0].outcome is Outcome.PASSED
    ((asked, _),) = wire.firsts("second")
    assert asked >= slow.ready["second"] and out["second"][1].metadata["terminus"]["first_turn_ahead"] == "not asked"


def test_exported_rows_of_trials_that_asked_ahead_are_what_the_server_answered(tmp_path):
    """Through the CLI (its own process, its own store of screens): three tasks of one image, one
    trial at a time: the first two show the screen, the third knows it before its sandbox starts."""
    data = tmp_path / "data"
    for word in ("alpha", "beta", "gamma"):
        write_task(
            data / word,
            instruction=f"Write the word {word} into /app/out.txt.",
            test_sh=REWARD_IF.format(cond=f"grep -qx {word} /app/out.txt"),
        )
    run_dir = tmp_path / "run"
    with ChatServer(solving) as srv:
        cli(
            "rollout",
            str(data),
            "--agent",
            "terminus",
            "--model",
            "m",
            "--base-url",
            srv.base_url,
            "--out",
            str(run_dir),
            "--max-turns",
            "5",
            "--temperature",
            "0",
            "-c",
            "1",
            "--max-retries",
            "0",
        )
    results = [json.loads(p.read_text()) for p in run_dir.glob("trials/*/result.json")]
    assert sorted(r["outcome"] for r in results) == ["passed"] * 3
    ahead = sorted(r["agent_metadata"]["terminus"]["first_turn_ahead"] for r in results)
    assert ahead == ["hit", "not asked", "not asked"]
    out = tmp_path / "rows.jsonl"
    cli("export", str(run_dir), "--format", "trl", "--out", str(out), "--reasoning", "drop", "--min-turns", "0")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3
    for row in rows:
        mine = [e for e in srv.exchanges if e.request["messages"][1]["content"] == row["messages"][1]["content"]]
        assert len([e for e in mine if len(e.request["messages"]) == 2]) == 1  # its first turn, asked once
        assert row["messages"] == [*mine[-1].request["messages"], mine[-1].message]


def cli(*args):
    r = subprocess.run([sys.executable, "-m", "agentmill.cli", *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r
