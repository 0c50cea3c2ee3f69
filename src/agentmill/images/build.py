"""Container-less image builds: a task's Dockerfile becomes a root filesystem template.

WORKDIR, ENV, ARG, COPY/ADD of local files and RUN steps are honoured; RUN steps execute once in
a build sandbox that may reach the package registries (as `docker build` has network), with a
writable /usr/local layer (pip installs land there). The result is cached by content hash, so a
dataset of a thousand tasks over one environment builds it once. What cannot be built faithfully
raises NeedsContainerError with the reason: the task is reported, never run half-built.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import glob
import json
import logging
import os
import re
import shutil
import subprocess
import tarfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agentmill.errors import AgentmillError, NeedsContainerError
from agentmill.images.base import base_defaults, check_base
from agentmill.images.context import build_context, missing_source
from agentmill.images.dockerfile import Instruction, parse_dockerfile, parse_env, split_flags, substitute
from agentmill.images.errors import (
    NETWORK_ERRORS,
    RETRY_DELAYS,
    ImageBuildError,
    NetworkFetchError,
    TransientNeedsContainer,
    last_words,
)
from agentmill.images.inside import copy_into, resolve_inside
from agentmill.images.locks import KeyedLocks
from agentmill.images.tree_copy import copy_tree
from agentmill.images.trial_fs import count_entries, overlay_setting, use_overlay
from agentmill.runtime.atomic import write_json_atomic
from agentmill.runtime.paths import cache_dir, ensure_traversable, package_assets
from agentmill.sandbox.bwrap import prepare_root
from agentmill.sandbox.overlay import own_template
from agentmill.sandbox.protocol import Limits, Sandbox, SandboxSpec
from agentmill.sandbox.registry import create_sandbox
from agentmill.tasks.hashing import hash_text, hash_tree
from agentmill.tasks.model import Task

BUILDER_VERSION = "3"  # bump when a build of the same inputs would differ
_IGNORED = {"CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "VOLUME", "HEALTHCHECK", "STOPSIGNAL", "MAINTAINER", "ONBUILD"}
_NEEDS_CONTAINER_MARK = "AGENTMILL_NEEDS_CONTAINER:"
_NOTE_MARK = "AGENTMILL_NOTE:"
# Host builds mount the host's /etc read-only: steps that edit users or write /etc need a real image.
_USER_TOOLS = re.compile(
    r"(^|[\s;&|(/])(adduser|useradd|addgroup|groupadd|usermod|groupmod|chpasswd|deluser|userdel|"
    r"update-alternatives|locale-gen|update-ca-certificates)(\s|$)"
)
_ETC_WRITE = re.compile(r"/etc/\S*:? .*Read-only file system|cannot lock /etc/|Read-only file system.*/etc/")


@dataclass
class Image:
    key: str
    path: Path
    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    base: str = ""
    notes: list[str] = field(default_factory=list)
    build_seconds: float = 0.0
    builder: str = "host"  # "host": the host's userland; "debian": built from Debian's archive
    system: str = ""  # debian: the final layer's rootfs, whose /usr and /etc are mounted read-only
    layers: list[str] = field(default_factory=list)  # debian: base first, then one per step
    template_entries: int = -1  # entries in rootfs, counted up to trial_fs.OVERLAY_FROM + 1 (-1: not yet)
    overlay: bool = False  # trials get an overlay over the template instead of a copy (not stored)

    @property
    def rootfs(self) -> Path:
        return self.path / "rootfs"

    @property
    def usr_local(self) -> Path:
        return self.path / "usr_local"

    def instantiate(self, dest: Path) -> Path:
        """A trial's writable root: a private copy of the template, or with an overlay an empty
        folder for the trial's changes (O(1)); the verifier's sandbox reuses it over the same image."""
        if self.overlay:
            own_template(self.rootfs)
            dest.mkdir()
            return dest
        copy_tree(self.rootfs, dest)
        return dest

    def spec(self, rootfs: Path, **kw) -> SandboxSpec:
        lower = self.rootfs if self.overlay else None
        if self.system:
            return SandboxSpec(
                rootfs=rootfs,
                system_root=Path(self.system),
                env=dict(self.env),
                workdir=self.workdir,
                lower=lower,
                **kw,
            )
        return SandboxSpec(
            rootfs=rootfs, usr_local=self.usr_local, env=dict(self.env), workdir=self.workdir, lower=lower, **kw
        )

    def describe(self) -> str:
        """One line for reports (`check --json` notes): which builder, base and layers."""
        if self.builder != "debian":
            return f"image {self.key[:12]}: host userland, base '{self.base}'"
        return f"image {self.key[:12]}: Debian layers {' > '.join(k[:12] for k in self.layers)} for base '{self.base}'"


log = logging.getLogger(__name__)
MODES = ("host", "auto", "debian")
MODE_ENV = "AGENTMILL_IMAGES"


DEFAULT_MODE = "auto"  # public tasks run as written; tasks the host can stand in for keep the fast path


def builder_mode(mode: str | None = None) -> str:
    """auto (default): the host's userland when it suffices, else a Debian-built image; host: the
    host's userland only; debian: every image from Debian's archive."""
    chosen = (mode or os.environ.get(MODE_ENV) or DEFAULT_MODE).strip().lower()
    if chosen not in MODES:
        raise AgentmillError(f"{MODE_ENV}={chosen!r}: expected one of {', '.join(MODES)}")
    return chosen


def image_key(task: Task, mode: str = "host") -> str:
    env_hash = hash_tree(task.environment_dir) if task.environment_dir else "none"
    dockerfile = (
        str(task.dockerfile.relative_to(task.environment_dir)) if task.dockerfile and task.environment_dir else ""
    )
    return hash_text(
        "agentmill-image",
        BUILDER_VERSION,
        _host_fingerprint(),
        env_hash,
        dockerfile,
        task.config.environment.docker_image,
        *([mode] if mode != "host" else []),
    )


@functools.cache  # the host's release does not change under a running process
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

    def __init__(
        self,
        cache: Path | None = None,
        *,
        backend: str | None = None,
        retry_delays: tuple[float, ...] = RETRY_DELAYS,
        mode: str | None = None,
        layers: Path | None = None,
        overlay: bool | None = None,
    ):
        self.root = (cache or cache_dir()) / "images"
        self.root.mkdir(parents=True, exist_ok=True)
        ensure_traversable(self.root)
        self.backend = backend  # sandbox backend for RUN steps; None: the registry's default
        self.retry_delays = retry_delays
        self.mode = builder_mode(mode)
        self.overlay = overlay_setting(overlay)  # None: auto, by the template's size (images/trial_fs.py)
        self._layers_root = layers
        self._store = None
        self._locks = KeyedLocks()
        self._unreachable: dict[str, TransientNeedsContainer] = {}

    @property
    def store(self):
        from agentmill.images.layers import LayerStore

        if self._store is None:
            self._store = LayerStore(self._layers_root)
        return self._store

    async def get(self, task: Task) -> Image:
        key = await asyncio.to_thread(image_key, task, self.mode)  # hashes the environment folder
        lock = self._locks(key)
        async with lock:
            if key in self._unreachable:
                raise self._unreachable[key]
            cached = await asyncio.to_thread(self._load, key)
            if cached is not None:
                log.debug("%s: image %s cached", task.name, key)
                return cached
            log.info("%s: building image %s", task.name, key)
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
        with contextlib.suppress(OSError):
            os.utime(meta)  # last use, for `agentmill images` and prune
        image = Image(path=self.root / key, **{k: v for k, v in data.items() if k not in {"path", "overlay"}})
        if image.template_entries < 0:  # cached before the count was stored: count once, keep it
            image.template_entries = count_entries(image.rootfs)
            with contextlib.suppress(OSError):
                write_json_atomic(meta, {**data, "template_entries": image.template_entries}, indent=2)
        image.overlay = use_overlay(self.overlay, image.template_entries)
        return image

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
            if self.mode != "host":
                await self._build_debian(task, image, steps, tmp)
            elif not steps:
                image.base = task.config.environment.docker_image
                image.notes += check_base(image.base)
                defaults = base_defaults(image.base)
                image.workdir, image.env = defaults.workdir, dict(defaults.env)
                (image.rootfs / image.workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
            else:
                await self._host_build(task, image, steps, tmp)
        except TransientNeedsContainer as e:
            await asyncio.to_thread(_remove, tmp)
            self._unreachable[key] = e
            raise
        except NeedsContainerError as e:
            await asyncio.to_thread(_remove, tmp)
            (self.root / f"{key}.needs-container").write_text(e.reason)
            raise
        except BaseException:
            await asyncio.to_thread(_remove, tmp)
            raise
        _seal(tmp / "usr_local")
        image.build_seconds = round(time.monotonic() - started, 3)
        image.path = self.root / key
        image.template_entries = count_entries(tmp / "rootfs")
        meta = {k: v for k, v in asdict(image).items() if k not in {"path", "overlay"}}
        image.overlay = use_overlay(self.overlay, image.template_entries)
        (tmp / "image.json").write_text(json.dumps(meta, indent=2))
        tmp.rename(self.root / key)
        return image

    async def _host_build(self, task: Task, image: Image, steps: list[Instruction], tmp: Path) -> None:
        """The steps over the host's userland. A step whose network fetch failed cannot be undone in
        place (it may have half-run: a user added, a file appended), so a retry starts the whole
        build again from an empty tree: every RUN runs once on its parent's result."""
        delays = list(self.retry_delays)
        while True:
            try:
                await _Build(task, image, steps, self).run()
                return
            except _NetworkRetry as e:
                if not delays:
                    raise e.final from None
                notes = e.notes_before
            await asyncio.sleep(delays.pop(0))
            for sub in ("rootfs", "usr_local"):
                await asyncio.to_thread(_remove, tmp / sub)
            (tmp / "rootfs").mkdir()
            _make_usr_local(tmp / "usr_local")
            prepare_root(tmp / "rootfs")
            image.workdir, image.env, image.base = "/", {}, ""
            image.notes = list(notes)

    async def _build_debian(self, task: Task, image: Image, steps: list[Instruction], tmp: Path) -> None:
        """auto: the host's userland first; what it cannot stand in for is built from Debian's archive."""
        from agentmill.images.debian_build import DebianBuild
        from agentmill.images.userns import BuilderUnavailable, build_identity

        if self.mode == "auto":
            try:
                if steps:
                    await self._host_build(task, image, steps, tmp)
                else:
                    image.base = task.config.environment.docker_image
                    image.notes += check_base(image.base)
                return
            except TransientNeedsContainer:
                raise
            except NeedsContainerError as e:
                if "not Debian-based" in e.reason:
                    raise
                image.notes.append(f"host userland insufficient ({e.reason}); built from Debian's archive")
                for sub in ("rootfs", "usr_local"):
                    shutil.rmtree(tmp / sub, ignore_errors=True)
                (tmp / "rootfs").mkdir()
                _make_usr_local(tmp / "usr_local")
                prepare_root(tmp / "rootfs")
                image.workdir, image.env, image.base = "/", {}, ""
        try:
            ident = build_identity()
        except BuilderUnavailable as e:
            raise TransientNeedsContainer(str(e)) from None
        if not steps:
            ref = task.config.environment.docker_image or "debian:bookworm"
            steps = [Instruction("FROM", ref, 0)]
        image.base = (
            substitute(split_flags(next(s for s in steps if s.keyword == "FROM").args)[1][0], {})
            if any(s.keyword == "FROM" for s in steps)
            else ""
        )
        build = DebianBuild(task, image, steps, self, self.store, ident)
        await build.run()
        image.notes.append(
            image.describe() + (f" ({len(build.built)} layer(s) built now)" if build.built else " (all cached)")
        )


