"""The pre-verification pass: the agent's final root filesystem is hostile input.

Runs on the host after every agent process is dead and before the verifier sandbox starts. It
never follows a link: every path is built from components it has lstat'ed itself, and links are
resolved chroot-style, as text, inside the rootfs. What would steer the test run is moved aside
into a quarantine folder (never silently deleted) and recorded as tamper evidence. Only what the
agent made or changed counts: entries identical to the image's template are the task's own.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections import deque
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.sandbox.bwrap import ROOT_SYMLINKS
from agentmill.verify.tamper import Tamper, TamperKind

# Where the verifier mounts its own things: nothing the agent made may live at or resolve into these.
PROTECTED = (
    "/tests",
    "/solution",
    "/logs",
    "/.agentmill",
    "/proc",
    "/sys",
    "/dev/fd",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
)
# Mounted over from the host in every sandbox: the agent never wrote there, and a walk must not look.
_HOST_MOUNTS = {"usr", "etc", "proc", "dev", "tmp", "sys"}
_MAX_ENTRIES = 500_000
_MAX_HOPS = 40
_READ_CAP = 1 << 20

RUNNER_MODULES = {"pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging", "ctrf", "agentmill_pytest_guard"}
# Standard-library names that nothing the test runner or interpreter start-up imports and that
# projects often use for their own files.
_STDLIB_ALLOWED = {"test", "this", "antigravity", "idlelib", "turtledemo", "__phello__", "_pydev_bundle"}
SHADOWED = RUNNER_MODULES | (set(sys.stdlib_module_names) - _STDLIB_ALLOWED)
PYTEST_INI_NAMES = {"pytest.ini", ".pytest.ini", "conftest.py"}
_PYTEST_SECTION = re.compile(rb"^\s*\[(tool\.pytest(\.ini_options)?|tool:pytest|pytest)\]", re.MULTILINE)
SHELL_STARTUP = {
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".bash_logout",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".envrc",
}
# Shell start-up lines that would change how a sourcing test script runs its tools or judges.
_STEERING_SHELL = re.compile(
    r"PYTEST|PYTHON[A-Z_]*=|BASH_ENV|\bENV=|LD_PRELOAD|LD_LIBRARY_PATH|\bPATH=|/logs\b|reward|"
    r"\balias\s+(python[0-9.]*|pytest|py\.test|uvx?|bash|sh|curl|test|grep|diff|cat)=|"
    r"^\s*(function\s+)?(python[0-9.]*|pytest|uvx?|bash|sh|curl|echo|test|exit|cd|source|diff|grep|cat|\[)\s*\(\s*\)",
    re.MULTILINE,
)
UV_ENV_FILES = {"env", "env.fish"}


@dataclass
class Hardening:
    """One pass over one rootfs. `evidence` lists what was neutralised."""

    rootfs: Path
    template: Path | None
    quarantine: Path
    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    known_commands: frozenset[str] = frozenset()
    overlay: bool = False  # rootfs is an overlay's upper over the template: absent means unchanged
    evidence: list[Tamper] = field(default_factory=list)
    _planted_inodes: set[tuple[int, int]] = field(default_factory=set)

    # -- entry point ------------------------------------------------------------------------------

    def run(self) -> list[Tamper]:
        self._root_layout()
        self._protected_trees()
        self._walk()
        return self.evidence

    # -- helpers ----------------------------------------------------------------------------------

    def host(self, inside: str) -> Path:
        return self.rootfs / inside.lstrip("/")

    def record(self, kind: TamperKind, inside: str, detail: str) -> None:
        self.evidence.append(Tamper(kind=kind, path=inside, detail=detail))

    def move_aside(self, inside: str, kind: TamperKind, detail: str) -> None:
        """Quarantine one entry (never deleted) and record it. Pinned folders are unpinned first."""
        src = self.host(inside)
        first = dest = self.quarantine / inside.lstrip("/")
        n = 0
        while os.path.lexists(dest):
            n += 1
            dest = first.with_name(f"{first.name}.{n}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        parent = os.lstat(src.parent)
        parent_pinned = not parent.st_mode & stat.S_IWUSR
        if parent_pinned:
            os.chmod(src.parent, stat.S_IMODE(parent.st_mode) | stat.S_IWUSR | stat.S_IXUSR)
        st = os.lstat(src)
        read_only = not st.st_mode & stat.S_IWUSR
        if stat.S_ISDIR(st.st_mode) and read_only:
            os.chmod(src, stat.S_IMODE(st.st_mode) | stat.S_IWUSR | stat.S_IXUSR)  # rename updates its '..'
        os.rename(src, dest)
        pinned = "; it was pinned read-only" if parent_pinned or read_only else ""
        self.record(kind, inside, f"{detail}{pinned}; moved aside")

    def from_agent(self, inside: str, st: os.stat_result) -> bool:
        """True when the entry (a file or link: folders are not compared) is not the image's own (new,
        or changed since the template)."""
        if self.template is None:
            return True
        try:
            t = os.lstat(self.template / inside.lstrip("/"))
        except OSError:
            return True
        if stat.S_IFMT(t.st_mode) != stat.S_IFMT(st.st_mode):
            return True
        if stat.S_ISLNK(st.st_mode):
            return os.readlink(self.template / inside.lstrip("/")) != os.readlink(self.host(inside))
        return (t.st_size, t.st_mtime_ns, stat.S_IMODE(t.st_mode)) != (
            st.st_size,
            st.st_mtime_ns,
            stat.S_IMODE(st.st_mode),
        )

    # -- the root: interpreter links and the verifier's mount points -------------------------------

    def _root_links(self) -> dict[str, str]:
        """The root links this image really has (/bin -> usr/bin on merged-/usr images): the
        template's own targets; a name the template holds as a real folder is the image's folder."""
        links = {}
        for name, default in ROOT_SYMLINKS.items():
            if self.template is None:
                links[name] = default
                continue
            t = self.template / name
            if t.is_symlink():
                links[name] = os.readlink(t)
            elif not os.path.lexists(t):
                links[name] = default  # every sandbox root gets the link (sandbox/bwrap.prepare_root)
        return links

    def _root_layout(self) -> None:
        for name, target in self._root_links().items():
            path = self.host(name)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                st = None
            whiteout = self.overlay and os.path.lexists(self.host(f".wh.{name}"))
            if st is not None and stat.S_ISLNK(st.st_mode) and os.readlink(path) == target and not whiteout:
                continue
            if st is None and self.overlay and not whiteout:
                continue  # an overlay's upper holds only what changed: the image's own link, untouched
            if whiteout:
                os.unlink(self.host(f".wh.{name}"))
            if st is not None:
                self.move_aside(
                    "/" + name,
                    TamperKind.ROOT_LAYOUT,
                    f"/{name} must be the link to /{target} (every ELF loader and #!/bin/sh lives behind it)",
                )
            else:
                self.record(TamperKind.ROOT_LAYOUT, "/" + name, "removed; restored")
            path.symlink_to(target)

    def _protected_trees(self) -> None:
        """/logs, /tests, /solution and /.agentmill: only empty mount points may exist there."""
        for top in ("logs", "tests", "solution", ".agentmill"):
            inside = "/" + top
            try:
                st = os.lstat(self.host(inside))
            except FileNotFoundError:
                continue
            kind = TamperKind.PREPARED_LOGS if top == "logs" else TamperKind.PROTECTED_PATH
            if not stat.S_ISDIR(st.st_mode):
                self._note_inodes(inside)
                self.move_aside(inside, kind, f"{inside} is not a folder (the verifier mounts its own there)")
                continue
            self._empty_mount_points(inside, kind)

    def _empty_mount_points(self, inside: str, kind: TamperKind) -> None:
        """Keep empty folders (mount points such as /logs/agent), move aside everything else."""
        for entry in sorted(os.listdir(self.host(inside))):
            child = f"{inside}/{entry}"
            st = os.lstat(self.host(child))
            if stat.S_ISDIR(st.st_mode) and self._is_empty_tree(child):
                if not st.st_mode & stat.S_IWUSR:
                    os.chmod(self.host(child), stat.S_IMODE(st.st_mode) | stat.S_IWUSR | stat.S_IXUSR)
                continue
            self._note_inodes(child)
            self.move_aside(child, kind, f"planted before verification ({_describe(st)})")
        st = os.lstat(self.host(inside))
        if not st.st_mode & stat.S_IWUSR:
            os.chmod(self.host(inside), stat.S_IMODE(st.st_mode) | stat.S_IWUSR | stat.S_IXUSR)

    def _is_empty_tree(self, inside: str) -> bool:
        for root, dirs, files in os.walk(self.host(inside)):
            if files or any(os.path.islink(os.path.join(root, d)) for d in dirs):
                return False
        return True

    def _note_inodes(self, inside: str) -> None:
        """Remember planted files, to catch hard links to them elsewhere."""
        path = self.host(inside)
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode):
            self._planted_inodes.add((st.st_dev, st.st_ino))
        elif stat.S_ISDIR(st.st_mode):
            for root, _dirs, files in os.walk(path):
                for f in files:
                    s = os.lstat(os.path.join(root, f))
                    if stat.S_ISREG(s.st_mode):
                        self._planted_inodes.add((s.st_dev, s.st_ino))

    # -- everything else ----------------------------------------------------------------------------

    def _walk(self) -> None:
        homes = ["/root"] + [f"/home/{d}" for d in _listdir(self.host("/home"))]
        ctx = _Places(self.workdir, self.env, homes)
        links = self._root_links()  # a real /bin (not merged-/usr) is walked like any folder
        todo = deque([""])
        seen = 0
        while todo:
            rel = todo.popleft()
            base = self.host(rel or "/")
            for name in sorted(_listdir_unpinned(base)):
                inside = f"{rel}/{name}"
                if not rel and (
                    name in _HOST_MOUNTS or name in {"logs", "tests", "solution", ".agentmill"} or name in links
                ):
                    continue
                seen += 1
                if seen > _MAX_ENTRIES:
                    self.record(
                        TamperKind.PROTECTED_PATH, rel or "/", f"more than {_MAX_ENTRIES} entries: walk stopped"
                    )
                    return
                try:
                    st = os.lstat(self.host(inside))
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    if not self._check_dir(inside, name, rel or "/", ctx):
                        todo.append(inside)
                elif self.from_agent(inside, st):
                    self._check_entry(inside, name, rel or "/", st, ctx)

    def _check_dir(self, inside: str, name: str, parent: str, ctx: _Places) -> bool:
        """A package folder shadowing a module. True when it was moved aside."""
        if parent in ctx.import_dirs and name in SHADOWED:
            # the package is the agent's when any of its __init__ files is (Python loads an
            # extension __init__ before the source one): an image's own folder or package that the
            # agent gave an __init__ of its own is the agent's doing
            if any(
                self.from_agent(f"{inside}/{init}", os.lstat(self.host(f"{inside}/{init}")))
                for init in _inits_of(self.host(inside))
            ):
                self.move_aside(
                    inside,
                    TamperKind.SHADOW_MODULE,
                    f"package '{name}' shadows the {'test runner' if name in RUNNER_MODULES else 'standard library'}",
                )
                return True
        return False

    def _check_entry(self, inside: str, name: str, parent: str, st: os.stat_result, ctx: _Places) -> None:
        mode = st.st_mode
        if stat.S_ISLNK(mode):
            where = self.resolve(inside)
            if where is None or _is_protected(where):
                self.move_aside(
                    inside,
                    TamperKind.PROTECTED_LINK,
                    f"link to {os.readlink(self.host(inside))!r} resolves to {where or 'a loop'}",
                )
            return
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            self.move_aside(inside, TamperKind.SPECIAL_FILE, f"{_describe(st)}: a reader of it would hang")
            return
        if not stat.S_ISREG(mode):
            return
        if (st.st_dev, st.st_ino) in self._planted_inodes:
            self.move_aside(inside, TamperKind.PROTECTED_LINK, "hard link to a file planted under a protected path")
            return
        module = name.split(".")[0]
        if parent in ctx.startup_dirs and (
            module in {"sitecustomize", "usercustomize"} and name.endswith((".py", ".pyc")) or name.endswith(".pth")
        ):
            self.move_aside(inside, TamperKind.PYTHON_STARTUP, f"runs at every Python start-up from {parent}")
        elif parent in ctx.config_dirs and (
            name in PYTEST_INI_NAMES
            or name in {"pyproject.toml", "tox.ini", "setup.cfg"}
            and _PYTEST_SECTION.search(_head(self.host(inside)))
        ):
            self.move_aside(
                inside,
                TamperKind.RUNNER_CONFIG,
                f"pytest would read it (in {parent}, the working folder or an ancestor)",
            )
        elif parent in ctx.import_dirs and module in SHADOWED and name.endswith((".py", ".pyc", ".so")):
            self.move_aside(
                inside,
                TamperKind.SHADOW_MODULE,
                f"module '{module}' shadows the {'test runner' if module in RUNNER_MODULES else 'standard library'}",
            )
        elif parent in ctx.uv_bins and name in UV_ENV_FILES:
            self.move_aside(inside, TamperKind.SHELL_STARTUP, "the uv installer's env file, which test scripts source")
        elif parent in ctx.path_dirs and name in self.known_commands:
            self.move_aside(inside, TamperKind.PLANTED_TOOL, f"shadows the command '{name}' on a test script's PATH")
        elif parent in ctx.homes and name in SHELL_STARTUP:
            text = _added_lines(self.host(inside), self.template / inside.lstrip("/") if self.template else None)
            hit = _STEERING_SHELL.search(text)
            if hit:
                self.move_aside(
                    inside,
                    TamperKind.SHELL_STARTUP,
                    f"sets what a sourcing test script runs: {hit.group(0).strip()[:60]!r}",
                )

    def resolve(self, inside: str) -> str | None:
        """Where a path leads inside the sandbox, following links as text within the rootfs. None: a loop."""
        parts = deque(p for p in inside.split("/") if p)
        done: list[str] = []
        hops = 0
        while parts:
            part = parts.popleft()
            if part == ".":  # empty parts were never queued
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            done.append(part)
            if done[0] in _HOST_MOUNTS or done[0] in {"logs", "tests", "solution", ".agentmill"}:
                continue  # not the agent's tree: the rest is read as text
            host = self.rootfs.joinpath(*done)
            try:
                st = os.lstat(host)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                hops += 1
                if hops > _MAX_HOPS:
                    return None
                target = os.readlink(host)
                done.pop()
                if target.startswith("/"):
                    done = []
                parts.extendleft(reversed([p for p in target.split("/") if p]))
        return "/" + "/".join(done)


@dataclass
class _Places:
    """The folders whose contents steer a test run, as seen from inside the sandbox."""

    workdir: str
    env: dict[str, str]
    homes: Collection[str]  # a set once made

    def __post_init__(self) -> None:
        work = os.path.normpath(self.workdir or "/")
        ancestors = {work}
        while work != "/":
            work = os.path.dirname(work)
            ancestors.add(work)
        pythonpath = {os.path.normpath(p) for p in self.env.get("PYTHONPATH", "").split(":") if p.startswith("/")}
        user_sites = {f"{h}/.local/lib/{v}/site-packages" for h in self.homes for v in _python_dirs()}
        self.config_dirs = ancestors | {"/", "/app", *self.homes}
        self.import_dirs = {os.path.normpath(self.workdir or "/"), "/", "/app", *pythonpath}
        self.startup_dirs = user_sites | pythonpath | self.import_dirs
        self.uv_bins = {f"{h}/.local/bin" for h in self.homes}
        path_entries = {os.path.normpath(p) for p in self.env.get("PATH", "").split(":") if p.startswith("/")}
        agent_path = {p for p in path_entries if not p.startswith(("/usr/", "/.agentmill/")) and p != "/usr"}
        self.path_dirs = agent_path | self.uv_bins | {f"{h}/bin" for h in self.homes} | {"/app", "/app/bin"}
        self.homes = set(self.homes)


def _python_dirs() -> list[str]:
    return [f"python3.{m}" for m in range(6, 16)]


def _listdir(path: Path) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _listdir_unpinned(path: Path) -> list[str]:
    """A folder's entries; one the agent made unreadable (when we are not root) is opened up first."""
    try:
        return os.listdir(path)
    except PermissionError:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            os.chmod(path, stat.S_IMODE(st.st_mode) | stat.S_IRWXU)
        return _listdir(path)


