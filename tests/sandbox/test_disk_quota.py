"""The per-trial disk quota (sandbox/disk_quota.py): a trial's files live in a filesystem of its own,
storage_mb big. Attack: an agent writing many large files is stopped at the quota, the trial ends
agent_error, and the host's disk holds no more than the quota. Honest twin: a task writing a
moderate amount passes. (Planted: without the quota mount the attack wrote past it and passed.)"""

from __future__ import annotations

import asyncio
import errno
import os

import pytest

from agentmill.agents import OracleAgent
from agentmill.images import ImageBuilder
from agentmill.rollout import run_trial
from agentmill.runtime.paths import scratch_temp
from agentmill.sandbox.disk_quota import IMAGE, mount_quota, quota_available, remove_folder, unmount
from agentmill.tasks import TaskConfig, load_task
from agentmill.verify import Outcome
from tests.conftest import REWARD_IF, sandbox, scratch_cache, simple_task

needs_quota = pytest.mark.skipif(quota_available() is not None, reason=f"no disk quota here: {quota_available()}")
pytestmark = [sandbox, needs_quota]
MB = 1 << 20


def test_writes_stop_at_the_quota_and_the_host_holds_no_more(tmp_path):
    folder = scratch_temp("test-quota")
    try:
        quota = mount_quota(folder, 16)
        assert oct(os.stat(folder).st_mode & 0o777) == "0o711"  # the folder's own mode: sandbox uids traverse it
        assert not quota.full() and quota.free()[0] >= 16 * MB
        written = 0
        with pytest.raises(OSError) as e:
            for i in range(40):  # 40 MB asked, 16 allowed
                with open(folder / f"f{i}", "wb") as f:
                    for _ in range(4):
                        f.write(b"\1" * (MB // 4))
                        f.flush()
                        os.fsync(f.fileno())
                        written += MB // 4
        assert e.value.errno == errno.ENOSPC
        assert 15 * MB <= written <= 18 * MB and quota.full()
        assert os.path.ismount(folder)
        unmount(folder)  # the host's side: what the image file holds on the host's disk
        assert os.stat(folder / IMAGE).st_blocks * 512 <= 20 * MB
    finally:
        remove_folder(folder)
    assert not folder.exists()


def test_the_image_is_sparse_and_gone_after_removal(tmp_path):
    folder = scratch_temp("test-quota")
    try:
        mount_quota(folder, 1024)
        (folder / "small").write_bytes(b"x" * 4096)
        unmount(folder)
        image = os.stat(folder / IMAGE)
        assert image.st_size > 1024 * MB and image.st_blocks * 512 < 64 * MB  # a 1 GB quota costs MBs until used
    finally:
        remove_folder(folder)
    assert not folder.exists()


def _trial(tmp_path, solve_sh, storage_mb, test_sh=None):
    cfg = TaskConfig.model_validate({"environment": {"storage_mb": storage_mb}, "agent": {"timeout_sec": 60}})
    task = load_task(simple_task(tmp_path, solve_sh=solve_sh, config=cfg, test_sh=test_sh))
    return asyncio.run(run_trial(task, OracleAgent(), ImageBuilder(cache=scratch_cache(tmp_path))))


def test_an_agent_filling_the_disk_is_stopped_and_the_trial_is_its_error(tmp_path):
    fill = (
        "echo hello > /app/out.txt\n"
        "for i in $(seq 1 40); do head -c 8M /dev/zero > /app/f$i || break; done\n"
        "mkdir -p /root/more && for i in $(seq 1 40); do head -c 8M /dev/zero > /root/more/g$i || break; done\n"
        "sleep 5\n"
    )
    r = _trial(tmp_path, fill, storage_mb=48)
    assert r.outcome is Outcome.AGENT_ERROR and not r.outcome.is_infra, (r.outcome, r.exception)
    assert "disk quota exceeded" in r.exception and "48 MB" in r.exception
    assert r.reward is None and r.timings.agent < 5  # stopped when full, not left to its sleep


def test_a_task_writing_a_moderate_amount_passes(tmp_path):
    write = "echo hello > /app/out.txt; head -c 20M /dev/urandom > /app/data.bin\n"
    test_sh = REWARD_IF.format(cond="grep -qx hello /app/out.txt && [ $(stat -c %s /app/data.bin) = 20971520 ]")
    r = _trial(tmp_path, write, storage_mb=48, test_sh=test_sh)
    assert r.outcome is Outcome.PASSED and r.reward == 1.0, (r.outcome, r.exception)


def test_a_dead_processs_mounted_quota_is_swept():
    from agentmill.runtime.paths import scratch_dir, sweep_scratch

    folder = scratch_dir() / "trial-4194303999-deadbeef"  # no such pid
    folder.mkdir(mode=0o711)
    mount_quota(folder, 8)
    (folder / "rootfs").mkdir()
    sweep_scratch()
    assert not os.path.ismount(folder) and not folder.exists()
