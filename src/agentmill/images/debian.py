"""Which Debian root filesystem stands in for a Dockerfile's FROM, and what that image sets itself.

The table (docs/images.md has it for readers): every Debian-family reference maps to one Debian
release built from Debian's archive with mmdebstrap (minbase + python3, which the sandbox's exec
server needs). One release, bookworm (the host's), keeps the offline verifier toolkit's Python
(3.11) valid inside every image; the differences are reported as notes on the image.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agentmill.errors import NeedsContainerError
from agentmill.images.base import _FOREIGN

RELEASE = "bookworm"
RELEASE_PYTHON = "3.11"
VARIANT = "minbase"
BASE_PACKAGES = ("python3",)  # the guest exec server runs on the image's own python3
MIRROR = "http://deb.debian.org/debian"
_TBENCH = "ghcr.io/laude-institute/t-bench/"
_DEBIAN_CODENAMES = {"bookworm": "12", "bullseye": "11", "trixie": "13", "buster": "10", "sid": "unstable"}
_UBUNTU = {"20.04": "focal", "22.04": "jammy", "24.04": "noble", "24.10": "oracular", "25.04": "plucky"}


@dataclass(frozen=True)
class BaseChoice:
    """What FROM <ref> becomes: the Debian base, extra layer steps, and what the image sets."""

    ref: str
    release: str = RELEASE
    variant: str = VARIANT
    packages: tuple[str, ...] = BASE_PACKAGES
    setup: tuple[str, ...] = ()  # RUN-style steps that make the base look like the reference (cached layers)
    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def _split(ref: str) -> tuple[str, str]:
    name = ref.strip().lower().split("@")[0]
    if ":" in name.split("/")[-1]:
        repo, _, tag = name.rpartition(":")
        return repo, tag
    return name, "latest"


# python:* images: CPython on PATH as `python`/`pip`, pip allowed to install into the system.
_PYTHON_SETUP = (
    "apt-get update && apt-get install -y --no-install-recommends python3-pip python3-venv "
    "python-is-python3 && ln -sf /usr/bin/pip3 /usr/local/bin/pip && rm -rf /var/lib/apt/lists/*",
)
_PYTHON_ENV = {"LANG": "C.UTF-8", "PIP_BREAK_SYSTEM_PACKAGES": "1", "PIP_ROOT_USER_ACTION": "ignore"}
# buildpack-deps: the usual build toolchain and fetchers.
_BUILDPACK_SETUP = (
    "apt-get update && apt-get install -y --no-install-recommends build-essential curl wget git "
    "ca-certificates pkg-config && rm -rf /var/lib/apt/lists/*",
)


def choose_base(ref: str) -> BaseChoice:
    """The Debian base for FROM `ref`; NeedsContainerError for what no Debian release can stand in for."""
    repo, tag = _split(ref)
    last = repo.split("/")[-1]
    words = set(re.split(r"[^a-z0-9]+", f"{last}-{tag}"))
    if any(w in words or last.startswith(w) for w in _FOREIGN) or "alpine" in tag:
        raise NeedsContainerError(f"base image '{ref}' is not Debian-based")
    notes: list[str] = []
    if repo.startswith(_TBENCH):
        inner = last  # python-3-13, ubuntu-24-04, deveval, ...
        base = choose_base(
            "python:" + inner[len("python-") :].replace("-", ".")
            if inner.startswith("python-")
            else "ubuntu:" + inner[len("ubuntu-") :].replace("-", ".")
            if inner.startswith("ubuntu-")
            else "debian:bookworm"
        )
        setup = base.setup + (
            "apt-get update && apt-get install -y --no-install-recommends tmux curl && rm -rf /var/lib/apt/lists/*",
        )
        return BaseChoice(
            ref,
            setup=setup,
            workdir="/app",
            env=dict(base.env),
            notes=base.notes + (f"'{ref}' is Terminal-Bench's base: {RELEASE} + tmux, curl, WORKDIR /app",),
        )
    if last == "python":
        m = re.match(r"(\d+)(?:\.(\d+))?", tag)
        if m and f"{m.group(1)}.{m.group(2)}" != RELEASE_PYTHON and m.group(2) is not None:
            notes.append(
                f"'{ref}' asks for Python {m.group(1)}.{m.group(2)}; Debian {RELEASE} provides {RELEASE_PYTHON}"
            )
        other = [c for c in _DEBIAN_CODENAMES if c in tag and c != RELEASE]
        if other:
            notes.append(f"'{ref}' is based on Debian {other[0]}; built on {RELEASE}")
        return BaseChoice(ref, setup=_PYTHON_SETUP, env=dict(_PYTHON_ENV), notes=tuple(notes))
    if last == "buildpack-deps":
        return BaseChoice(ref, setup=_BUILDPACK_SETUP, notes=tuple(notes))
    if last == "ubuntu":
        series = _UBUNTU.get(tag, tag)
        return BaseChoice(
            ref,
            notes=(
                f"'{ref}' (Ubuntu {series}) is built as Debian {RELEASE}: Ubuntu-only packages "
                "(e.g. software-properties-common's PPAs, ubuntu-* metapackages) are missing",
            ),
        )
    if last == "debian":
        other = [c for c in _DEBIAN_CODENAMES if c in tag and c != RELEASE]
        if other:
            notes.append(f"'{ref}' is Debian {other[0]}; built on {RELEASE}")
        return BaseChoice(ref, notes=tuple(notes))
    raise NeedsContainerError(f"base image '{ref}' has no Debian-archive equivalent here")
