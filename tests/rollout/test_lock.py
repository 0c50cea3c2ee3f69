"""One writer per run folder (rollout/lock.py): a real flock, real processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from agentmill.rollout.lock import LOCK_NAME, RunLock, RunLockedError, probe


def test_a_second_holder_is_refused_with_the_first_ones_pid(tmp_path):
    first = RunLock(tmp_path / "run").acquire()
    holder = json.loads((tmp_path / "run" / LOCK_NAME).read_text())
    assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname() and holder["since"] <= time.time()
    with pytest.raises(RunLockedError) as e:
        RunLock(tmp_path / "run").acquire()
    assert f"pid {os.getpid()} on host {socket.gethostname()}, since " in str(e.value)
    assert str(tmp_path / "run") in str(e.value) and "another --out folder" in str(e.value)
    with pytest.raises(RunLockedError):
        probe(tmp_path / "run")
    first.release()
    first.release()  # twice is harmless
    with RunLock(tmp_path / "run"):  # released: the next one gets it
        with pytest.raises(RunLockedError):
            probe(tmp_path / "run")
    probe(tmp_path / "run")


def test_probe_of_a_fresh_folder_makes_nothing(tmp_path):
    probe(tmp_path / "never")
    assert not (tmp_path / "never").exists()


def test_the_lock_dies_with_its_holder(tmp_path):
    run = tmp_path / "run"
    code = (
        f"import sys, time; from agentmill.rollout.lock import RunLock; RunLock(__import__('pathlib').Path({str(run)!r})).acquire();"
        "print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunLockedError, match=f"pid {holder.pid} "):
            RunLock(run).acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with RunLock(run):  # kill -9 dropped it; the stale text blocks nothing
        assert json.loads((run / LOCK_NAME).read_text())["pid"] == os.getpid()


def test_a_longer_stale_holder_text_is_replaced_whole(tmp_path):
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": 1, "host": "x" * 500, "since": 0}) + "\n")
    with RunLock(tmp_path):
        assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()


def test_an_unreadable_holder_text_still_gives_a_message(tmp_path):
    with RunLock(tmp_path):
        (tmp_path / LOCK_NAME).write_text("not json")
        with pytest.raises(RunLockedError, match=r"pid \? on host \?\)"):
            RunLock(tmp_path).acquire()
