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

pytestmark = [
    sandbox,
    pytest.mark.skipif(shutil.which("fuse-overlayfs") is None, reason="fuse-overlayfs not installed"),
]

DOCKERFILE = (
    "FROM debian:bookworm-slim\nWORKDIR /app\n"
    "RUN echo pristine > state.txt && touch remove.me && mkdir -p data && seq 1 3000 | "
    "while read i; do echo $i > data/f$i; done\n"
)
# The agent edits an image file, deletes one, adds one; the verifier must see exactly that.
SOLVE = "echo changed >> /app/state.txt; rm /app/remove.me; echo new > /app/new.txt; rm -r /app/data/f1*\n"
CHECK = (
    "grep -qx changed /app/state.txt && grep -qx pristine /app/state.txt && [ ! -e /app/remove.me ] && "
    "grep -qx new /app/new.txt && [ ! -e /app/data/f17 ] && [ -e /app/data/f2999 ]"
)


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
    assert oracle.outcome is Outcome.PASSED, (
        oracle.exception,
        oracle.verifier_stdout[-800:],
        oracle.verifier_stderr[-800:],
    )
    assert nop.outcome is Outcome.FAILED
    root = image.rootfs  # the image never changed
    assert (root / "app/state.txt").read_text() == "pristine\n" and (root / "app/remove.me").exists()
    assert not (root / "app/new.txt").exists() and len(list((root / "app/data").iterdir())) == 3000


def test_concurrent_overlay_trials_do_not_see_each_other(tmp_path):
    task = load_task(
        simple_task(
            tmp_path,
            dockerfile=DOCKERFILE,
            test_sh=REWARD_IF.format(cond="grep -qx 1 /app/count"),
            solve_sh="touch /app/mine-$RANDOM$RANDOM; sleep 2; ls /app | grep -c '^mine-' > /app/count\n",
        )
    )
    builder = ImageBuilder(cache=scratch_cache(tmp_path), overlay=True)

    async def three():
        return await asyncio.gather(*(run_trial(task, OracleAgent(), builder) for _ in range(3)))

    results = run(three())
    assert [r.outcome for r in results] == [Outcome.PASSED] * 3, [r.exception for r in results]
    assert not list(run(builder.get(task)).rootfs.glob("app/mine-*"))


def test_overlay_sandbox_keeps_the_sandbox_rules():
    # The overlay keeps its bounding set until bwrap; inside, nothing may remain of it.
    from agentmill.sandbox import create_sandbox
    from agentmill.sandbox.conformance import _host_processes_with, fresh_spec

    marker = "am-overlay-uid-probe"

    async def probe():
        async with create_sandbox(fresh_spec(), backend="bwrap-overlay") as sb:
            await sb.exec(f"(exec -a {marker} sleep 30) >/dev/null 2>&1 &")
            await asyncio.sleep(0.3)
            host_uids = {
                int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0])
                for pid in _host_processes_with(marker)
            }
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
    attack = (
        "for p in /usr/bin/python3 /bin/bash /etc/passwd /usr/lib/python3/dist-packages/evil.pth; do "
        "(echo hacked > $p) 2>/dev/null && echo WROTE $p >> /app/log; done; echo mine > /app/state.txt; true\n"
    )
    task = load_task(
        simple_task(
            tmp_path,
            dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\nRUN echo pristine > /app/state.txt\n",
            test_sh=REWARD_IF.format(cond="! grep -q WROTE /app/log 2>/dev/null && grep -qx mine /app/state.txt"),
            solve_sh=attack,
        )
    )
    builder = ImageBuilder(cache=scratch_cache(tmp_path), mode="debian", overlay=True)

    async def both():
        return await asyncio.gather(run_trial(task, OracleAgent(), builder), run_trial(task, NopAgent(), builder))

    oracle, nop = run(both())
    assert oracle.outcome is Outcome.PASSED, (oracle.exception, oracle.verifier_stdout[-800:])
    assert nop.outcome is Outcome.FAILED
    assert (run(builder.get(task)).rootfs / "app/state.txt").read_text() == "pristine\n"


# Modes the template holds must reach the trial as they are (an ssh key stays 0600); the agent's
# root may still change them, and what it changes stays in its own layer.
MODES_DOCKERFILE = (
    "FROM debian:bookworm-slim\nWORKDIR /app\n"
    "RUN mkdir -p /app/keys /app/shared && echo k > /app/keys/id && echo s > /app/locked && "
    "echo run > /app/tool && chmod 700 /app/keys && chmod 600 /app/keys/id && chmod 000 /app/locked && "
    "chmod 755 /app/tool && chmod 2775 /app/shared\n"
)
MODES_SEEN = (
    "stat -c '%n %a' /app/keys /app/keys/id /app/locked /app/tool /app/shared > /app/modes.txt; chmod 640 /app/tool\n"
)
MODES_WANT = "/app/keys 700\n/app/keys/id 600\n/app/locked 0\n/app/tool 755\n/app/shared 2775\n"


