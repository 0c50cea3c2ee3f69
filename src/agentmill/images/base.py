"""Which base images the host's own userland can stand in for.

Without a container engine the sandbox runs on the host's read-only /usr. That is faithful for
Debian-family images whose tools the host has; anything else needs a container backend.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.errors import NeedsContainerError

_FOREIGN = (
    "alpine",
    "fedora",
    "centos",
    "rockylinux",
    "almalinux",
    "amazonlinux",
    "archlinux",
    "opensuse",
    "oraclelinux",
    "redhat",
    "ubi",
    "busybox",
    "scratch",
    "nixos",
    "gentoo",
    "clearlinux",
    "windows",
    "nanoserver",
    "distroless",
    "wolfi",
    "chainguard",
)
# Official toolchain images are Debian plus one toolchain: fine when the host has that toolchain.
_TOOLCHAINS = {
    "node": "node",
    "golang": "go",
    "rust": "cargo",
    "gcc": "gcc",
    "openjdk": "java",
    "eclipse-temurin": "java",
    "amazoncorretto": "java",
    "maven": "mvn",
    "ruby": "ruby",
    "php": "php",
    "perl": "perl",
    "r-base": "R",
    "julia": "julia",
    "haskell": "ghc",
    "swift": "swift",
    "postgres": "postgres",
    "redis": "redis-server",
    "nginx": "nginx",
    "mysql": "mysqld",
}
_DEBIANISH = ("debian", "ubuntu", "python", "buildpack-deps", "bookworm", "bullseye", "trixie")


def check_base(image: str) -> list[str]:
    """Notes about running `image` on the host userland; raises NeedsContainerError if it cannot."""
    ref = image.strip().lower()
    if not ref:
        return []
    name = ref.split("@")[0]
    repo, _, tag = name.rpartition(":") if ":" in name.split("/")[-1] else (name, "", "")
    last = repo.split("/")[-1]
    words = set(re.split(r"[^a-z0-9]+", f"{last}-{tag}"))
    if any(w in words or last.startswith(w) for w in _FOREIGN) or "alpine" in tag:
        raise NeedsContainerError(f"base image '{image}' is not Debian-based")
    for word, tool in _TOOLCHAINS.items():
        if last == word or last.startswith(word + "-"):
            if not (Path("/usr/bin") / tool).exists():
                raise NeedsContainerError(f"base image '{image}' needs '{tool}', which the host lacks")
            return [f"base image '{image}' runs on the host's Debian userland with the host's {tool}"]
    if any(w in last or w in tag for w in _DEBIANISH):
        notes = []
        if "python" in last:
            m = re.search(r"3[.-](\d+)", f"{last}:{tag}")
            host_minor = _host_python_minor()
            if m and host_minor and m.group(1) != host_minor:
                notes.append(f"base image '{image}' asks for Python 3.{m.group(1)}; the host provides 3.{host_minor}")
        if "ubuntu" in last:
            notes.append(f"base image '{image}' runs on the host's Debian userland")
        return notes
    raise NeedsContainerError(f"base image '{image}' is unknown; only Debian-family images run without containers")


def _host_python_minor() -> str | None:
    for p in sorted(Path("/usr/bin").glob("python3.*")):
        m = re.fullmatch(r"python3\.(\d+)", p.name)
        if m:
            return m.group(1)
    return None


@dataclass(frozen=True)
class BaseDefaults:
    """What a known base image sets itself, applied at FROM as `docker build` would inherit it."""

    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)


# Terminal-Bench's base images (ghcr.io/laude-institute/t-bench/<name>) are a Debian or Ubuntu
# image plus tmux/asciinema with WORKDIR /app; their tasks' test scripts refuse to run from `/`.
_TBENCH_PREFIX = "ghcr.io/laude-institute/t-bench/"


def base_defaults(image: str) -> BaseDefaults:
    ref = image.strip().lower()
    repo = ref.split("@")[0].rsplit(":", 1)[0] if ":" in ref.split("/")[-1] else ref.split("@")[0]
    last = repo.split("/")[-1]
    if repo.startswith(_TBENCH_PREFIX):
        env = {"LANG": "C.UTF-8"} if last.startswith("python") else {}
        return BaseDefaults(workdir="/app", env=env)
    if last == "python" or last.startswith("python-") and repo.count("/") == 0:
        return BaseDefaults(env={"LANG": "C.UTF-8"})  # the official python images set it
    return BaseDefaults()
