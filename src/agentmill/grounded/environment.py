"""The agent's environment for grounded tasks: an office-capable image from Debian's packages.

A grounded task's deliverables are spreadsheets, documents and reports built from real office
files, so the agent's image has what a person at that desk would script with: Python with
openpyxl, python-docx, pandas, pypdf, reportlab, XlsxWriter and lxml; pdftotext (poppler-utils),
xmllint (libxml2-utils) and jq; and tmux, the terminal the teacher (terminus) types into (a
bare Debian image has none). Every one is a Debian bookworm package, installed by the image's one
`RUN apt-get install` layer: the Debian builder caches that layer by (step, base), so all
tasks of a run (and of later runs) share it; on the host builder the host's installed packages
stand in (scripts/setup.sh installs the same list).

Configurable per run with `[environment]` in the ground config: `base` (a Debian-family FROM),
`packages` (replaces the list) and `extra_packages` (adds to it), or `dockerfile`: the path of a
Dockerfile of the user's own, to which the task appends `WORKDIR /app` and `COPY workspace/ /app/`
(its build context holds only `workspace/`).
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentmill.errors import AgentmillError

OFFICE_PACKAGES: tuple[str, ...] = (
    "tmux",  # the terminal the terminus agent (the teacher) types into
    "python3-openpyxl",  # xlsx read/write with formulas
    "python3-docx",  # docx read/write
    "python3-pandas",  # tables (pulls numpy)
    "python3-pypdf",  # PDF read
    "python3-reportlab",  # PDF write
    "python3-xlsxwriter",  # xlsx write (charts, formats)
    "python3-lxml",  # XML/HTML
    "python3-markdown",  # md -> html
    "poppler-utils",  # pdftotext, pdfinfo
    "libxml2-utils",  # xmllint
    "jq",  # json on the command line
)
# Debian package names (policy 5.6.1), optionally pinned with =version: nothing a shell could read twice.
_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$")
_TAIL = "WORKDIR /app\nCOPY workspace/ /app/\n"


class EnvironmentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base: str = "debian:bookworm-slim"
    packages: list[str] = Field(default_factory=lambda: list(OFFICE_PACKAGES))
    extra_packages: list[str] = Field(default_factory=list)
    dockerfile: str | None = None  # a Dockerfile of the user's; base and packages then do not apply

    @field_validator("packages", "extra_packages")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        bad = [p for p in v if not _PACKAGE.match(p)]
        if bad:
            raise ValueError(f"not Debian package names: {bad}")
        return v

    @field_validator("base")
    @classmethod
    def _base(cls, v: str) -> str:
        if not v or any(c.isspace() for c in v):
            raise ValueError(f"not an image reference: {v!r}")
        return v

    @model_validator(mode="after")
    def _one_way(self) -> EnvironmentConfig:
        changed = {f for f in ("base", "packages", "extra_packages") if f in self.model_fields_set}
        if self.dockerfile and changed:
            raise ValueError(f"give either dockerfile or {sorted(changed)}, not both")
        return self

    def all_packages(self) -> list[str]:
        return list(dict.fromkeys([*self.packages, *self.extra_packages]))


def dockerfile_text(env: EnvironmentConfig | None) -> str:
    """The task's environment/Dockerfile for this environment."""
    env = env or EnvironmentConfig()
    if env.dockerfile:
        path = Path(env.dockerfile).expanduser()
        try:
            own = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise AgentmillError(f"environment.dockerfile: cannot read {path}: {e}") from None
        if not re.search(r"^\s*FROM\s", own, re.MULTILINE | re.IGNORECASE):
            raise AgentmillError(f"environment.dockerfile: {path} has no FROM line")
        return own.rstrip("\n") + "\n" + _TAIL
    text = f"FROM {env.base}\n"
    packages = env.all_packages()
    if packages:
        text += (
            "RUN apt-get update && apt-get install -y --no-install-recommends "
            + " ".join(packages)
            + " && rm -rf /var/lib/apt/lists/*\n"
        )
    return text + _TAIL
