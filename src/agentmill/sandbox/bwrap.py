"""The embedded sandbox: bubblewrap, run as an unprivileged uid, one long-lived guest per sandbox.

Layout inside: the spec's rootfs is `/` (writable: the one workspace), the host's `/usr` and
`/etc` are read-only, `/usr/local` is the image's layer, `/tmp` is private, `/proc` and `/dev`
are fresh. No network unless the spec asks: the host's for image builds, a user-mode one that reaches
public addresses only for an agent whose task allows the internet (sandbox/internet.py). The guest exec server
(guest/server.py) is the sandbox's first process; killing it tears the whole pid namespace down.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import stat
import subprocess
import time
import uuid
from pathlib import Path

from agentmill.errors import GuestError, SandboxError
from agentmill.runtime.child_processes import spawn
from agentmill.runtime.loops import PerLoop
from agentmill.runtime.paths import package_assets, scratch_temp
from agentmill.sandbox.guest_code import GUEST_DIR, guest_assets, guest_launch_argv
from agentmill.sandbox.internet import RESOLV_CONF, firewall_rules, host_networks, internet_argv, require_internet_tools
from agentmill.sandbox.launcher import LaunchPlan, launch, launcher_wanted
from agentmill.sandbox.limits import Cgroup, prlimit_args, rlimit_values
from agentmill.sandbox.protocol import Capability, ExecResult, Limits, SandboxSpec
from agentmill.sandbox.registry import sandbox_backend
from agentmill.sandbox.sockets import pin_socket, pinned_path
from agentmill.sandbox.uids import TEMPLATE_UID, UidLease, lease_uid
from agentmill.sandbox.watch import wait_for_name

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CTL_DIR = "/.agentmill/ctl"
START_TIMEOUT = 20.0
# Sandboxes booting at once: hundreds started together would each take longer than the start
# timeout on a small machine; past this many they queue (the timeout counts from their turn).
START_SLOTS = max(4, 2 * (os.cpu_count() or 1))
_start_gate = PerLoop(lambda: asyncio.Semaphore(START_SLOTS))  # one per loop: trainer threads each have one
_RPC_GRACE = 10.0  # the guest enforces exec timeouts; the host waits this much longer before giving up
ROOT_SKELETON = ("usr", "etc", "proc", "dev", "tmp", "root", "var", "var/lib/dpkg", "home", "opt", "srv", "mnt", "run")
ROOT_SYMLINKS = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}
# Overlay sandboxes: fuse-overlayfs mounts the template (lower) under the sandbox's changes (upper)
# inside a user namespace, then bwrap runs over the merged tree. Files appear owned by the
# sandbox's root (squash_to_root) with their template modes. The template is bound read-only in
# the daemon's namespace first, so not even a subverted daemon can write it.
LAUNCH_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"  # all a sandbox's launch chain needs, nothing of the host's
_OVERLAY = f"""lower=$1 upper=$2 work=$3 merged=$4; shift 4
mount --bind -o ro "$lower" "$lower" || {{ echo "overlay: cannot protect the template" >&2; exit 1; }}
fuse-overlayfs -o "lowerdir=$lower,upperdir=$upper,workdir=$work,squash_to_root" "$merged" || exit 1
unset AGENTMILL_IDMAP; PATH={LAUNCH_PATH}
exec "$@"
"""


_tools_found: set[bool] = set()  # `overlay` values already checked: a PATH search per start adds up


def require_tools(overlay: bool = False) -> None:
    if overlay in _tools_found:
        return
    missing = [t for t in ("bwrap", "prlimit") if shutil.which(t) is None]
    if overlay:
        missing += [t for t in ("fuse-overlayfs", "unshare", "mount") if shutil.which(t) is None]
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        missing.append("setpriv")
    if missing:
        raise SandboxError(
            f"missing host tools: {', '.join(missing)} (install: apt-get install -y bubblewrap util-linux"
            f"{' fuse-overlayfs' if overlay else ''})"
        )
    _tools_found.add(overlay)


def prepare_root(rootfs: Path) -> None:
    """Mount points and the usual /bin -> usr/bin links, so bwrap never has to create them.

    Made in the image's template too, so a trial's copy already has them and starting its sandbox
    leaves `/` as the image left it: an agent's `ls -la` shows the same times in every run."""
    rootfs.chmod(0o755)
    for d in ROOT_SKELETON:
        (rootfs / d).mkdir(parents=True, exist_ok=True)
    ours = rootfs / GUEST_DIR.lstrip("/").split("/")[0]
    if not ours.is_dir():
        ours.mkdir(mode=0o700)
    for point in (GUEST_DIR, CTL_DIR):
        (rootfs / point.lstrip("/")).mkdir(exist_ok=True)
    for name, target in ROOT_SYMLINKS.items():
        link = rootfs / name
        if not link.is_symlink() and not link.exists():
            link.symlink_to(target)


