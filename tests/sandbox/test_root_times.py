"""Starting a trial's sandbox leaves `/` as the image left it: an agent's first `ls -la` shows the
same times in every run (a real model's next reply depends on what it saw)."""

from __future__ import annotations

import asyncio

import pytest

from agentmill.images import ImageBuilder
from agentmill.sandbox.registry import create_sandbox
from agentmill.tasks import load_task
from tests.conftest import sandbox, scratch_cache, simple_task

pytestmark = sandbox
SEEN = "stat -c '%n %Y' / /.agentmill /app /logs"


async def _seen_twice(image, where) -> list[str]:
    seen = []
    for i in range(2):
        rootfs = image.instantiate(where / f"trial{i}")
        logs = where / f"logs{i}"
        logs.mkdir()
        async with create_sandbox(image.spec(rootfs, rw_mounts={"/logs/agent": logs})) as sb:  # as a trial mounts
            r = await sb.exec(SEEN)
            assert r.returncode == 0, r.stderr
            seen.append(r.stdout)
        await asyncio.sleep(1.1)  # a later second: any time taken from the clock would differ
    return seen


@pytest.mark.parametrize("overlay", [False, True], ids=["copy", "overlay"])
def test_two_trials_of_one_image_see_the_same_root_times(tmp_path, overlay):
    if overlay:
        from agentmill.images.trial_fs import overlay_available

        if not overlay_available():
            pytest.skip("fuse-overlayfs not available")
    task = load_task(simple_task(tmp_path))
    cache = scratch_cache(tmp_path)  # sandbox uids can reach it (pytest's tmp dirs are 0700)
    image = asyncio.run(ImageBuilder(cache=cache, overlay=overlay).get(task))
    first, second = asyncio.run(_seen_twice(image, cache))
    assert first == second


def test_restoring_times_never_follows_a_link_the_agent_left(tmp_path):
    # The verifier's sandbox starts over the agent's tree: a link at /tests or /logs must not
    # carry the restored times to what it points at on the host.
    import os

    from agentmill.sandbox.bwrap import _keep_root_times
    from agentmill.sandbox.protocol import SandboxSpec

    rootfs, host_file = tmp_path / "rootfs", tmp_path / "host.txt"
    rootfs.mkdir()
    host_file.write_text("host\n")
    os.utime(host_file, ns=(5_000_000_000, 5_000_000_000))
    (rootfs / "tests").symlink_to(host_file)
    (rootfs / "logs").symlink_to(tmp_path)
    spec = SandboxSpec(rootfs=rootfs, ro_mounts={"/tests": tmp_path}, rw_mounts={"/logs/verifier": tmp_path})
    _keep_root_times(spec, (7_000_000_000, 7_000_000_000))
    assert host_file.stat().st_mtime_ns == 5_000_000_000
    assert tmp_path.stat().st_mtime_ns != 7_000_000_000
    assert rootfs.stat().st_mtime_ns == 7_000_000_000  # our own root does get them
