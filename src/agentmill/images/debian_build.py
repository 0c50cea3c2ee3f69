"""A Dockerfile built for real on Debian's archive: base from mmdebstrap, RUN as in Docker.

Each stage starts from a Debian base (images/debian.py) or an earlier stage; every RUN, COPY and
ADD is a cached layer keyed by (step and its inputs, parent). RUN executes inside the image's root
filesystem as root of a user namespace (or the Dockerfile's USER), with the host's network.

The result for a sandbox: the final layer's /usr and /etc (and dpkg's database) are mounted
read-only from the pristine layer, so nothing an agent does can replace what the verifier runs;
everything else (/app, /root, /home, /opt, /srv, /var, /tmp) is the writable workspace template.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import subprocess
import tarfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from agentmill.errors import NeedsContainerError
from agentmill.images.context import build_context, missing_source
from agentmill.images.debian import MIRROR, BaseChoice, choose_base
from agentmill.images.dockerfile import Instruction, parse_env, split_flags, substitute
from agentmill.images.errors import (
    NETWORK_ERRORS,
    ImageBuildError,
    NetworkFetchError,
    TransientNeedsContainer,
    last_words,
)
from agentmill.images.inside import copy_into, resolve_inside
from agentmill.images.layers import LayerError, LayerStore, build_base
from agentmill.images.userns import DEBIAN_PATH, BuildIdentity, run_in_rootfs, step_ca_env
from agentmill.tasks.hashing import hash_text, hash_tree

SYSTEM_DIRS = ("usr", "etc")  # read-only from the image layer at agent and verifier time
_NOT_WORKSPACE = {*SYSTEM_DIRS, "proc", "dev", "sys"}
_IGNORED = {"CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "VOLUME", "HEALTHCHECK", "STOPSIGNAL", "MAINTAINER", "ONBUILD"}


@dataclass
class StageState:
    key: str  # current layer
    chain: list[str] = field(default_factory=list)
    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    user: str = "root"
    shell: list[str] = field(default_factory=lambda: ["/bin/sh", "-c"])


class DebianBuild:
    """One Dockerfile's stages over the layer store; fills `image` (from images/build.py)."""

    def __init__(self, task, image, steps: list[Instruction], builder, store: LayerStore, ident: BuildIdentity):
        self.task, self.image, self.steps, self.builder = task, image, steps, builder
        self.store, self.ident = store, ident
        self.context = build_context(task)
        self.global_args: dict[str, str] = {}
        self.stages: dict[str, StageState] = {}
        self.deadline = time.monotonic() + task.config.environment.build_timeout_sec
        self.built: list[str] = []  # layers built by this run (the rest came from the cache)

    # -- stages ------------------------------------------------------------------------------

    async def run(self) -> None:
        groups: list[tuple[Instruction, list[Instruction]]] = []
        for step in self.steps:
            if step.keyword == "FROM":
                groups.append((step, []))
            elif not groups:
                if step.keyword != "ARG":
                    raise NeedsContainerError(f"{self.task.dockerfile}:{step.line}: Dockerfile must start with FROM")
                self.global_args.update({k: substitute(v, self.global_args) for k, v in parse_env(step.args).items()})
            else:
                groups[-1][1].append(step)
        if not groups:
            raise NeedsContainerError("Dockerfile has no FROM")
        state = None
        for index, (frm, body) in enumerate(groups):
            state, name = await self.start_stage(frm)
            args = dict(self.global_args)
            for step in body:
                state = await self.apply(state, step, args)
            self.stages[str(index)] = state
            if name:
                self.stages[name] = state
        assert state is not None  # groups is not empty
        await self.finish(state)

    async def start_stage(self, frm: Instruction) -> tuple[StageState, str | None]:
        flags, rest = split_flags(frm.args)
        ref = substitute(rest[0], self.global_args) if rest else ""
        name = rest[2].lower() if len(rest) >= 3 and rest[1].lower() == "as" else None
        if ref.lower() in self.stages:
            return replace(self.stages[ref.lower()], chain=list(self.stages[ref.lower()].chain)), name
        return await self.base_state(ref, f"{self.task.dockerfile}:{frm.line}"), name

    async def base_state(self, ref: str, where: str) -> StageState:
        choice = choose_base(ref)
        self.image.notes += [n for n in choice.notes if n not in self.image.notes]
        key = await self.base_layer(choice)
        state = StageState(key=key, chain=[key], workdir=choice.workdir, env=dict(choice.env))
        for script in choice.setup:
            state = await self.run_layer(state, ["/bin/sh", "-c", script], {}, f"{where} (base setup for {ref})")
        return state

    async def base_layer(self, choice: BaseChoice) -> str:
        step = f"mmdebstrap --variant={choice.variant} --include={','.join(choice.packages)} {choice.release} {MIRROR}"

        async def apply(rootfs: Path) -> None:
            await build_base(
                self.ident,
                rootfs,
                release=choice.release,
                variant=choice.variant,
                packages=choice.packages,
                mirror=MIRROR,
            )

        try:
            key, built = await self.store.derive(self.ident, None, step, apply)
        except LayerError as e:
            raise TransientNeedsContainer(f"the Debian base could not be built: {e}") from None
        if built:
            self.built.append(key)
        return key

    # -- steps -------------------------------------------------------------------------------

    async def apply(self, state: StageState, step: Instruction, args: dict[str, str]) -> StageState:
        kw, where = step.keyword, f"{self.task.dockerfile}:{step.line}"
        variables = {**args, **state.env}
        if kw == "ARG":
            for k, v in parse_env(step.args).items():
                args.setdefault(k, substitute(v, variables))
        elif kw == "ENV":
            env = dict(state.env)
            env.update({k: substitute(v, variables) for k, v in parse_env(step.args).items()})
            state = replace(state, env=env)
        elif kw == "WORKDIR":
            state = replace(
                state, workdir=os.path.normpath(os.path.join(state.workdir, substitute(step.args.strip(), variables)))
            )
        elif kw == "USER":
            state = replace(state, user=substitute(step.args.strip(), variables))
        elif kw == "SHELL":
            state = replace(state, shell=step.exec_form() or state.shell)
        elif kw == "RUN":
            argv = step.exec_form()
            if argv is None:
                script = step.args
                if step.heredoc is not None:
                    bare = step.args.strip().startswith("<<")
                    script = step.heredoc if bare else f"{step.args}\n{step.heredoc}{step.heredoc_end}\n"
                argv = [*state.shell, script]
            state = await self.run_layer(state, argv, args, where)
        elif kw in {"COPY", "ADD"}:
            state = await self.copy_layer(state, step, variables, where)
        elif kw not in _IGNORED:
            raise NeedsContainerError(f"{where}: unsupported instruction {kw}")
        return state

    def step_env(self, state: StageState, args: dict[str, str]) -> dict[str, str]:
        env = {
            "PATH": DEBIAN_PATH,
            "HOME": "/root",
            "LANG": "C.UTF-8",
            "DEBIAN_FRONTEND": "noninteractive",
            **args,
            **state.env,
        }
        uid, _gid, home = self.lookup_user(state)
        if uid != 0:
            env["HOME"] = state.env.get("HOME", home)
        return env

    async def run_layer(self, state: StageState, argv: list[str], args: dict[str, str], where: str) -> StageState:
        env = self.step_env(state, args)
        uid, gid, _home = self.lookup_user(state)
        desc = hash_text("RUN", *argv, repr(sorted(env.items())), state.workdir, f"{uid}:{gid}")
        env = {**step_ca_env(), **env}  # not part of the key: where the host's CA sits is no input
        outcome = {}

        async def apply(rootfs: Path) -> None:
            self.make_dirs(rootfs, state.workdir, (self.ident.host_uid(uid), self.ident.host_gid(gid)))
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise LayerError(f"{where}: build timed out")
            result = await run_in_rootfs(
                self.ident, rootfs, argv, env=env, cwd=state.workdir, timeout=remaining, user=(uid, gid)
            )
            outcome["result"] = result
            if result.timed_out:
                raise LayerError(f"{where}: build timed out", result)
            if result.returncode != 0:
                raise LayerError(f"{where}: RUN exited {result.returncode}", result)

        delays = list(self.builder.retry_delays)
        while True:
            try:
                key, built = await self.store.derive(self.ident, state.key, desc, apply, label=f"RUN {argv[-1][:200]}")
                break
            except LayerError as e:
                output = e.result.output if e.result is not None else ""
                network = any(s in output for s in NETWORK_ERRORS)
                if network and delays:
                    await asyncio.sleep(delays.pop(0))  # from the parent's pristine copy again
                    continue
                tail = last_words(output)[:300]
                if network:
                    raise NetworkFetchError(
                        f"{where}: RUN's network fetch failed {len(self.builder.retry_delays) + 1} "
                        f"times; the host may be unreachable ({tail[:200]})"
                    ) from None
                raise ImageBuildError(f"{e}: {tail}", output[-4000:]) from None
        if built:
            self.built.append(key)
        return replace(state, key=key, chain=[*state.chain, key])

    async def copy_layer(
        self, state: StageState, step: Instruction, variables: dict[str, str], where: str
    ) -> StageState:
        flags, parts = split_flags(step.args)
        parts = [substitute(p, variables) for p in parts]
        if step.heredoc is not None:
            sources: list[tuple[str, Path | str]] = [("heredoc", step.heredoc)]
            dest_raw = parts[-1]
        else:
            if len(parts) < 2:
                raise ImageBuildError(f"{where}: {step.keyword} needs a source and a destination")
            *srcs, dest_raw = parts
            sources = []
            assert self.context is not None  # COPY and ADD steps come from a Dockerfile, in its context folder
            src_root = self.context.resolve()
            if "from" in flags:
                src_root = await self.from_root(substitute(flags["from"], variables), where)
            for src in srcs:
                if "://" in src:
                    raise NeedsContainerError(f"{where}: ADD from a URL is not supported by the image builder")
                if "from" in flags:  # another image's path: its symlinks resolve inside that image
                    head, _, tail = src.rstrip("/").rpartition("/")
                    pattern = str(resolve_inside(src_root, head) / tail) if tail else str(resolve_inside(src_root, src))
                else:
                    pattern = str(src_root / src)
                found = sorted(glob.glob(pattern))
                if not found:
                    raise ImageBuildError(
                        missing_source(self.task, src, where, step.keyword)
                        if "from" not in flags
                        else f"{where}: {step.keyword} source '{src}' not found"
                    )
                for f in found:
                    if not Path(f).resolve().is_relative_to(src_root.resolve()):
                        raise ImageBuildError(
                            f"{where}: {step.keyword} source '{src}' leads outside "
                            f"{'the build context' if 'from' not in flags else 'its image'}"
                        )
                    sources.append((src, Path(f)))
        dest_in = dest_raw if dest_raw.startswith("/") else os.path.join(state.workdir, dest_raw)
        digest = hash_text(
            step.keyword,
            repr(flags),
            dest_in,
            state.workdir,
            *[
                s if isinstance(s, str) else f"{p}:{hash_tree(s) if s.is_dir() else hash_text(s.read_bytes().hex())}"
                for p, s in sources
            ],
        )
        owner = self.resolve_owner(state, flags.get("chown", ""))
        chmod = int(flags["chmod"], 8) if flags.get("chmod") else None
        keyword = step.keyword

        uid, gid, _home = self.lookup_user(state)

        async def apply(rootfs: Path) -> None:
            self.make_dirs(rootfs, state.workdir, (self.ident.host_uid(uid), self.ident.host_gid(gid)))
            await asyncio.to_thread(self._copy_into, rootfs, sources, dest_raw, dest_in, keyword, owner, chmod)

        key, built = await self.store.derive(
            self.ident, state.key, digest, apply, label=f"{step.keyword} {step.args[:200]}"
        )
        if built:
            self.built.append(key)
        return replace(state, key=key, chain=[*state.chain, key])

    async def from_root(self, name: str, where: str) -> Path:
        state = self.stages.get(name.lower())
        if state is None:  # COPY --from=<image>: that image's base
            state = await self.base_state(name, where)
        return self.store.rootfs(state.key)

    def _copy_into(self, rootfs: Path, sources, dest_raw: str, dest_in: str, keyword: str, owner, chmod) -> None:
        dest = resolve_inside(rootfs, dest_in)
        into_dir = dest_raw.endswith("/") or len(sources) > 1 or dest.is_dir()
        first_new = next((p for p in [dest, *dest.parents] if p.parent.exists()), dest)
        first_new_existed = first_new.exists()
        made: list[Path] = []
        for _src, item in sources:
            if isinstance(item, str):  # heredoc
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(item)
                made.append(dest)
            elif item.is_dir() and not item.is_symlink():
                dest.mkdir(parents=True, exist_ok=True)
                made += copy_into(rootfs, item, dest)
            elif keyword == "ADD" and tarfile.is_tarfile(item):
                dest.mkdir(parents=True, exist_ok=True)
                with tarfile.open(item) as tf:
                    tf.extractall(dest, filter="data")
                made.append(dest)
            else:
                made += copy_into(rootfs, item, dest / item.name if into_dir else dest)
        if (
            not first_new_existed and first_new.exists() and first_new not in made
        ):  # folders made on the way: the image's root's
            subprocess.run(["chown", "-R", "-h", f"{self.ident.uid}:{self.ident.gid}", str(first_new)], check=True)
        uid, gid = owner
        for path in dict.fromkeys(made):
            for p in [path, *path.rglob("*")] if path.is_dir() and not path.is_symlink() else [path]:
                os.lchown(p, uid, gid)
                if chmod is not None and not p.is_symlink():
                    p.chmod(chmod)

    def resolve_owner(self, state: StageState, chown: str) -> tuple[int, int]:
        """Host ids for COPY's owner: the image's root unless --chown names a user of the image."""
        if not chown:
            return self.ident.uid, self.ident.gid
        user, _, group = chown.partition(":")
        passwd = self._table(state, "passwd")
        groups = self._table(state, "group")
        uid = int(user) if user.isdigit() else int(passwd.get(user, ["", "", "0"])[2])
        gid_of_user = int(passwd.get(user, ["", "", "", str(uid)])[3]) if not user.isdigit() else uid
        gid = (
            (int(group) if group.isdigit() else int(groups.get(group, ["", "", str(gid_of_user)])[2]))
            if group
            else gid_of_user
        )
        return self.ident.host_uid(uid), self.ident.host_gid(gid)

    def lookup_user(self, state: StageState) -> tuple[int, int, str]:
        if state.user in {"", "root", "0", "0:0", "root:root"}:
            return 0, 0, "/root"
        user, _, group = state.user.partition(":")
        passwd = self._table(state, "passwd")
        entry = passwd.get(user) or next((e for e in passwd.values() if e[2] == user), None)
        if entry is None:
            if user.isdigit():
                return int(user), int(group) if group.isdigit() else int(user), "/"
            raise NeedsContainerError(f"USER {state.user}: no such user in the image")
        gid = int(entry[3])
        if group:
            groups = self._table(state, "group")
            gid = int(group) if group.isdigit() else int(groups[group][2])
        return int(entry[2]), gid, entry[5]

    def _table(self, state: StageState, name: str) -> dict[str, list[str]]:
        path = resolve_inside(self.store.rootfs(state.key), f"/etc/{name}")
        rows = {}
        for line in path.read_text(errors="replace").splitlines():
            parts = line.split(":")
            if len(parts) >= 4:
                rows[parts[0]] = parts
        return rows

    def make_dirs(self, rootfs: Path, inside: str, owner: tuple[int, int]) -> None:
        """WORKDIR's folder, made the way BuildKit makes it: owned by the current USER."""
        path = resolve_inside(rootfs, inside)
        if path.exists():
            return
        path.mkdir(parents=True)
        for p in [path, *path.parents]:
            if p == rootfs:
                break
            if p.stat().st_uid == 0:
                os.lchown(p, *owner)

    # -- the image ---------------------------------------------------------------------------

    async def finish(self, state: StageState) -> None:
        img = self.image
        uid, _gid, home = self.lookup_user(state)
        img.env = dict(state.env)
        if uid != 0:
            img.env.setdefault("HOME", home)
            img.env.setdefault("USER", state.user.partition(":")[0])
            img.notes.append(
                f"USER {state.user}: commands run as the sandbox's root-without-privileges with "
                f"HOME={img.env['HOME']} (one uid per sandbox)"
            )
        img.workdir = state.workdir
        img.layers = list(state.chain)
        img.system = str(self.store.rootfs(state.key))
        img.builder = "debian"
        await asyncio.to_thread(self._workspace_template, self.store.rootfs(state.key), img.rootfs, state.workdir)

    def _workspace_template(self, layer: Path, dest: Path, workdir: str) -> None:
        """The writable part of the image: everything but the system directories."""
        for entry in layer.iterdir():
            if entry.name in _NOT_WORKSPACE or entry.name.startswith(".agentmill"):
                continue
            target = dest / entry.name
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.is_dir():
                shutil.rmtree(target)
            subprocess.run(["cp", "-a", str(entry), str(target)], check=True)
        dpkg = dest / "var/lib/dpkg"  # mounted read-only from the layer: the copy would only be hidden
        if dpkg.is_dir():
            shutil.rmtree(dpkg)
            dpkg.mkdir()
        (dest / workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