def _inits_of(path: Path) -> list[str]:
    """The package's __init__ files (source, bytecode, extensions); none: not a package."""
    return sorted(
        n
        for n in _listdir(path)
        if n in ("__init__.py", "__init__.pyc") or n.startswith("__init__.") and n.endswith(".so")
    )


def _head(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        return os.read(fd, _READ_CAP)
    finally:
        os.close(fd)


def _added_lines(path: Path, original: Path | None) -> str:
    """The lines of a text file that its image version lacks (all of them when the image had none)."""
    text = _head(path).decode("utf-8", "replace")
    try:
        before = set(_head(original).decode("utf-8", "replace").splitlines()) if original is not None else set()
    except OSError:
        before = set()
    return "\n".join(line for line in text.splitlines() if line not in before)


def _is_protected(inside: str) -> bool:
    return any(inside == p or inside.startswith(p + "/") for p in PROTECTED)


def _describe(st: os.stat_result) -> str:
    m = st.st_mode
    kind = (
        "folder"
        if stat.S_ISDIR(m)
        else "link"
        if stat.S_ISLNK(m)
        else "FIFO"
        if stat.S_ISFIFO(m)
        else "socket"
        if stat.S_ISSOCK(m)
        else "file"
    )
    return f"{kind}, mode {stat.S_IMODE(m):04o}"


def known_commands(*dirs: Path) -> frozenset[str]:
    """Command names the verifier's trusted folders provide: planting one elsewhere is shadowing."""
    names: set[str] = set()
    for d in dirs:
        names.update(_listdir(d))
    return frozenset(names)


def harden(
    rootfs: Path,
    template: Path | None,
    quarantine: Path,
    *,
    workdir: str,
    env: dict[str, str],
    command_dirs: tuple[Path, ...] = (),
    overlay: bool = False,
) -> list[Tamper]:
    """Neutralise what the agent left that would steer verification; return the evidence."""
    cmds = known_commands(*(command_dirs or (Path("/usr/bin"), Path("/usr/sbin"))))
    return Hardening(rootfs, template, quarantine, workdir=workdir, env=env, known_commands=cmds, overlay=overlay).run()
