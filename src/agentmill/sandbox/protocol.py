"""The Sandbox protocol: what every backend (bubblewrap today, containers later) provides."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: the protocol module imports nothing heavy
    import asyncio


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandbox. Enforced with cgroups where writable, prlimit as the floor."""

    memory_mb: int = 2048
    cpus: float = 1.0
    pids: int = 256
    storage_mb: int = 10240  # floor: largest single file (RLIMIT_FSIZE)
    nofile: int = 4096


@dataclass
class SandboxSpec:
    """Everything needed to start a sandbox. `rootfs` becomes the writable `/` of the sandbox."""

    rootfs: Path
    usr_local: Path | None = None  # the image's /usr/local layer, read-only (hides the host's)
    # A built image's pristine root filesystem: its /usr and /etc (and dpkg's database) replace the
    # host's, read-only. None: the host's userland (the fast path).
    system_root: Path | None = None
    # An overlay: `lower` is the image's read-only workspace template and `rootfs` holds only this
    # sandbox's changes (the upper layer), so a trial starts without copying the image.
    lower: Path | None = None
    ro_mounts: dict[str, Path] = field(default_factory=dict)  # inside path -> host path
    rw_mounts: dict[str, Path] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    workdir: str = "/"
    limits: Limits = field(default_factory=Limits)
    network: bool = False  # the host's own network: image builds only, never agents or verifiers
    # A user-mode network that reaches public addresses only (sandbox/internet.py): an agent's, when
    # its task allows the internet and the user does (rollout/network.py). Never a verifier's.
    internet: bool = False
    writable_usr_local: bool = False  # image builds install into /usr/local
    hostname: str = "sandbox"


@dataclass
class ExecResult:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False
    duration: float = 0.0

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class Capability:
    """What a backend may offer beyond the protocol's core, declared in its `capabilities`; callers ask
    `Capability.X in sandbox.capabilities` and never probe attributes. The conformance suite checks each
    backend's declaration against what it really has (sandbox/conformance.py)."""

    # start_command(argv, env, cwd, *, stdin=fd): the command is the sandbox's first process, its exit
    # ends the sandbox (sandbox/command.py); without it one command runs through the guest.
    ONE_COMMAND = "one_command"
    # control_dir (a host folder the guest sees at its control path) and uid (the sandbox's host uid): a
    # guest service such as the tool host serves a unix socket there (tools/session.py); without it, one
    # exec per tool call.
    CONTROL_DIR = "control_dir"
    # guest_socket: the guest's exec socket as pinned at start, for a terminal's control channel
    # (sandbox/tmux.py); without it, the terminal is driven by execs.
    GUEST_SOCKET = "guest_socket"

    # a spec's `internet=True` is honoured: public addresses reachable, the host's loopback, its own
    # addresses and private ranges not (sandbox/internet.py); without it such a spec is refused.
    INTERNET = "internet"

    MEMBERS = {
        ONE_COMMAND: ("start_command",),
        CONTROL_DIR: ("control_dir", "uid"),
        GUEST_SOCKET: ("guest_socket",),
        INTERNET: (),
    }


@runtime_checkable
class Sandbox(Protocol):
    """What callers may rely on. A backend is registered with `@sandbox_backend(name)` and must
    pass `sandbox/conformance.py`: exec, files, timeouts, limits, no network, cleanup, isolation."""

    spec: SandboxSpec
    capabilities: frozenset[str]  # of Capability's names; empty: the core protocol only

    async def start(self) -> None: ...

    async def exec(
        self,
        cmd: str | list[str],
        *,
        timeout: float | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stdin: bytes | None = None,
        max_output: int = 16 << 20,
    ) -> ExecResult:
        """Run `cmd` (a string runs under bash -c). A timeout kills the command's process group
        and sets `timed_out`; background processes it started otherwise persist until stop()."""
        ...

    async def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None: ...

    async def read_file(self, path: str, max_bytes: int = 16 << 20) -> bytes:
        """Resolved inside the sandbox; FileNotFoundError when absent."""
        ...

    async def stop(self) -> None:
        """Kill everything the sandbox started. Idempotent."""
        ...

    def base_env(self) -> dict[str, str]:
        """The environment every exec starts from (PATH, HOME, the spec's env)."""
        ...

    def adopt(self, path: Path) -> None:
        """Make host files placed under the sandbox's rootfs or mounts after start() (a build's
        COPY, WORKDIR) owned by the sandbox's root, as if the sandbox had made them."""
        ...

    async def __aenter__(self) -> Sandbox: ...

    async def __aexit__(self, *exc) -> None: ...


# What a declared capability adds to the protocol, for the type checker: a caller that has checked
# `Capability.X in sb.capabilities` casts sb to the matching protocol (the declaration is runtime data).


class WithOneCommand(Sandbox, Protocol):
    """A sandbox that declares Capability.ONE_COMMAND."""

    async def start_command(
        self, argv: list[str], env: dict[str, str], cwd: str | None, *, stdin: int
    ) -> asyncio.subprocess.Process: ...


class WithControlDir(Sandbox, Protocol):
    """A sandbox that declares Capability.CONTROL_DIR."""

    @property
    def control_dir(self) -> Path | None: ...

    @property
    def uid(self) -> int: ...


class WithGuestSocket(Sandbox, Protocol):
    """A sandbox that declares Capability.GUEST_SOCKET."""

    @property
    def guest_socket(self) -> Path | None: ...