@pytest.mark.parametrize("overlay", [True, False], ids=["overlay", "copy"])
def test_a_trial_sees_the_template_modes(tmp_path, overlay):
    check = f"diff <(printf '{MODES_WANT}') /app/modes.txt && [ \"$(stat -c %a /app/tool)\" = 640 ]"
    task = load_task(
        simple_task(tmp_path, dockerfile=MODES_DOCKERFILE, test_sh=REWARD_IF.format(cond=check), solve_sh=MODES_SEEN)
    )
    builder = ImageBuilder(cache=scratch_cache(tmp_path), overlay=overlay)
    result = run(run_trial(task, OracleAgent(), builder))
    assert result.outcome is Outcome.PASSED, (result.exception, result.verifier_stdout[-800:])
    template = run(builder.get(task)).rootfs
    assert oct((template / "app/tool").stat().st_mode & 0o7777) == "0o755", "the agent's chmod reached the template"


def test_the_overlay_daemons_namespace_cannot_write_the_template_or_host_files(tmp_path):
    """What runs before bwrap (the daemon, our script) holds capabilities in its namespace: the
    template must be read-only there, and no host uid but the sandbox's and the template owner's
    may be mapped, so host root's files are as foreign to it as to any user."""
    import os
    import subprocess

    from agentmill.runtime.paths import scratch_temp
    from agentmill.sandbox.bwrap import _OVERLAY, overlay_launch_env, overlay_namespace_argv
    from agentmill.sandbox.overlay import own_template
    from agentmill.sandbox.uids import TEMPLATE_UID, lease_uid

    if os.geteuid() != 0:
        pytest.skip("the two-uid namespace is made as root")
    work = scratch_temp("ovl-probe")
    lower, upper, wk, merged = (work / n for n in ("lower", "upper", "work", "merged"))
    for d in (lower, upper, wk, merged):
        d.mkdir()
    (lower / "tmpl.txt").write_text("pristine\n")
    own_template(lower)
    host_file = work / "host-root.txt"
    host_file.write_text("root's\n")
    host_file.chmod(0o644)
    lease = lease_uid()
    try:
        for d in (upper, wk, merged):
            os.chown(d, lease.uid, lease.uid)
        probe = (
            f"cat /proc/self/uid_map; (echo x >> {lower}/tmpl.txt) 2>/dev/null && echo WROTE-TEMPLATE; "
            f"(echo x >> {host_file}) 2>/dev/null && echo WROTE-HOST; cat {merged}/tmpl.txt"
        )
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **overlay_launch_env(lease.uid)}
        r = subprocess.run(
            [
                *overlay_namespace_argv(lease.uid),
                "--",
                "/bin/sh",
                "-c",
                _OVERLAY,
                "sh",
                str(lower),
                str(upper),
                str(wk),
                str(merged),
                "/bin/sh",
                "-c",
                probe,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        lease.release()
        subprocess.run(["rm", "-rf", str(work)])
    maps = [line.split() for line in r.stdout.splitlines() if line.strip() and line.split()[0].isdigit()]
    assert maps == [["0", str(lease.uid), "1"], ["1", str(TEMPLATE_UID), "1"]], (r.stdout, r.stderr)
    assert "WROTE-TEMPLATE" not in r.stdout and "WROTE-HOST" not in r.stdout, r.stdout
    assert "pristine" in r.stdout, (r.stdout, r.stderr)


def test_auto_overlays_big_templates_only(tmp_path, monkeypatch):
    from agentmill.errors import AgentmillError
    from agentmill.images.trial_fs import OVERLAY_FROM, OVERLAY_FROM_BYTES, count_entries, overlay_setting

    small = load_task(simple_task(tmp_path, "small"))
    big = load_task(simple_task(tmp_path, "big", dockerfile=DOCKERFILE))
    monkeypatch.delenv("AGENTMILL_OVERLAY", raising=False)
    builder = ImageBuilder(cache=scratch_cache(tmp_path))
    small_image, big_image = run(builder.get(small)), run(builder.get(big))
    assert (small_image.overlay, big_image.overlay) == (False, True)
    assert big_image.template_entries == OVERLAY_FROM + 1 == count_entries(big_image.rootfs)
    assert small_image.template_entries == count_entries(small_image.rootfs) <= OVERLAY_FROM
    (tmp_path / "few-big-files").mkdir()
    (tmp_path / "few-big-files" / "blob").write_bytes(b"x" * (OVERLAY_FROM_BYTES + 1))
    assert count_entries(tmp_path / "few-big-files") == OVERLAY_FROM + 1, "bytes count as well as entries"
    monkeypatch.setenv("AGENTMILL_OVERLAY", "0")
    assert run(ImageBuilder(cache=builder.root.parent).get(big)).overlay is False
    monkeypatch.setenv("AGENTMILL_OVERLAY", "yes")
    with pytest.raises(AgentmillError, match="AGENTMILL_OVERLAY='yes'"):
        overlay_setting()
