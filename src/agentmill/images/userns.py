"""Image builds as root of a user namespace, never as host root.

A dedicated host user, `agentmill-build`, owns a block of subordinate ids (/etc/subuid, /etc/subgid;
scripts/setup.sh creates both). Build commands (mmdebstrap, layer extraction, RUN steps) run as that
user inside `unshare --user`, where it is root and its subordinate ids are the image's other users
(uid n of the image is host uid SUB_START + n - 1). Files of an image therefore belong to
unprivileged host ids; sandboxes later see them as `nobody`, read-only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.runtime.child_processes import spawn
from agentmill.runtime.paths import package_assets
from agentmill.sandbox.limits import prlimit_args
from agentmill.sandbox.protocol import ExecResult, Limits

BUILD_USER = "agentmill-build"
SUB_COUNT = 65536
BUILD_LIMITS = Limits(memory_mb=8192, cpus=float(os.cpu_count() or 1), pids=4096, storage_mb=65536)
DEBIAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class BuilderUnavailable(AgentmillError):
    """The host is not set up for Debian image builds (missing tools or subordinate ids)."""


@dataclass(frozen=True)
class BuildIdentity:
    uid: int
    gid: int
    sub_uid: int  # first host id of the image's uid 1
    sub_gid: int

    def host_uid(self, image_uid: int) -> int:
        return self.uid if image_uid == 0 else self.sub_uid + image_uid - 1

    def host_gid(self, image_gid: int) -> int:
        return self.gid if image_gid == 0 else self.sub_gid + image_gid - 1


def _subid(path: str, name: str, uid: int) -> int | None:
    with contextlib.suppress(OSError):
        for line in Path(path).read_text().splitlines():
            parts = line.strip().split(":")
            if len(parts) == 3 and parts[0] in {name, str(uid)} and int(parts[2]) >= SUB_COUNT:
                return int(parts[1])
    return None


def build_identity() -> BuildIdentity:
    """Who builds images; raises BuilderUnavailable naming what is missing."""
    missing = [t for t in ("mmdebstrap", "unshare", "setpriv", "newuidmap", "newgidmap") if shutil.which(t) is None]
    if missing:
        raise BuilderUnavailable(
            f"Debian image builds need {', '.join(missing)} (apt-get install -y mmdebstrap uidmap util-linux)"
        )
    if os.geteuid() != 0:
        raise BuilderUnavailable("Debian image builds run as root (they drop to the agentmill-build user)")
    try:
        entry = pwd.getpwnam(BUILD_USER)
    except KeyError:
        raise BuilderUnavailable(f"no '{BUILD_USER}' user: run scripts/setup.sh") from None
    sub_uid = _subid("/etc/subuid", BUILD_USER, entry.pw_uid)
    sub_gid = _subid("/etc/subgid", BUILD_USER, entry.pw_uid)
    if sub_uid is None or sub_gid is None:
        raise BuilderUnavailable(
            f"'{BUILD_USER}' has no {SUB_COUNT} subordinate ids in /etc/subuid and /etc/subgid: run scripts/setup.sh"
        )
    return BuildIdentity(entry.pw_uid, entry.pw_gid, sub_uid, sub_gid)


def _as_builder(ident: BuildIdentity) -> list[str]:
    # No --no-new-privs and an intact bounding set: unshare needs the setuid newuidmap helper.
    return [
        *("prlimit", *prlimit_args(BUILD_LIMITS, address_space=False), "--"),
        "setpriv",
        f"--reuid={ident.uid}",
        f"--regid={ident.gid}",
        "--clear-groups",
        "--",
    ]


def _in_userns(ident: BuildIdentity) -> list[str]:
    return [
        "unshare",
        "--map-root-user",
        f"--map-users={ident.sub_uid},1,{SUB_COUNT - 1}",
        f"--map-groups={ident.sub_gid},1,{SUB_COUNT - 1}",
        "--mount",
        "--pid",
        "--fork",
        "--kill-child",
        "--",
    ]


_CLEAN_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


async def _run(
    argv: list[str],
    *,
    timeout: float,
    stdin: bytes | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> ExecResult:
    started = time.monotonic()
    proc = await spawn(
        *argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        cwd=str(cwd) if cwd else None,
        env={**_CLEAN_ENV, **(env or {})},
    )
    timed_out = False
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin or b""), timeout)
    except TimeoutError:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = await proc.communicate()
    return ExecResult(
        proc.returncode if proc.returncode is not None else -9,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        timed_out,
        time.monotonic() - started,
    )


async def run_as_builder(
    ident: BuildIdentity, argv: list[str], *, timeout: float, cwd: Path | None = None, env: dict[str, str] | None = None
) -> ExecResult:
    """A host tool (mmdebstrap) as the build user; it makes its own user namespace."""
    return await _run([*_as_builder(ident), *argv], timeout=timeout, cwd=cwd, env=env)


async def run_in_userns(ident: BuildIdentity, argv: list[str], *, timeout: float) -> ExecResult:
    """A host tool (tar, cp) as root of the build user namespace, over files of an image."""
    return await _run([*_as_builder(ident), *_in_userns(ident), *argv], timeout=timeout)


HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
STEP_CA = "/run/agentmill/ca.crt"
# Where TLS clients look for a CA bundle when told by environment; set for RUN steps only.
CA_ENV = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "NODE_EXTRA_CA_CERTS")


def step_ca_env() -> dict[str, str]:
    """A minbase image trusts no CA, and this host's registries may sit behind a proxy with its own:
    RUN steps get the host's bundle (mounted for the step, never stored in the layer)."""
    return {k: STEP_CA for k in CA_ENV} if HOST_CA.exists() else {}


async def run_in_rootfs(
    ident: BuildIdentity,
    rootfs: Path,
    command: list[str],
    *,
    env: dict[str, str],
    cwd: str,
    timeout: float,
    user: tuple[int, int] = (0, 0),
) -> ExecResult:
    """One Dockerfile RUN step inside `rootfs`, with the host's network, as the image's root (or USER)."""
    enter = package_assets("rootfs_exec") / "enter.py"
    argv = [
        *_as_builder(ident),
        *_in_userns(ident),
        "/usr/bin/python3",
        "-I",
        "-S",
        str(enter),
        str(rootfs),
        cwd,
        f"{user[0]}:{user[1]}",
        "--",
        *command,
    ]
    run_dir = rootfs / "run" / "agentmill"
    had_run_dir = run_dir.exists()
    try:
        return await _run(
            argv,
            timeout=timeout,
            stdin=(json.dumps(env) + "\n").encode(),
            env={"AGENTMILL_HOST_CA": str(HOST_CA)} if HOST_CA.exists() else None,
        )
    finally:
        if not had_run_dir and run_dir.is_dir():
            shutil.rmtree(run_dir, ignore_errors=True)
