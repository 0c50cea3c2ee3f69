"""Container-less image builds: a task's Dockerfile becomes a root filesystem template.

WORKDIR, ENV, ARG, COPY/ADD of local files and RUN steps are honoured; RUN steps execute once in
a build sandbox that may reach the package registries (as `docker build` has network), with a
writable /usr/local layer (pip installs land there). The result is cached by content hash, so a
dataset of a thousand tasks over one environment builds it once. What cannot be built faithfully
raises NeedsContainerError with the reason: the task is reported, never run half-built.
"""

from __future__ import annotations

import asyncio
import fcntl
import glob
import json
import os
import shutil
import subprocess
import tarfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agentmill.errors import AgentmillError, NeedsContainerError
from agentmill.images.base import check_base
from agentmill.images.dockerfile import Instruction, parse_dockerfile, parse_env, split_flags, substitute
from agentmill.paths import cache_dir, ensure_traversable, package_assets
from agentmill.sandbox.bwrap import prepare_root
from agentmill.sandbox.protocol import Limits, Sandbox, SandboxSpec
from agentmill.sandbox.registry import create_sandbox
from agentmill.tasks.hashing import hash_text, hash_tree
from agentmill.tasks.model import Task

BUILDER_VERSION = "1"
_IGNORED = {"CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "VOLUME", "HEALTHCHECK", "STOPSIGNAL", "MAINTAINER", "ONBUILD"}
_NEEDS_CONTAINER_MARK = "AGENTMILL_NEEDS_CONTAINER:"


class ImageBuildError(AgentmillError):
    """A build step failed. `log` keeps the failing step's output."""

    def __init__(self, message: str, log: str = ""):
        self.log = log
        super().__init__(message)


@dataclass
class Image:
    key: str
    path: Path
    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    base: str = ""
    notes: list[str] = field(default_factory=list)
    build_seconds: float = 0.0

    @property
    def rootfs(self) -> Path:
        return self.path / "rootfs"

    @property
    def usr_local(self) -> Path:
        return self.path / "usr_local"

    def instantiate(self, dest: Path) -> Path:
        """A private, writable copy of the root filesystem for one sandbox."""
        subprocess.run(["cp", "-a", "--reflink=auto", str(self.rootfs), str(dest)], check=True)
        return dest

    def spec(self, rootfs: Path, **kw) -> SandboxSpec:
        return SandboxSpec(rootfs=rootfs, usr_local=self.usr_local, env=dict(self.env), workdir=self.workdir, **kw)


def image_key(task: Task) -> str:
    env_hash = hash_tree(task.environment_dir) if task.environment_dir else "none"
    dockerfile = str(task.dockerfile.relative_to(task.environment_dir)) if task.dockerfile and task.environment_dir else ""
    return hash_text("agentmill-image", BUILDER_VERSION, _host_fingerprint(), env_hash, dockerfile,
                     task.config.environment.docker_image)


def _host_fingerprint() -> str:
    parts = []
    for f in ("/etc/debian_version", "/etc/os-release"):
        try:
            parts.append(Path(f).read_text())
        except OSError:
            pass
    return hash_text(*parts)


class ImageBuilder:
    """Builds and caches images. Safe to share across concurrent trials and processes."""

    def __init__(self, cache: Path | None = None):
        self.root = (cache or cache_dir()) / "images"
        self.root.mkdir(parents=True, exist_ok=True)
        ensure_traversable(self.root)
        self._locks: dict[str, asyncio.Lock] = {}

    async def get(self, task: Task) -> Image:
        key = image_key(task)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            cached = self._load(key)
            if cached is not None:
                return cached
            fd = os.open(self.root / f"{key}.lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
                cached = self._load(key)  # another process may have built it meanwhile
                if cached is not None:
                    return cached
                return await self._build(task, key)
            finally:
                os.close(fd)

    def _load(self, key: str) -> Image | None:
        failed = self.root / f"{key}.needs-container"
        if failed.exists():
            raise NeedsContainerError(failed.read_text().strip())
        meta = self.root / key / "image.json"
        if not meta.exists():
            return None
        data = json.loads(meta.read_text())
        return Image(path=self.root / key, **{k: v for k, v in data.items() if k != "path"})

    async def _build(self, task: Task, key: str) -> Image:
        started = time.monotonic()
        tmp = self.root / f"{key}.tmp{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        (tmp / "rootfs").mkdir(parents=True)
        _make_usr_local(tmp / "usr_local")
        prepare_root(tmp / "rootfs")
        image = Image(key=key, path=tmp)
        try:
            steps = parse_dockerfile(task.dockerfile) if task.dockerfile else []
            if not steps:
                image.base = task.config.environment.docker_image
                image.notes += check_base(image.base)
            else:
                await _Build(task, image, steps).run()
        except NeedsContainerError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            (self.root / f"{key}.needs-container").write_text(e.reason)
            raise
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        _seal(tmp / "usr_local")
        image.build_seconds = round(time.monotonic() - started, 3)
        image.path = self.root / key
        meta = {k: v for k, v in asdict(image).items() if k != "path"}
        (tmp / "image.json").write_text(json.dumps(meta, indent=2))
        tmp.rename(self.root / key)
        return image


def _make_usr_local(path: Path) -> None:
    """The image's /usr/local: empty but for `python`, as python and Debian images users expect."""
    for sub in ("bin", "lib", "share", "include", "sbin", "src", "etc"):
        (path / sub).mkdir(parents=True, exist_ok=True)
    if Path("/usr/bin/python3").exists():
        (path / "bin" / "python").symlink_to("/usr/bin/python3")


def _seal(path: Path) -> None:
    """Shared read-only layer: owned by root, readable by every sandbox uid."""
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", "-h", "0:0", str(path)], check=True)
    subprocess.run(["chmod", "-R", "a+rX,go-w", str(path)], check=True)


class _Build:
    """One Dockerfile's steps, applied in order to the image under construction."""

    def __init__(self, task: Task, image: Image, steps: list[Instruction]):
        self.task, self.image, self.steps = task, image, steps
        self.context = task.environment_dir
        self.args: dict[str, str] = {}
        self.shell = ["/bin/sh", "-c"]
        self.sandbox: Sandbox | None = None
        self.deadline = time.monotonic() + task.config.environment.build_timeout_sec

    def vars(self) -> dict[str, str]:
        return {**self.args, **self.image.env}

    async def run(self) -> None:
        froms = [s for s in self.steps if s.keyword == "FROM"]
        if len(froms) != 1 or self.steps[0].keyword not in {"FROM", "ARG"}:
            raise NeedsContainerError("multi-stage or FROM-less Dockerfile" if len(froms) != 1 else "Dockerfile must start with FROM")
        try:
            for step in self.steps:
                await self.apply(step)
        finally:
            if self.sandbox is not None:
                await self.sandbox.stop()

    async def apply(self, step: Instruction) -> None:
        kw, img = step.keyword, self.image
        where = f"{self.task.dockerfile}:{step.line}"
        if kw == "FROM":
            flags, rest = split_flags(step.args)
            img.base = substitute(rest[0], self.args) if rest else ""
            img.notes += check_base(img.base)
        elif kw == "ARG":
            for k, v in parse_env(step.args).items():
                self.args.setdefault(k, substitute(v, self.vars()))
        elif kw == "ENV":
            for k, v in parse_env(step.args).items():
                img.env[k] = substitute(v, self.vars())
        elif kw == "WORKDIR":
            img.workdir = os.path.normpath(os.path.join(img.workdir, substitute(step.args.strip(), self.vars())))
            self.host_path(img.workdir).mkdir(parents=True, exist_ok=True)
        elif kw in {"COPY", "ADD"}:
            self.copy(step, where)
        elif kw == "RUN":
            await self.run_step(step, where)
        elif kw == "SHELL":
            self.shell = step.exec_form() or self.shell
        elif kw == "USER":
            user = substitute(step.args.strip(), self.vars())
            if user not in {"root", "0", "0:0", "root:root"}:
                img.notes.append(f"{where}: USER {user} ignored: commands run as the sandbox's root-without-privileges")
        elif kw not in _IGNORED:
            raise NeedsContainerError(f"{where}: unsupported instruction {kw}")

    def host_path(self, inside: str) -> Path:
        """Map an absolute path inside the image to the template rootfs, refusing escapes."""
        rootfs = self.image.rootfs
        rel = os.path.normpath(inside).lstrip("/")
        if rel == "usr/local" or rel.startswith("usr/local/"):
            return self.image.usr_local / os.path.relpath(rel, "usr/local")
        if rel.split("/")[0] in {"usr", "etc", "proc", "dev"} and rel not in {"", "."}:
            raise NeedsContainerError(f"writes into /{rel}, which is the host's read-only system tree")
        return rootfs / rel

    def copy(self, step: Instruction, where: str) -> None:
        flags, parts = split_flags(step.args)
        if "from" in flags:
            raise NeedsContainerError(f"{where}: COPY --from needs a multi-stage build")
        if step.heredoc is not None:
            dest = self.host_path(self._abs(substitute(parts[-1], self.vars())))
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(step.heredoc)
            return
        if len(parts) < 2:
            raise ImageBuildError(f"{where}: {step.keyword} needs a source and a destination")
        *srcs, dest_raw = [substitute(p, self.vars()) for p in parts]
        dest_in = self._abs(dest_raw)
        dest = self.host_path(dest_in)
        matches: list[Path] = []
        for src in srcs:
            if "://" in src:
                raise NeedsContainerError(f"{where}: ADD from a URL needs the network at build time")
            found = sorted(glob.glob(str(self.context / src)))
            if not found:
                raise ImageBuildError(f"{where}: {step.keyword} source '{src}' not found in {self.context}")
            for f in found:
                path = Path(f).resolve()
                if not path.is_relative_to(self.context.resolve()):
                    raise ImageBuildError(f"{where}: {step.keyword} source '{src}' is outside the build context")
                matches.append(Path(f))
        into_dir = dest_raw.endswith("/") or len(matches) > 1 or dest.is_dir()
        for src in matches:
            if src.is_dir():
                shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True)
            elif step.keyword == "ADD" and tarfile.is_tarfile(src):
                dest.mkdir(parents=True, exist_ok=True)
                with tarfile.open(src) as tf:
                    tf.extractall(dest, filter="data")
            else:
                target = dest / src.name if into_dir else dest
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target, follow_symlinks=False)
        if self.sandbox is not None:  # later RUN steps run as the build sandbox's root
            self.sandbox.adopt(dest)
        if "chmod" in flags and flags["chmod"]:
            mode = int(flags["chmod"], 8)
            for p in [dest, *dest.rglob("*")] if dest.is_dir() else [dest]:
                p.chmod(mode)

    def _abs(self, path: str) -> str:
        return path if path.startswith("/") else os.path.join(self.image.workdir, path)

    async def run_step(self, step: Instruction, where: str) -> None:
        if self.sandbox is None:
            spec = self.image.spec(
                self.image.rootfs, network=True, writable_usr_local=True,
                limits=Limits(memory_mb=4096, cpus=float(os.cpu_count() or 1), pids=1024, storage_mb=65536),
                ro_mounts={"/.agentmill/shims": package_assets("shims")},
            )
            self.sandbox = create_sandbox(spec, name="build")
            await self.sandbox.start()
        argv = step.exec_form()
        if argv is None:
            script = step.args
            if step.heredoc is not None:  # `RUN <<EOF` runs the body; `RUN cmd <<EOF` feeds it to cmd
                bare = step.args.strip().startswith("<<")
                script = step.heredoc if bare else f"{step.args}\n{step.heredoc}{step.heredoc_end}\n"
            argv = [*self.shell, script]
        env = {**self.args, **self.image.env, "DEBIAN_FRONTEND": "noninteractive", "PIP_BREAK_SYSTEM_PACKAGES": "1",
               "PIP_ROOT_USER_ACTION": "ignore", "PATH": "/.agentmill/shims:" + self.image.env.get("PATH", self.sandbox.base_env()["PATH"])}
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise ImageBuildError(f"{where}: build timed out")
        result = await self.sandbox.exec(argv, timeout=remaining, env=env, cwd=self.image.workdir)
        output = result.output
        if _NEEDS_CONTAINER_MARK in output:
            reason = output.split(_NEEDS_CONTAINER_MARK, 1)[1].strip().splitlines()[0]
            raise NeedsContainerError(f"{where}: {reason}")
        if result.timed_out:
            raise ImageBuildError(f"{where}: build timed out", output[-4000:])
        if result.returncode != 0:
            tail = output.strip().splitlines()[-1] if output.strip() else ""
            if any(s in output for s in ("Could not resolve host", "Temporary failure in name resolution", "Failed to connect", "Network is unreachable")):
                raise NeedsContainerError(f"{where}: RUN needs a host outside the package registries ({tail[:200]})")
            raise ImageBuildError(f"{where}: RUN exited {result.returncode}: {tail[:300]}", output[-4000:])

