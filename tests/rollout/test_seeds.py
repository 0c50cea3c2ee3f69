"""A seeded run sends every request a seed derived from the run's seed, the trial and the request's
number: what the endpoint received is the same when the run is made again, differs between attempts
and between turns, and an unseeded run sends no seed at all."""

import subprocess
import sys
from collections import defaultdict

from agentmill.models.seeding import derived_seed
from agentmill.recipe.schema import parse_recipe
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer, solving_policy
from tests.rollout.test_rollout import make_dataset

CLI = [sys.executable, "-m", "agentmill.cli"]


def _rollout(data, run, base_url, *extra):
    r = subprocess.run(
        [
            *CLI,
            "rollout",
            str(data),
            "--agent",
            "terminus",
            "--model",
            "m",
            "--base-url",
            base_url,
            "--out",
            str(run),
            "--attempts",
            "2",
            "--temperature",
            "0.7",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr


def _seeds(requests):
    """(task prompt, turn) -> sorted seeds sent for it, one per attempt."""
    out = defaultdict(list)
    for body in requests:
        first_user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        out[(first_user, len(body["messages"]))].append(body.get("seed"))
    return {k: sorted(v, key=str) for k, v in out.items()}


@sandbox
def test_seeds_on_the_wire_repeat_across_runs_and_differ_across_attempts_and_turns(tmp_path):
    data = make_dataset(tmp_path / "ds", n=1)
    with ChatServer(solving_policy({"hello": "echo hello > /app/out.txt\n"})) as srv:
        _rollout(data, tmp_path / "a", srv.base_url, "--seed", "7")
        first = _seeds(srv.requests)
        srv.requests.clear()
        _rollout(data, tmp_path / "b", srv.base_url, "--seed", "7", "--no-store")  # the wire again, not the store
        again = _seeds(srv.requests)
        srv.requests.clear()
        _rollout(data, tmp_path / "c", srv.base_url)
        unseeded = srv.requests
    assert first == again and len(first) >= 2  # at least 2 turns (the two tasks share their instruction)
    for seeds in first.values():
        assert len(seeds) in (2, 4) and None not in seeds  # two attempts of each task that reached this turn
    all_seeds = [s for seeds in first.values() for s in seeds]
    assert len(set(all_seeds)) == len(all_seeds)  # no two requests share a seed
    assert all(0 <= s < 2**31 for s in all_seeds)
    assert unseeded and all("seed" not in body for body in unseeded)


def test_recipe_models_sample_with_the_recipe_seed_unless_they_name_their_own():
    recipe = parse_recipe(
        {
            "recipe": {"seed": 11},
            "model": {"name": "local"},
            "sources": [{"name": "s", "sample": True}],
            "rollout": {"model": {"name": "local", "seed": 3}},
        },
        where="r.toml",
    )
    assert recipe.model.seed == 11 and recipe.rollout.model.seed == 3
    assert derived_seed(11, "a", 1) == derived_seed(11, "a", 1) != derived_seed(11, "a", 2) != derived_seed(12, "a", 2)
