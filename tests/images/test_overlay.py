"""Overlay trial filesystems (AGENTMILL_OVERLAY=1): a trial writes only its own upper layer over the
image's template; the verifier's fresh sandbox sees that upper layer over the same image."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from agentmill.agents import NopAgent, OracleAgent
from agentmill.images import ImageBuilder
from agentmill.rollout.trial import run_trial
from agentmill.tasks import load_task
from agentmill.verify.outcome import Outcome
from tests.conftest import REWARD_IF, sandbox, scratch_cache, simple_task

pytestmark = [sandbox, pytest.mark.skipif(shutil.which("fuse-overlayfs") is None, reason="fuse-overlayfs not installed")]

DOCKERFILE = ("FROM debian:bookworm-slim\nWORKDIR /app\n"
              "RUN echo pristine > state.txt && touch remove.me && mkdir -p data && seq 1 3000 | "
              "while read i; do echo $i > data/f$i; done\n")
# The agent edits an image file, deletes one, adds one; the verifier must see exactly that.
SOLVE = "echo changed >> /app/state.txt; rm /app/remove.me; echo new > /app/new.txt; rm -r /app/data/f1*\n"
CHECK = ("grep -qx changed /app/state.txt && grep -qx pristine /app/state.txt && [ ! -e /app/remove.me ] && "
         "grep -qx new /app/new.txt && [ ! -e /app/data/f17 ] && [ -e /app/data/f2999 ]")


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 300))


def test_trial_writes_stay_in_the_trial_and_reach_the_verifier(tmp_path):
    task = load_task(simple_task(tmp_path, dockerfile=DOCKERFILE, test_sh=REWARD_IF.format(cond=CHECK), solve_sh=SOLVE))
    builder = ImageBuilder(cache=scratch_cache(tmp_path), overlay=True)
    image = run(builder.get(task))
    dest = image.instantiate(tmp_path / "probe")
    assert list(dest.iterdir()) == [], "an overlay trial starts from an empty upper layer, not a copy"

    async def both():
        return await asyncio.gather(run_trial(task, OracleAgent(), builder), run_trial(task, NopAgent(), builder))

    oracle, nop = run(both())
    assert oracle.outcome is Outcome.PASSED, (oracle.exception, oracle.verifier_stdout[-800:], oracle.verifier_stderr[-800:])
    assert nop.outcome is Outcome.FAILED
    root = image.rootfs  # the image never changed
    assert (root / "app/state.txt").read_text() == "pristine\n" and (root / "app/remove.me").exists()
    assert not (root / "app/new.txt").exists() and len(list((root / "app/data").iterdir())) == 3000


def test_concurrent_overlay_trials_do_not_see_each_other(tmp_path):
    task = load_task(simple_task(tmp_path, dockerfile=DOCKERFILE, test_sh=REWARD_IF.format(cond="grep -qx 1 /app/count"),
                                 solve_sh="touch /app/mine-$RANDOM$RANDOM; sleep 2; ls /app | grep -c '^mine-' > /app/count\n"))
    builder = ImageBuilder(cache=scratch_cache(tmp_path), overlay=True)

    async def three():
        return await asyncio.gather(*(run_trial(task, OracleAgent(), builder) for _ in range(3)))

    results = run(three())
    assert [r.outcome for r in results] == [Outcome.PASSED] * 3, [r.exception for r in results]
    assert not list(run(builder.get(task)).rootfs.glob("app/mine-*"))


def test_overlay_sandbox_keeps_the_sandbox_rules():
    # The overlay keeps its bounding set until bwrap; inside, nothing may remain of it.
    from agentmill.sandbox import create_sandbox
    from agentmill.sandbox.conformance import fresh_spec

    from agentmill.sandbox.conformance import _host_processes_with

    marker = "am-overlay-uid-probe"

    async def probe():
        async with create_sandbox(fresh_spec(), backend="bwrap-overlay") as sb:
            await sb.exec(f"(exec -a {marker} sleep 30) >/dev/null 2>&1 &")
            await asyncio.sleep(0.3)
            host_uids = {int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0])
                         for pid in _host_processes_with(marker)}
            return host_uids, await sb.exec("grep -E '^Cap(Eff|Prm|Bnd|Inh|Amb)' /proc/self/status")

    host_uids, r = run(probe())
    assert r.returncode == 0, r.stderr
    assert host_uids and 0 not in host_uids, f"sandbox processes run as host uids {host_uids}"
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 5 and all(line.split()[1] == "0000000000000000" for line in lines), lines


def test_overlay_over_a_debian_image_keeps_system_dirs_read_only(tmp_path):
    from agentmill.images.userns import BuilderUnavailable, build_identity

    try:
        build_identity()
    except BuilderUnavailable as e:
        pytest.skip(str(e))
    attack = ("for p in /usr/bin/python3 /bin/bash /etc/passwd /usr/lib/python3/dist-packages/evil.pth; do "
              "(echo hacked > $p) 2>/dev/null && echo WROTE $p >> /app/log; done; echo mine > /app/state.txt; true\n")
    task = load_task(simple_task(tmp_path, dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\nRUN echo pristine > /app/state.txt\n",
                                 test_sh=REWARD_IF.format(cond="! grep -q WROTE /app/log 2>/dev/null && grep -qx mine /app/state.txt"),
                                 solve_sh=attack))
    builder = ImageBuilder(cache=scratch_cache(tmp_path), mode="debian", overlay=True)

    async def both():
        return await asyncio.gather(run_trial(task, OracleAgent(), builder), run_trial(task, NopAgent(), builder))

    oracle, nop = run(both())
    assert oracle.outcome is Outcome.PASSED, (oracle.exception, oracle.verifier_stdout[-800:])
    assert nop.outcome is Outcome.FAILED
    assert (run(builder.get(task)).rootfs / "app/state.txt").read_text() == "pristine\n"