def _keep_root_times(spec: SandboxSpec, times: tuple[int, int]) -> None:
    """Give `/` and the top-level folders made for mounts (/logs, /tests, /.agentmill) the image's
    times again after start: the agent's `ls -la` then shows the same in every run. Only names
    directly under our own root folder are touched, never through a link; the agent's commands
    start only after this."""
    names = {inside.lstrip("/").split("/")[0] for inside in (GUEST_DIR, CTL_DIR, *spec.ro_mounts, *spec.rw_mounts)}
    for path in (spec.rootfs, *(spec.rootfs / name for name in names)):
        with contextlib.suppress(OSError):
            os.utime(path, ns=times, follow_symlinks=False)


_CHOWN_IN_PROCESS = 2048  # entries; a bigger tree goes to `chown -R`, which walks it without Python


def _chown_tree(path: Path, uid: int) -> None:
    """`chown -R -h uid:uid path`: links themselves, never what they point at; no descent into them."""
    if os.geteuid() != 0:
        return
    if not _chown_small_tree(path, uid):
        subprocess.run(["chown", "-R", "-h", f"{uid}:{uid}", str(path)], check=True)


def _chown_small_tree(path: Path, uid: int) -> bool:
    """The same in this process (no program start-up) while the tree is small; False past the budget."""
    os.lchown(path, uid, uid)
    if not stat.S_ISDIR(os.lstat(path).st_mode):
        return True
    left, folders = _CHOWN_IN_PROCESS, [str(path)]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                left -= 1
                if left < 0:
                    return False
                os.lchown(entry.path, uid, uid)
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
    return True


def launch_argv(cgroup_procs: list[str], limits: Limits, uid: int | None) -> list[str]:
    """The exec chain in front of bwrap: join the cgroups (sh, still root), rlimits (prlimit), then
    (as root) drop to the sandbox's uid with no groups and no capabilities (setpriv).

    A chain of small programs, not a preexec_fn: that would make subprocess fork our whole
    process instead of vfork-ing it (measured 2.5 ms of event-loop time per start at 46 MB of
    resident memory, growing with it), for about the CPU the chain's three execs cost.
    """
    enter = " ".join(f"echo $$ > {f} &&" for f in cgroup_procs)
    argv = ["/bin/sh", "-c", f'{enter} exec "$@"', "sh", "prlimit", *prlimit_args(limits), "--"]
    if uid is not None:
        argv += ["setpriv", *_drop_privileges(uid), "--"]
    return argv


def _drop_privileges(uid: int) -> list[str]:
    return [f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]


def overlay_namespace_argv(uid: int | None) -> list[str]:
    """The user and mount namespace the overlay's daemon mounts in, entered as the sandbox's uid.

    As root: the sandbox's uid is the namespace's root and the template's owner (TEMPLATE_UID) is
    mapped beside it, so the daemon reads every template file with its own mode (0700 stays 0700)
    while no other host uid, root's included, is visible to it. unshare sets the ids after the
    maps are written, before its exec, so the capabilities to mount survive. Without root: a
    namespace of our own uid, which owns the template."""
    if uid is None:
        return ["unshare", "--user", "--map-root-user", "--mount"]
    return ["unshare", f"--map-users={uid},0,1", f"--map-groups={uid},0,1", "--setuid", "0", "--setgid", "0", "--mount"]


def overlay_launch_env(uid: int | None) -> dict[str, str]:
    """unshare finds our map writer (sandbox/idmap) first on PATH, and it writes this map."""
    if uid is None:
        return {}
    return {"PATH": f"{package_assets('idmap')}:{LAUNCH_PATH}", "AGENTMILL_IDMAP": f"0 {uid} 1\\n1 {TEMPLATE_UID} 1\\n"}


