"""One writer per run folder (rollout/lock.py): a real flock, real processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time

import pytest

from agentmill.rollout.lock import LOCK_NAME, RunLock, RunLockedError, live_holder, probe


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


def test_a_run_folder_whose_parents_do_not_exist_yet_is_made(tmp_path):
    with RunLock(tmp_path / "runs" / "today" / "run"):
        assert (tmp_path / "runs" / "today" / "run" / LOCK_NAME).is_file()


def test_the_lock_file_is_readable_by_all_and_writable_by_its_owner_only(tmp_path):
    old = os.umask(0o022)
    try:
        with RunLock(tmp_path):
            assert stat.S_IMODE((tmp_path / LOCK_NAME).stat().st_mode) == 0o644
    finally:
        os.umask(old)


def test_releasing_a_lock_never_acquired_is_harmless(tmp_path):
    RunLock(tmp_path).release()  # e.g. the `finally` of an acquire that was refused


def test_the_refusal_gives_the_holders_start_time_of_day(tmp_path):
    since = time.time() - 5.5 * 3600  # not the time of day now, so the holder's own time must be used
    with RunLock(tmp_path):
        (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": 4242, "host": "builder", "since": since}))
        with pytest.raises(RunLockedError) as e:
            RunLock(tmp_path).acquire()
    assert str(e.value) == (
        f"{tmp_path}: another agentmill rollout is using this run folder "
        f"(pid 4242 on host builder, since {time.strftime('%H:%M:%S', time.localtime(since))}); "
        "wait for it to finish or stop it, or use another --out folder"
    )


def test_live_holder_is_this_process_while_it_holds_the_folder(tmp_path):
    assert live_holder(tmp_path) is None  # no lock file
    with RunLock(tmp_path):
        assert live_holder(tmp_path) == os.getpid()
        assert live_holder(str(tmp_path)) == os.getpid()  # a path given as text too
    assert live_holder(tmp_path) is None  # released: this process no longer has the file open


@pytest.mark.parametrize(
    "text",
    ["", "not json", "[]", '{"host": "HOST"}', '{"pid": "many", "host": "HOST"}', '{"pid": null, "host": "HOST"}'],
)
def test_live_holder_of_an_unreadable_holder_text_is_none(tmp_path, text):
    (tmp_path / LOCK_NAME).write_text(text.replace("HOST", socket.gethostname()))
    assert live_holder(tmp_path) is None


def test_live_holder_of_another_host_is_none_even_when_the_pid_lives_here(tmp_path):
    with RunLock(tmp_path):
        (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": os.getpid(), "host": "elsewhere"}))
        assert live_holder(tmp_path) is None
        (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
        assert live_holder(tmp_path) == os.getpid()  # the honest twin: same file, this host


def test_live_holder_of_a_dead_or_unrelated_pid_is_none(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname()}))
    assert live_holder(tmp_path) is None
    # a live process that does not have the lock file open: a reused pid, not the holder
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": other.pid, "host": socket.gethostname()}))
        assert live_holder(tmp_path) is None
    finally:
        other.kill()
        other.wait()


def test_live_holder_sees_a_holder_in_another_process(tmp_path):
    code = (
        f"import time; from pathlib import Path; from agentmill.rollout.lock import RunLock; "
        f"RunLock(Path({str(tmp_path)!r})).acquire(); print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert live_holder(tmp_path) == holder.pid
    finally:
        holder.kill()
        holder.wait()
    assert live_holder(tmp_path) is None