def _remove(path: Path) -> None:
    from agentmill.images.layers import remove_tree

    remove_tree(path)


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


# A control-flow signal, not an error (so not an AgentmillError): _host_build catches it and starts
# over, or raises the NetworkFetchError it carries once no retry is left. It never leaves this module.
class _NetworkRetry(Exception):
    """A RUN step's fetch failed: the host build starts again from an empty tree."""

    def __init__(self, final: NetworkFetchError, notes_before: list[str]):
        self.final, self.notes_before = final, notes_before
        super().__init__(str(final))


class _Build:
    """One Dockerfile's steps, applied in order to the image under construction."""

    def __init__(self, task: Task, image: Image, steps: list[Instruction], builder: ImageBuilder):
        self.task, self.image, self.steps, self.builder = task, image, steps, builder
        self.context = build_context(task)
        self.args: dict[str, str] = {}
        self.shell = ["/bin/sh", "-c"]
        self.sandbox: Sandbox | None = None
        self.notes_before = list(image.notes)  # a retried build starts with these again
        self.deadline = time.monotonic() + task.config.environment.build_timeout_sec

    def vars(self) -> dict[str, str]:
        return {**self.args, **self.image.env}

    async def run(self) -> None:
        froms = [s for s in self.steps if s.keyword == "FROM"]
        if len(froms) != 1 or self.steps[0].keyword not in {"FROM", "ARG"}:
            raise NeedsContainerError(
                "multi-stage or FROM-less Dockerfile" if len(froms) != 1 else "Dockerfile must start with FROM"
            )
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
            defaults = base_defaults(img.base)
            img.env = {**defaults.env, **img.env}
            if defaults.workdir != "/":
                self.make_workdir(defaults.workdir)
        elif kw == "ARG":
            for k, v in parse_env(step.args).items():
                self.args.setdefault(k, substitute(v, self.vars()))
        elif kw == "ENV":
            for k, v in parse_env(step.args).items():
                img.env[k] = substitute(v, self.vars())
        elif kw == "WORKDIR":
            self.make_workdir(os.path.normpath(os.path.join(img.workdir, substitute(step.args.strip(), self.vars()))))
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

    def make_workdir(self, workdir: str) -> None:
        """WORKDIR creates the folder as root of the image: later RUN steps write into it."""
        self.image.workdir = workdir
        path = self.host_path(workdir)
        new_top = self._first_new(path)
        path.mkdir(parents=True, exist_ok=True)
        if self.sandbox is not None:
            self.sandbox.adopt(new_top)

    @staticmethod
    def _first_new(path: Path) -> Path:
        """The outermost folder that creating `path` adds (or `path` itself when it exists): what the
        build sandbox's root must own, or `RUN mkdir /app/data` after `WORKDIR /app` is denied."""
        new = path
        for parent in path.parents:
            if parent.exists() or parent.is_symlink():
                return new
            new = parent
        return new

    def host_path(self, inside: str) -> Path:
        """Map an absolute path inside the image to the template rootfs, refusing escapes."""
        rootfs = self.image.rootfs
        # Symlinks a RUN step left resolve inside the image, never on the host (we write as root).
        rel = os.path.relpath(resolve_inside(rootfs, inside), rootfs)
        rel = "" if rel == "." else rel
        if rel == "usr/local" or rel.startswith("usr/local/"):
            return resolve_inside(self.image.usr_local, os.path.relpath(rel, "usr/local"))
        if rel.split("/")[0] in {"usr", "etc", "proc", "dev"} and rel not in {"", "."}:
            raise NeedsContainerError(f"writes into /{rel}, which is the host's read-only system tree")
        return rootfs / rel

    def copy(self, step: Instruction, where: str) -> None:
        flags, parts = split_flags(step.args)
        if "from" in flags:
            raise NeedsContainerError(f"{where}: COPY --from needs a multi-stage build")
        if step.heredoc is not None:
            dest = self.host_path(self._abs(substitute(parts[-1], self.vars())))
            new_top = self._first_new(dest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(step.heredoc)
            if self.sandbox is not None:
                self.sandbox.adopt(new_top)
            return
        if len(parts) < 2:
            raise ImageBuildError(f"{where}: {step.keyword} needs a source and a destination")
        *srcs, dest_raw = [substitute(p, self.vars()) for p in parts]
        dest_in = self._abs(dest_raw)
        dest = self.host_path(dest_in)
        new_top = self._first_new(dest)
        matches: list[Path] = []
        context = self.context
        assert context is not None  # COPY and ADD steps come from a Dockerfile, in its context folder
        for src in srcs:
            if "://" in src:
                raise NeedsContainerError(f"{where}: ADD from a URL needs the network at build time")
            found = sorted(glob.glob(str(context / src)))
            if not found:
                raise ImageBuildError(missing_source(self.task, src, where, step.keyword))
            for f in found:
                path = Path(f).resolve()
                if not path.is_relative_to(context.resolve()):
                    raise ImageBuildError(f"{where}: {step.keyword} source '{src}' is outside the build context")
                matches.append(Path(f))
        into_dir = dest_raw.endswith("/") or len(matches) > 1 or dest.is_dir()
        root = self.image.usr_local if dest.is_relative_to(self.image.usr_local) else self.image.rootfs
        for match in matches:
            if match.is_dir():
                copy_into(root, match, dest)
            elif step.keyword == "ADD" and tarfile.is_tarfile(match):
                dest.mkdir(parents=True, exist_ok=True)
                with tarfile.open(match) as tf:
                    tf.extractall(dest, filter="data")
            else:
                copy_into(root, match, dest / match.name if into_dir else dest)
        if self.sandbox is not None:  # later RUN steps run as the build sandbox's root
            self.sandbox.adopt(new_top)
        if "chmod" in flags and flags["chmod"]:
            mode = int(flags["chmod"], 8)
            for p in [dest, *dest.rglob("*")] if dest.is_dir() else [dest]:
                p.chmod(mode)

    def _abs(self, path: str) -> str:
        return path if path.startswith("/") else os.path.join(self.image.workdir, path)

    async def run_step(self, step: Instruction, where: str) -> None:
        text = step.args + (step.heredoc or "")
        if _USER_TOOLS.search(text):  # before it runs: a half-run step would leave the rootfs changed
            raise NeedsContainerError(
                f"{where}: RUN manages users or groups, and /etc is the host's read-only tree here"
            )
        if self.sandbox is None:
            spec = self.image.spec(
                self.image.rootfs,
                network=True,
                writable_usr_local=True,
                limits=Limits(memory_mb=4096, cpus=float(os.cpu_count() or 1), pids=1024, storage_mb=65536),
                ro_mounts={"/.agentmill/shims": package_assets("shims")},
            )
            self.sandbox = create_sandbox(spec, name="build", backend=self.builder.backend)
            await self.sandbox.start()
        argv = step.exec_form()
        if argv is None:
            script = step.args
            if step.heredoc is not None:  # `RUN <<EOF` runs the body; `RUN cmd <<EOF` feeds it to cmd
                bare = step.args.strip().startswith("<<")
                script = step.heredoc if bare else f"{step.args}\n{step.heredoc}{step.heredoc_end}\n"
            argv = [*self.shell, script]
        env = {
            **self.args,
            **self.image.env,
            "DEBIAN_FRONTEND": "noninteractive",
            "PIP_BREAK_SYSTEM_PACKAGES": "1",
            "PIP_ROOT_USER_ACTION": "ignore",
            "PATH": "/.agentmill/shims:" + self.image.env.get("PATH", self.sandbox.base_env()["PATH"]),
        }
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise ImageBuildError(f"{where}: build timed out")
        result = await self.sandbox.exec(argv, timeout=remaining, env=env, cwd=self.image.workdir)
        output = result.output
        network = result.returncode != 0 and any(s in output for s in NETWORK_ERRORS)
        for line in output.splitlines():
            if line.startswith(_NOTE_MARK):
                note = f"{where}: {line[len(_NOTE_MARK) :].strip()}"
                if note not in self.image.notes:
                    self.image.notes.append(note)
        if _NEEDS_CONTAINER_MARK in output:
            reason = output.split(_NEEDS_CONTAINER_MARK, 1)[1].strip().splitlines()[0]
            raise NeedsContainerError(f"{where}: {reason}")
        if result.timed_out:
            raise ImageBuildError(f"{where}: build timed out", output[-4000:])
        if result.returncode != 0:
            tail = last_words(output)
            if _ETC_WRITE.search(output):
                raise NeedsContainerError(
                    f"{where}: RUN writes into /etc, the host's read-only tree here ({tail[:200]})"
                )
            if network:  # the whole build runs again (ImageBuilder._host_build), never this step in place
                attempts = len(self.builder.retry_delays) + 1
                raise _NetworkRetry(
                    NetworkFetchError(
                        f"{where}: RUN's network fetch failed {attempts} times; the "
                        f"host may be outside the reachable registries ({tail[:200]})"
                    ),
                    self.notes_before,
                )
            raise ImageBuildError(f"{where}: RUN exited {result.returncode}: {tail[:300]}", output[-4000:])