def _clean_up(
    cgroup: Cgroup | None,
    ovl: Path | None,
    ctl: Path | None,
    stderr_path: Path | None,
    guest_fd: int | None,
    work: Path | None = None,
) -> None:
    if guest_fd is not None:  # the socket's last reference: its release is kernel work, kept off the loop
        os.close(guest_fd)
    if cgroup is not None:
        cgroup.kill_all()
        cgroup.remove()
    if ovl is not None:  # its mount namespace died with the sandbox's processes
        shutil.rmtree(ovl, ignore_errors=True)
    if work is not None:
        shutil.rmtree(work, ignore_errors=True)
    if ctl is not None:
        shutil.rmtree(ctl, ignore_errors=True)
    if stderr_path is not None:
        for path in (stderr_path, stderr_path.with_suffix(".resolv")):
            with contextlib.suppress(OSError):
                path.unlink()


@sandbox_backend("bwrap")
class BwrapSandbox:
    """A bubblewrap sandbox. Use `async with BwrapSandbox(spec) as sb:` or start()/stop()."""

    capabilities = frozenset(
        {Capability.ONE_COMMAND, Capability.CONTROL_DIR, Capability.GUEST_SOCKET, Capability.INTERNET}
    )

    def __init__(self, spec: SandboxSpec, *, name: str | None = None):
        self.spec = spec
        self.name = name or uuid.uuid4().hex[:12]
        self._proc: asyncio.subprocess.Process | None = None
        self._lease: UidLease | None = None
        self._cgroup: Cgroup | None = None
        self._ctl: Path | None = None
        self._ovl: Path | None = None
        self._work: Path | None = None  # the overlay's work folder: on the upper layer's filesystem
        self._stderr_path: Path | None = None
        self._guest_fd: int | None = None
        self._firewall = ""  # the internet's nftables rules (spec.internet), made as it starts
        self.started_at = 0.0

    @property
    def uid(self) -> int:
        assert self._lease is not None
        return self._lease.uid

    async def __aenter__(self) -> BwrapSandbox:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Boot the guest exec server as the sandbox's first process; return once it listens."""
        await self._boot(guest_launch_argv(f"{CTL_DIR}/sock"), self.base_env(), self.spec.workdir)

    async def start_command(
        self, argv: list[str], env: dict[str, str], cwd: str | None, *, stdin: int
    ) -> asyncio.subprocess.Process:
        """Start the sandbox with `argv` as its first process instead of the guest (see
        sandbox/command.py): `stdin` is its fd 0, its stdout and stderr are the returned process's
        pipes, and its exit ends the sandbox. `env` is its whole environment. stop() after, as always."""
        return await self._boot(argv, env, cwd, stdin=stdin)

    async def _boot(
        self, inner: list[str], env: dict[str, str], cwd: str | None, *, stdin: int | None = None
    ) -> asyncio.subprocess.Process:
        """stdin None: the guest's boot (stderr to a file, wait until it listens); else a
        command's (that fd as its stdin, stdout and stderr piped, no wait). Returns its first process."""
        spec = self.spec
        require_tools(overlay=spec.lower is not None)
        st = (spec.lower or spec.rootfs).stat()  # the image's times, before the mounts change them
        image_times = (st.st_atime_ns, st.st_mtime_ns)
        self._lease = lease_uid()
        try:
            async with _start_gate.get():
                # chown, folders, the cgroup: file-system work, off the event loop (one hop)
                await asyncio.to_thread(self._prepare)
                if spec.lower is not None:  # its daemon caches what it first sees: before it starts
                    _keep_root_times(spec, image_times)
                command = stdin is not None
                assert self._stderr_path is not None  # made by _prepare
                with open(self._stderr_path, "wb") as err:
                    stdio = dict(
                        stdin=stdin if command else subprocess.DEVNULL,
                        stdout=subprocess.PIPE if command else subprocess.DEVNULL,
                        stderr=subprocess.PIPE if command else err,
                    )
                    self._proc = proc = await self._launch(self._argv(inner, env, cwd), stdio)
                if not command:
                    await self._wait_ready()
            if spec.lower is None and not command:  # bwrap made a copy's mount points as it started
                _keep_root_times(spec, image_times)
            self.started_at = time.monotonic()
        except BaseException:
            await self.stop()
            raise
        return proc

    def _prepare(self) -> None:
        self._prepare_host()
        self._prepare_control()

    def _prepare_control(self) -> None:
        """The control folder (the guest's socket), the overlay's folders, the cgroup."""
        self._ctl = scratch_temp("ctl")
        os.chmod(self._ctl, 0o700)
        _chown_tree(self._ctl, self.uid)
        self._stderr_path = self._ctl.with_suffix(".stderr")  # beside, not inside: the guest sees ctl/
        if self.spec.internet:  # the host's addresses as they are now: a lease renewed since counts
            require_internet_tools()
            self._firewall = firewall_rules(host_networks())
            self._resolv_path.write_text(RESOLV_CONF)
            self._resolv_path.chmod(0o644)
        if self.spec.lower is not None:
            self._ovl = self._ctl.with_suffix(".ovl")
            for sub in ("work", "merged"):
                (self._ovl / sub).mkdir(parents=True, exist_ok=True)
            os.chmod(self._ovl, 0o700)
            _chown_tree(self._ovl, self.uid)
            self._work = self._ovl / "work"
            if os.stat(self._ovl).st_dev != os.stat(self.spec.rootfs).st_dev:
                # fuse-overlayfs renames from work into upper: a trial's upper on its own disk quota
                # (sandbox/disk_quota.py) needs its work folder there too, beside it, private
                self._work = self.spec.rootfs.with_name(f".{self.spec.rootfs.name}.work-{self._ctl.name}")
                self._work.mkdir(mode=0o700)
                _chown_tree(self._work, self.uid)
        # Unique per sandbox (several may share a name, e.g. concurrent builds); the pid
        # suffix lets a later process sweep groups whose owner died.
        self._cgroup = Cgroup(f"{self.name}-{uuid.uuid4().hex[:8]}-{os.getpid()}", self.spec.limits)

    @property
    def _resolv_path(self) -> Path:
        """The internet's /etc/resolv.conf (pasta's DNS forwarder), beside the control folder."""
        assert self._ctl is not None
        return self._ctl.with_suffix(".resolv")

    def _prepare_host(self) -> None:
        spec = self.spec
        prepare_root(spec.rootfs)
        if spec.lower is not None:  # mount points made here, not through the overlay (no opaque markers)
            points = {GUEST_DIR: None, CTL_DIR: None, **spec.ro_mounts, **spec.rw_mounts}
            for inside, host in points.items():
                target = spec.rootfs / inside.lstrip("/")
                if host is not None and host.exists() and not host.is_dir():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.touch(exist_ok=True)
                else:
                    target.mkdir(parents=True, exist_ok=True)
        _chown_tree(spec.rootfs, self.uid)
        for host in spec.rw_mounts.values():
            host.mkdir(parents=True, exist_ok=True)
            _chown_tree(host, self.uid)
        if spec.writable_usr_local and spec.usr_local is not None:
            _chown_tree(spec.usr_local, self.uid)

    async def _launch(self, argv: list[str], stdio: dict):
        """Through the launcher (sandbox/launcher.py), or the chain of programs in front of argv.
        bwrap's own init (pid 1 inside) keeps its environment readable in /proc/1/environ: the
        launch env holds nothing of the host's."""
        # With an overlay, the namespace's unshare takes the uid instead (overlay_namespace_argv).
        uid = self.uid if os.geteuid() == 0 and self.spec.lower is None else None
        assert self._cgroup is not None  # made by _prepare
        procs, limits = self._cgroup.procs_files(), self.spec.limits
        if launcher_wanted():
            return await launch(LaunchPlan(argv, self._launch_env(), procs, rlimit_values(limits), uid), **stdio)
        return await spawn(
            *launch_argv(procs, limits, uid), *argv, start_new_session=True, env=self._launch_env(), **stdio
        )

    def _argv(self, inner: list[str], env: dict[str, str], cwd: str | None) -> list[str]:
        """bwrap's command line (behind the overlay's namespace and mount when there is one)."""
        spec = self.spec
        guest = guest_assets()
        as_uid = self.uid if os.geteuid() == 0 else None
        argv: list[str] = []
        root = spec.rootfs
        if spec.lower is not None:  # the namespace's unshare takes the uid instead of setpriv
            assert self._ovl is not None  # made by _prepare for an overlay
            root = self._ovl / "merged"
            argv += [
                *overlay_namespace_argv(as_uid),
                "--",
                "/bin/sh",
                "-c",
                _OVERLAY,
                "sh",
                str(spec.lower),
                str(spec.rootfs),
                str(self._work),
                str(root),
            ]
        if spec.internet:  # pasta's namespaces, the firewall, then bwrap in a child user namespace
            argv += internet_argv(self._firewall, as_namespace_root=spec.lower is not None)
        argv += [
            "bwrap",
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--clearenv",
            "--uid",
            "0",
            "--gid",
            "0",
            "--hostname",
            spec.hostname,
        ]
        if spec.network or spec.internet:  # the host's network, or pasta's namespace
            argv += ["--share-net"]
        system = spec.system_root or Path("/")
        argv += [
            "--bind",
            str(root),
            "/",
            "--ro-bind",
            str(system / "usr"),
            "/usr",
            "--ro-bind",
            str(system / "etc"),
            "/etc",
            "--ro-bind-try",
            str(system / "var/lib/dpkg"),
            "/var/lib/dpkg",
        ]
        if spec.internet and (system / "etc/resolv.conf").is_file() and not (system / "etc/resolv.conf").is_symlink():
            argv += ["--ro-bind", str(self._resolv_path), "/etc/resolv.conf"]  # names through pasta
        if spec.system_root is not None:
            pass  # the image's own /usr/local is part of its read-only /usr
        elif spec.usr_local is not None:
            argv += ["--bind" if spec.writable_usr_local else "--ro-bind", str(spec.usr_local), "/usr/local"]
        else:
            argv += ["--tmpfs", "/usr/local", "--remount-ro", "/usr/local"]
        argv += [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--ro-bind",
            str(guest),
            GUEST_DIR,
            "--bind",
            str(self._ctl),
            CTL_DIR,
        ]
        for inside, host in spec.ro_mounts.items():
            argv += ["--ro-bind", str(host), inside]
        for inside, host in spec.rw_mounts.items():
            argv += ["--bind", str(host), inside]
        for key, value in env.items():
            argv += ["--setenv", key, value]
        argv += ["--chdir", cwd or "/", *inner]
        return argv

    def _launch_env(self) -> dict[str, str]:
        env = {"PATH": LAUNCH_PATH}
        if self.spec.lower is not None:
            env.update(overlay_launch_env(self.uid if os.geteuid() == 0 else None))
        return env

    @property
    def guest_socket(self) -> Path | None:
        """Where to connect to the guest while the sandbox runs: its socket as pinned at start
        (/proc/self/fd/N), whatever the name in the control folder has become since."""
        return None if self._guest_fd is None else pinned_path(self._guest_fd)

    @property
    def control_dir(self) -> Path | None:
        """Host side of CTL_DIR: a guest service (e.g. the tool host) can put a unix socket here."""
        return self._ctl

    def adopt(self, path: Path) -> None:
        """Host files added under our rootfs after start() belong to the sandbox's uid."""
        if self._lease is not None:
            _chown_tree(path, self.uid)

    def base_env(self) -> dict[str, str]:
        env = {"PATH": DEFAULT_PATH, "HOME": "/root", "LANG": "C.UTF-8", "TERM": "xterm-256color", "USER": "root"}
        env.update(self.spec.env)
        return env

    async def _wait_ready(self) -> None:
        """Until the guest renames its listening socket into the control folder (told by inotify)."""
        proc, ctl = self._proc, self._ctl
        assert proc is not None and ctl is not None  # launched by _boot, made by _prepare
        exited = asyncio.ensure_future(proc.wait())
        try:
            ready = await wait_for_name(ctl, "sock", give_up=exited, timeout=START_TIMEOUT)
        finally:
            exited.cancel()
        if proc.returncode is not None:
            raise SandboxError(f"sandbox failed to start: {self._stderr_text() or 'exit ' + str(proc.returncode)}")
        if not ready:
            raise SandboxError(f"sandbox did not start within {START_TIMEOUT:.0f}s: {self._stderr_text()}")
        self._guest_fd = pin_socket(ctl / "sock", self.uid)
        if self._guest_fd is None:
            raise SandboxError(f"sandbox failed to start: {ctl / 'sock'} is not the guest's socket")

    def _stderr_text(self) -> str:
        assert self._stderr_path is not None  # made by _prepare, kept after stop
        with contextlib.suppress(OSError):
            return self._stderr_path.read_text(errors="replace").strip()[-2000:]
        return ""

    async def stop(self) -> None:
        """Kill everything in the sandbox. No process survives: pid namespace + cgroup."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            # The group kill reaches bwrap (and an overlay's daemon); bwrap's death takes the pid
            # namespace with it. A second proc.kill() would race asyncio's child watcher for the
            # exit status ("Unknown child process pid").
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
        cgroup, ovl, ctl, stderr_path = self._cgroup, self._ovl, self._ctl, self._stderr_path
        work = self._work if self._work is not None and ovl is not None and ovl not in self._work.parents else None
        self._cgroup = self._ovl = self._ctl = self._work = None
        guest_fd, self._guest_fd = self._guest_fd, None  # no new connection from here on
        # The cgroup's kill (returning once it is empty) and removal, the folders' removal, the
        # pinned socket's close: kernel work, off the event loop; meanwhile the watcher reaps bwrap.
        await asyncio.to_thread(_clean_up, cgroup, ovl, ctl, stderr_path, guest_fd, work)
        if proc is not None:
            await proc.wait()
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    # -- operations ----------------------------------------------------------------------------

    async def _rpc(self, request: dict, timeout: float | None) -> dict:
        if not self.alive:
            raise SandboxError("sandbox is not running")
        try:
            reader, writer = await asyncio.open_unix_connection(str(self.guest_socket), limit=64 << 20)
        except OSError as e:
            raise SandboxError(f"sandbox guest unreachable: {e}") from None
        try:
            writer.write(json.dumps(request).encode() + b"\n")
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), None if timeout is None else timeout + _RPC_GRACE)
        except TimeoutError:
            raise SandboxError("sandbox guest did not answer in time") from None
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        if not line:
            await asyncio.sleep(0.05)  # let a dying sandbox report its exit status
            status = "still running" if self.alive else f"exit status {self._proc.returncode if self._proc else '?'}"
            raise SandboxError(f"sandbox guest closed the connection ({status}) {self._stderr_text()}".strip())
        reply = json.loads(line)
        if not reply.pop("ok"):
            raise GuestError(reply["error"], reply.get("kind", "error"))
        return reply

    async def exec(
        self, cmd, *, timeout=None, env=None, cwd=None, stdin=None, max_output: int = 16 << 20
    ) -> ExecResult:
        argv = ["/bin/bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        full_env = self.base_env()
        full_env.update(env or {})
        reply = await self._rpc(
            {
                "op": "exec",
                "argv": argv,
                "env": full_env,
                "cwd": cwd or self.spec.workdir,
                "timeout": timeout,
                "max_output": max_output,
                "stdin": base64.b64encode(stdin).decode() if stdin is not None else None,
            },
            timeout,
        )
        return ExecResult(
            returncode=reply["returncode"],
            stdout=base64.b64decode(reply["stdout"]).decode("utf-8", "replace"),
            stderr=base64.b64decode(reply["stderr"]).decode("utf-8", "replace"),
            timed_out=reply["timed_out"],
            duration=reply["duration"],
        )

    async def read_file(self, path: str, max_bytes: int = 16 << 20) -> bytes:
        """Read through the guest, so symlinks resolve inside the sandbox, never on the host."""
        try:
            reply = await self._rpc({"op": "read", "path": path, "max_bytes": max_bytes}, 30)
        except GuestError as e:
            if e.kind == "not_found":
                raise FileNotFoundError(path) from None
            raise
        return base64.b64decode(reply["data"])

    async def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        raw = data.encode() if isinstance(data, str) else data
        await self._rpc({"op": "write", "path": path, "data": base64.b64encode(raw).decode(), "mode": mode}, 30)
