"""The small shared helpers the rollout stands on: executors, atomic writes, one source of defaults."""

import asyncio
import json
import os
import subprocess
import sys

import pytest

from agentmill import defaults
from agentmill.rollout.executor import EXECUTORS, Executor, LocalExecutor, make_executor
from agentmill.runtime.atomic import atomic_path, write_json_atomic, write_text_atomic


def test_local_executor_bounds_concurrency_and_keeps_order():
    in_flight = peak = 0

    async def work(i):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01 * (10 - i))  # later jobs finish first
        in_flight -= 1
        return i * i

    results = asyncio.run(LocalExecutor(3).map(work, list(range(10))))
    assert results == [i * i for i in range(10)]
    assert peak == 3


def test_local_executor_runs_before_work_after_per_job():
    events = []

    async def work(i):
        events.append(("work", i))
        await asyncio.sleep(0)
        return i + 100

    async def after(i, r):
        events.append(("after", i, r))
        return f"recorded {r}"

    out = asyncio.run(LocalExecutor(1).map(work, [1, 2], before=lambda i: events.append(("before", i)), after=after))
    assert out == ["recorded 101", "recorded 102"]
    assert events == [("before", 1), ("work", 1), ("after", 1, 101), ("before", 2), ("work", 2), ("after", 2, 102)]


def test_cancelling_the_executor_cancels_every_job():
    cancelled = []

    async def work(i):
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(i)
            raise

    async def main():
        task = asyncio.create_task(LocalExecutor(2).map(work, [1, 2, 3]))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert sorted(cancelled) == [1, 2]  # the two running; the third never started


def test_executors_are_chosen_by_name():
    assert isinstance(make_executor("local", concurrency=2), LocalExecutor)
    assert all(issubclass(cls, Executor) for cls in EXECUTORS.all().values())
    with pytest.raises(ValueError, match="unknown executor 'slurm' \\(known: local, processes, ray\\)"):
        make_executor("slurm", concurrency=2)
    with pytest.raises(ValueError):
        LocalExecutor(0)


def test_atomic_write_replaces_whole_or_not_at_all(tmp_path):
    path = tmp_path / "sub" / "data.json"
    write_json_atomic(path, {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}
    with pytest.raises(RuntimeError):
        with atomic_path(path) as tmp:
            tmp.write_text('{"a": 2, "half')
            raise RuntimeError("killed half-way")
    assert json.loads(path.read_text()) == {"a": 1}  # the old file, untouched
    assert [p.name for p in path.parent.iterdir()] == ["data.json"]  # no temporary left behind
    write_text_atomic(path, "new\n")
    assert path.read_text() == "new\n"


def test_a_killed_writer_never_leaves_a_torn_file(tmp_path):
    path = tmp_path / "big.txt"
    write_text_atomic(path, "old\n")
    code = (
        "import os, sys; sys.path.insert(0, %r)\n"
        "from agentmill.runtime.atomic import atomic_path\n"
        "with atomic_path(%r) as tmp:\n"
        "    tmp.write_text('x' * 1000)\n"
        "    os._exit(9)\n"
    ) % (os.path.dirname(os.path.dirname(__import__("agentmill").__file__)), str(path))
    assert subprocess.run([sys.executable, "-c", code]).returncode == 9
    assert path.read_text() == "old\n"


def test_the_cli_and_recipes_share_one_set_of_defaults():
    import typer.main

    from agentmill.cli import app
    from agentmill.models.client import SamplingParams
    from agentmill.recipe.schema import ModelSpec, Rollout
    from agentmill.rollout.config import RolloutConfig

    cli = {p.name: p.default for p in typer.main.get_command(app).commands["rollout"].params}
    model, rollout, sampling = ModelSpec(), Rollout(), SamplingParams()
    config = RolloutConfig(dataset="d", agent="nop", agent_version="1")
    expected = {
        "temperature": defaults.TEMPERATURE,
        "top_p": defaults.TOP_P,
        "max_tokens": defaults.MAX_TOKENS,
        "max_turns": defaults.MAX_TURNS,
        "concurrency": defaults.CONCURRENCY,
        "attempts": defaults.ATTEMPTS,
        "model_concurrency": defaults.MODEL_CONCURRENCY,
        "request_timeout": defaults.REQUEST_TIMEOUT,
        "max_retries": defaults.MAX_RETRIES,
    }
    for name, value in expected.items():
        assert cli[name] == value, f"agentmill rollout --{name.replace('_', '-')}"
    assert (model.temperature, model.top_p, model.max_tokens, model.concurrency) == (
        defaults.TEMPERATURE,
        defaults.TOP_P,
        defaults.MAX_TOKENS,
        defaults.MODEL_CONCURRENCY,
    )
    assert (rollout.max_turns, rollout.concurrency, rollout.attempts) == (
        defaults.MAX_TURNS,
        defaults.CONCURRENCY,
        defaults.ATTEMPTS,
    )
    assert (sampling.temperature, sampling.top_p, sampling.max_tokens) == (
        defaults.TEMPERATURE,
        defaults.TOP_P,
        defaults.MAX_TOKENS,
    )
    assert (config.max_turns, config.concurrency, config.model_concurrency) == (
        defaults.MAX_TURNS,
        defaults.CONCURRENCY,
        defaults.MODEL_CONCURRENCY,
    )


def test_trial_identity_is_defined_once_and_ignores_endpoint_and_dataset_location():
    from agentmill.models.client import SamplingParams
    from agentmill.rollout.config import RolloutConfig
    from agentmill.rollout.identity import config_identity, trial_id

    base = dict(agent="terminus", agent_version="1", model="m", sampling=SamplingParams())
    a = RolloutConfig(dataset="/data/one", base_url="http://127.0.0.1:1/v1", **base)
    b = RolloutConfig(dataset="/elsewhere/two", base_url="http://10.0.0.1:9/v1", api_key_env="K", concurrency=9, **base)
    assert trial_id(a, "h", 0) == trial_id(b, "h", 0) != trial_id(a, "h", 1)
    assert b.identity_changes(a) == []
    c = RolloutConfig(dataset="/data/one", **{**base, "sampling": SamplingParams(temperature=0.1)})
    assert trial_id(c, "h", 0) != trial_id(a, "h", 0)
    assert c.identity_changes(a) == ["sampling: temperature 0.7 -> 0.1"]
    # agents without a model: sampling and turns make no different trials
    nop = dict(agent="nop", agent_version="1")
    d, e = RolloutConfig(dataset="x", max_turns=3, **nop), RolloutConfig(dataset="x", max_turns=9, **nop)
    assert trial_id(d, "h", 0) == trial_id(e, "h", 0) and e.identity_changes(d) == []
    assert config_identity(d)["sampling"] is None
