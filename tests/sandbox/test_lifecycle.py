"""The fast sandbox lifecycle keeps every guarantee of the slow one.

- launch: the exec chain leaves bwrap (and all it starts) in the sandbox's cgroups, under its
  rlimits, as its uid with no groups and no capabilities; each step left out is caught.
- stop: returns only once every process is gone, a double-forked daemon, a new session, a
  signal-ignoring process and a fork storm included; the cgroup kill itself is shown reaching
  orphans that no process group or pid namespace would (a process-group kill, planted, does not).
- readiness: told by inotify (and by polling without it); nothing but the guest's own socket in the
  control folder counts, and nothing a task image contains can stand in for it; once started, the
  host reaches the guest through its pinned socket, so the agent cannot redirect the host's requests.
- chown of a sandbox's tree: links themselves, never their targets, in-process and past the budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from agentmill.errors import SandboxError
from agentmill.runtime.paths import scratch_temp
from agentmill.sandbox import BwrapSandbox, Limits, bwrap, launcher, sockets, watch
from agentmill.sandbox.bwrap import launch_argv
from agentmill.sandbox.limits import Cgroup, wait_unpopulated
from agentmill.sandbox.uids import lease_uid
from tests.conftest import sandbox
from tests.sandbox.helpers import fresh_spec, launcher_carrying_privileges, proc_status, run

pytestmark = sandbox
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="sandboxes get their own uids and cgroups only as root")

LIMITS = Limits(memory_mb=300, pids=77, nofile=555, storage_mb=33)


_PF_EXITING = 0x4


def _live_pids_of_uid(uid: int) -> list[int]:
    """Processes of `uid` that can still run code: not zombies, and not in the kernel's exit path
    (a pid namespace's init, for one, is listed for a moment after it has released everything)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid != uid:
                    continue
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if fields[0] not in ("Z", "X") and not int(fields[6]) & _PF_EXITING:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                pass
    return found


def _launch_problems(pid: int, uid: int, limits: Limits, cgroup_dirs: list[Path]) -> list[str]:
    """What is wrong with how a sandbox process was launched, as seen from the host."""
    problems = []
    st = proc_status(pid)
    if st["Uid"].split() != [str(uid)] * 4 or st["Gid"].split() != [str(uid)] * 4:
        problems.append(f"uid/gid: {st['Uid']} / {st['Gid']}")
    if st.get("Groups", "").strip():
        problems.append(f"groups: {st['Groups']}")
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        if int(st[cap], 16):
            problems.append(f"{cap}: {st[cap]}")
    want = {
        "Max processes": limits.pids,
        "Max open files": limits.nofile,
        "Max file size": limits.storage_mb << 20,
        "Max core file size": 0,
        "Max address space": (limits.memory_mb + 1024) << 20,
    }
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines()[1:]:
        for name, value in want.items():
            if line.startswith(name) and line[len(name) :].split()[:2] != [str(value)] * 2:
                problems.append(f"{name}: {line[len(name) :].split()[:2]}, want {value}")
    members = {d for d in cgroup_dirs if str(pid) in (d / "cgroup.procs").read_text().split()}
    if members != set(cgroup_dirs):
        problems.append(f"cgroups: not in {sorted(map(str, set(cgroup_dirs) - members))}")
    return problems


async def _launched(limits: Limits) -> list[str]:
    async with BwrapSandbox(fresh_spec(limits=limits)) as sb:
        r = await sb.exec("sleep 30 >/dev/null 2>&1 & echo $!", timeout=10)
        assert r.returncode == 0, r.stderr
        pids = [sb._proc.pid, *(p for p in _live_pids_of_uid(sb.uid) if p != sb._proc.pid)]
        assert len(pids) >= 3, "bwrap, the guest and the sleep must be running"
        return [
            f"pid {p}: {problem}" for p in pids for problem in _launch_problems(p, sb.uid, limits, sb._cgroup.paths)
        ]


@pytest.fixture(params=["launcher", "chain"])
def launch_mode(request, monkeypatch):
    """Both ways a sandbox starts: the launcher process (default; started fresh, carrying what a
    sandbox must lose, tests/sandbox/helpers.py) and the chain of programs."""
    monkeypatch.setenv(launcher.LAUNCHER_ENV, "1" if request.param == "launcher" else "0")
    if request.param == "launcher" and os.geteuid() == 0:
        with launcher_carrying_privileges():
            yield request.param
    else:
        yield request.param


@as_root
def test_launch_sets_cgroups_rlimits_uid_and_no_capabilities(launch_mode):
    assert run(_launched(LIMITS)) == []


def _setpriv_edited(monkeypatch, edit) -> None:
    real = bwrap._drop_privileges
    monkeypatch.setattr(bwrap, "_drop_privileges", lambda uid: edit(real(uid)))


def _step_left_out(monkeypatch, step: str) -> None:
    monkeypatch.setattr(launcher, "DROP_STEPS", [s for s in launcher.DROP_STEPS if s != step])


_PLANTED = {  # a launch step left out, by each way -> what the check must say
    "bounding set kept": (
        {
            "chain": lambda mp: _setpriv_edited(mp, lambda a: [x for x in a if x != "--bounding-set=-all"]),
            "launcher": lambda mp: _step_left_out(mp, "bounding"),
        },
        "CapBnd",
    ),
    "groups kept": (
        {
            "chain": lambda mp: _setpriv_edited(
                mp, lambda a: [("--groups=0" if x == "--clear-groups" else x) for x in a]
            ),
            "launcher": lambda mp: _step_left_out(mp, "groups"),
        },
        "groups",
    ),
    "no rlimits": (
        {
            "chain": lambda mp: mp.setattr(bwrap, "prlimit_args", lambda limits, **kw: []),
            "launcher": lambda mp: mp.setattr(bwrap, "rlimit_values", lambda limits, **kw: {}),
        },
        "Max processes",
    ),
    "no cgroups joined": (
        {
            "chain": lambda mp: mp.setattr(Cgroup, "procs_files", lambda self: []),
            "launcher": lambda mp: mp.setattr(Cgroup, "procs_files", lambda self: []),
        },
        "cgroups",
    ),
}


@as_root
@pytest.mark.parametrize("defect", sorted(_PLANTED))
def test_launch_check_catches_a_step_left_out(monkeypatch, launch_mode, defect):
    plants, caught = _PLANTED[defect]
    plants[launch_mode](monkeypatch)
    problems = run(_launched(LIMITS))
    assert any(caught in p for p in problems), problems


@as_root
def test_launch_failure_is_reported_not_run(monkeypatch, launch_mode):
    monkeypatch.setattr(Cgroup, "procs_files", lambda self: ["/nonexistent/agentmill/cgroup.procs"])

    async def go():
        async with BwrapSandbox(fresh_spec()):
            pass

    with pytest.raises(SandboxError, match="sandbox failed to start: .*nonexistent"):
        run(go())


# -- stop ------------------------------------------------------------------------------------------

HOSTILE = (
    "( setsid sh -c 'sleep 1001 & exit 0' & ) ; "  # double-forked daemon in a new session
    "nohup setsid sleep 1002 >/dev/null 2>&1 < /dev/null & "  # a new session
    "( trap '' TERM HUP INT; exec sleep 1003 ) >/dev/null 2>&1 & "  # ignores every catchable signal
    "( while :; do ( sleep 1004 & ) ; done ) >/dev/null 2>&1 & "  # keeps forking until the pids limit
    "sleep 0.5; echo planted"
)


@as_root
def test_stop_returns_with_every_process_gone():
    async def go():
        sb = BwrapSandbox(fresh_spec(limits=Limits(pids=48)))
        await sb.start()
        uid, groups = sb.uid, list(sb._cgroup.paths)
        r = await sb.exec(HOSTILE, timeout=20)
        assert "planted" in r.stdout, r.stderr
        before = len(_live_pids_of_uid(uid))
        await sb.stop()
        return before, _live_pids_of_uid(uid), [g for g in groups if g.exists()]  # read at once, no waiting

    before, left, groups_left = run(go())
    assert before >= 10, "the hostile processes should have been running"
    assert left == [], f"processes alive when stop() returned: {left}"
    assert groups_left == []


def _spawn_escapers(cgroup: Cgroup, uid: int) -> subprocess.Popen:
    """On the host, as `uid`, in `cgroup`: a launcher that leaves a daemon, a new session and a fork
    storm behind and exits, so they are orphans in no pid namespace and in no process group of ours."""
    script = HOSTILE.replace("sleep 0.5; echo planted", "sleep 0.3")
    proc = subprocess.Popen(
        [*launch_argv(cgroup.procs_files(), Limits(pids=48), uid), "/bin/bash", "-c", script],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    proc.wait(timeout=20)
    return proc


def _group_kill_only(proc: subprocess.Popen) -> None:
    """A stop that kills the launcher's process group and trusts that to be everything."""
    try:
        os.killpg(proc.pid, 9)
    except ProcessLookupError:
        pass


@as_root
@pytest.mark.parametrize("how", ["cgroup.kill", "v1 pid loop", "planted: process group kill only"])
def test_cgroup_kill_reaches_orphaned_daemons_and_fork_storms(how):
    lease = lease_uid()
    cgroup = Cgroup(f"test-escape-{os.urandom(4).hex()}-{os.getpid()}", Limits(pids=48))
    if not cgroup.paths:
        pytest.skip("cgroups are not writable here")
    if how == "cgroup.kill" and cgroup.tracker is None:
        pytest.skip("no cgroup v2 group with cgroup.kill here (kernel < 5.14 or no unified hierarchy)")
    if how == "v1 pid loop":
        cgroup.tracker = None
    try:
        proc = _spawn_escapers(cgroup, lease.uid)
        assert len(_live_pids_of_uid(lease.uid)) >= 4, "the orphans should be running"
        if how.startswith("planted"):
            _group_kill_only(proc)
            time.sleep(0.2)
            assert _live_pids_of_uid(lease.uid), "a process-group kill must be seen to leave the orphans running"
        else:
            assert cgroup.kill_all(wait=10)
            assert _live_pids_of_uid(lease.uid) == []
    finally:
        cgroup.tracker = None
        cgroup.kill_all(wait=10)
        cgroup.remove()
        lease.release()


@as_root
def test_wait_unpopulated_waits_for_the_last_process():
    cgroup = Cgroup(f"test-events-{os.urandom(4).hex()}-{os.getpid()}", Limits())
    if cgroup.tracker is None:
        pytest.skip("no cgroup v2 group with cgroup.kill here")
    lease = lease_uid()
    try:
        proc = subprocess.Popen([*launch_argv(cgroup.procs_files(), Limits(), lease.uid), "sleep", "30"])
        events = cgroup.tracker / "cgroup.events"
        deadline = time.monotonic() + 10
        joined = cgroup.tracker / "cgroup.procs"
        while str(proc.pid) not in joined.read_text().split() and time.monotonic() < deadline:  # joins as it starts
            time.sleep(0.01)
        assert not wait_unpopulated(events, time.monotonic() + 0.3), "a live process: populated"
        proc.kill()
        proc.wait()
        assert wait_unpopulated(events, time.monotonic() + 5)
    finally:
        cgroup.kill_all()
        cgroup.remove()
        lease.release()


# -- readiness -------------------------------------------------------------------------------------


def test_readiness_without_inotify_falls_back_to_polling(monkeypatch):
    monkeypatch.setattr(watch, "_inotify_fd", lambda directory: None)

    async def go():
        async with BwrapSandbox(fresh_spec()) as sb:
            return (await sb.exec("echo up", timeout=10)).stdout

    assert run(go()) == "up\n"


def test_wait_for_name_sees_a_rename_and_gives_up(tmp_path):
    async def go():
        loop = asyncio.get_running_loop()
        never = loop.create_future()
        (tmp_path / "sock.tmp").write_text("x")
        loop.call_later(0.05, os.rename, tmp_path / "sock.tmp", tmp_path / "sock")
        seen = await watch.wait_for_name(tmp_path, "sock", give_up=never, timeout=5)
        other = await watch.wait_for_name(tmp_path, "absent", give_up=never, timeout=0.1)
        died = loop.create_future()
        loop.call_later(0.05, died.set_result, None)
        gave_up = await watch.wait_for_name(tmp_path, "absent", give_up=died, timeout=5)
        return seen, other, gave_up

    assert run(go()) == (True, False, False)


def _guest_replaced_by(monkeypatch, command: str) -> None:
    """The sandbox's first process is `command` instead of the guest server (a hostile image's python3)."""
    real_argv = BwrapSandbox._argv

    def argv(self, *args):
        full = real_argv(self, *args)
        at = full.index("/usr/bin/python3")
        return [*full[:at], "/bin/sh", "-c", command]

    monkeypatch.setattr(BwrapSandbox, "_argv", argv)


@pytest.mark.parametrize("planted", [False, True])
def test_a_file_named_like_the_socket_is_not_readiness(monkeypatch, planted):
    _guest_replaced_by(monkeypatch, f"echo forged > {bwrap.CTL_DIR}/sock; ln -s /run {bwrap.CTL_DIR}/s2; sleep 30")
    if planted:  # a host that takes any entry of that name for the guest's socket
        monkeypatch.setattr(sockets, "is_sandbox_socket", lambda st, uid: True)

    async def go():
        async with BwrapSandbox(fresh_spec()):
            return "started"

    if planted:
        assert run(go()) == "started"
    else:
        with pytest.raises(SandboxError, match="is not the guest's socket"):
            run(go())


class _ByName(BwrapSandbox):
    """Planted: connects through the control folder's name, as the sandbox left it."""

    @property
    def guest_socket(self):
        return None if self._guest_fd is None else self.control_dir / "sock"


@pytest.mark.parametrize("backend", [BwrapSandbox, _ByName])
def test_the_agent_cannot_redirect_the_hosts_requests(backend):
    """The agent replaces the guest's socket name with a link to a host socket of its choosing; the
    host's next request must still reach the guest, and the decoy must hear nothing."""
    decoy_dir = scratch_temp("test")
    decoy = socket.socket(socket.AF_UNIX)
    decoy.bind(str(decoy_dir / "decoy.sock"))
    decoy.listen(4)
    heard: list[bytes] = []
    forged = (
        b'{"ok": true, "returncode": 0, "stdout": "Zm9yZ2VkCg==", "stderr": "", "timed_out": false, "duration": 0}\n'
    )

    def serve():
        decoy.settimeout(5)
        with contextlib.suppress(OSError):
            conn, _ = decoy.accept()
            heard.append(conn.recv(65536))
            conn.sendall(forged)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    async def go():
        async with backend(fresh_spec()) as sb:
            await sb.exec(
                f"mv {bwrap.CTL_DIR}/sock {bwrap.CTL_DIR}/moved && ln -s {decoy_dir}/decoy.sock {bwrap.CTL_DIR}/sock",
                timeout=10,
            )
            return (await sb.exec("echo from-the-guest", timeout=10)).stdout

    try:
        out = run(go())
    finally:
        decoy.close()
        thread.join()
    if backend is _ByName:  # the planted host believes the decoy
        assert out == "forged\n" and heard
    else:
        assert out == "from-the-guest\n" and heard == []


def test_a_socket_inside_the_task_image_is_not_readiness(monkeypatch):
    monkeypatch.setattr(bwrap, "START_TIMEOUT", 1.5)
    _guest_replaced_by(monkeypatch, "sleep 30")  # a guest that never binds
    spec = fresh_spec()
    planted = spec.rootfs / bwrap.CTL_DIR.lstrip("/")
    planted.mkdir(parents=True)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(planted / "sock"))
    listener.listen(1)

    async def go():
        async with BwrapSandbox(spec):
            pass

    try:
        with pytest.raises(SandboxError, match="did not start within"):
            run(go())
    finally:
        listener.close()


# -- chown -----------------------------------------------------------------------------------------


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "secret").write_text("s")
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f").write_text("f")
    (root / "top").write_text("t")
    (root / "a" / "to-dir").symlink_to(outside)
    (root / "a" / "to-file").symlink_to(outside / "deep" / "secret")
    (root / "dangling").symlink_to(tmp_path / "nowhere")
    return root, outside


def _owners(path: Path) -> dict[str, int]:
    found = {".": os.lstat(path).st_uid}
    for dirpath, dirs, files in os.walk(path):
        for name in dirs + files:
            p = Path(dirpath) / name
            found[str(p.relative_to(path))] = os.lstat(p).st_uid
    return found


@as_root
@pytest.mark.parametrize("budget", [bwrap._CHOWN_IN_PROCESS, 2])  # in this process / chown -R past the budget
def test_chown_tree_changes_links_not_their_targets(monkeypatch, tmp_path, budget):
    monkeypatch.setattr(bwrap, "_CHOWN_IN_PROCESS", budget)
    root, outside = _tree(tmp_path)
    bwrap._chown_tree(root, 200_123)
    assert set(_owners(root).values()) == {200_123}
    assert set(_owners(outside).values()) == {0}, "a link's target must stay as it was"


@as_root
def test_chown_tree_check_catches_a_chown_that_follows_links(monkeypatch, tmp_path):
    root, outside = _tree(tmp_path)
    follows = os.chown
    monkeypatch.setattr(os, "lchown", lambda p, u, g: follows(p, u, g) if os.path.exists(p) else None)
    bwrap._chown_tree(root, 200_123)
    assert 200_123 in _owners(outside).values()
