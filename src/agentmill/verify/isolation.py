"""The verifier's own environment: nothing the agent could prepare decides how the tests run.

- HOME is the verifier's own folder (`/.agentmill/home`), a copy of the image's home as built (its
  git identity, an installed uv: the task's files), so the agent's `~/.bashrc`, `~/.local/bin/env`,
  user site-packages and dotfiles are not read; the agent's /root stays readable by absolute path.
- Python: no user site (PYTHONNOUSERSITE), no start-up or home overrides; the pytest guard's folder
  leads PYTHONPATH (the task's own PYTHONPATH follows, then the test-deps layer when the test
  scripts install packages: verify/test_deps.py). pip is offline (PIP_NO_INDEX).
- pytest, however it is started: PYTEST_ADDOPTS pins rootdir and conftest cut-off to /tests, the
  task's ini file in /tests (or an empty one of the toolkit's) with `-c`, no cache provider, and
  the guard plugin; plugin autoload is off and the guard loads only trusted plugins.
- PATH: the toolkit, then the read-only system folders, then whatever else the image named.
- Shell and loader hooks (BASH_ENV, ENV, LD_PRELOAD, ...) are removed even if the image set them.
"""

from __future__ import annotations

import re
from pathlib import Path

from agentmill.verify.test_deps import SITE as TEST_DEPS_SITE
from agentmill.verify.toolkit import LIB, MOUNT

HOME = "/.agentmill/home"
PIN = "/.agentmill/pin"
TRUSTED_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
DROPPED = (
    "BASH_ENV",
    "ENV",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PYTHONINSPECT",
    "PYTHONUSERBASE",
    "PYTHONSAFEPATH",
    "LD_PRELOAD",
    "LD_AUDIT",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "CDPATH",
    "GLOBIGNORE",
    "PS4",
    "PYTEST_PLUGINS",
    "PYTEST_ADDOPTS",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
    "PIP_USER",
    "XDG_CONFIG_HOME",
)
_INI_SECTION = {
    "pytest.ini": None,
    ".pytest.ini": None,
    "pyproject.toml": r"^\s*\[tool\.pytest(\.ini_options)?\]",
    "tox.ini": r"^\s*\[pytest\]",
    "setup.cfg": r"^\s*\[tool:pytest\]",
}


def task_ini(tests: Path) -> str | None:
    """The task's own pytest configuration in /tests, in pytest's order of preference."""
    for name, section in _INI_SECTION.items():
        path = tests / name
        if path.is_file() and not path.is_symlink():
            if section is None or re.search(section, path.read_text(errors="replace"), re.MULTILINE):
                return f"/tests/{name}"
    return None


def write_pin(pin: Path, tests: Path) -> str:
    """The pinned pytest options, written where the toolkit's pytest shim reads them. Returns them."""
    pin.mkdir(parents=True, exist_ok=True)
    (pin / "pytest.ini").write_text("[pytest]\n")
    ini = task_ini(tests) or f"{PIN}/pytest.ini"
    addopts = f"-p agentmill_pytest_guard -p no:cacheprovider --rootdir=/tests --confcutdir=/tests -c {ini}"
    (pin / "addopts").write_text(addopts)
    for p in (pin, *pin.iterdir()):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return addopts


def verifier_env(
    image_env: dict[str, str], task_env: dict[str, str], addopts: str, *, toolkit: bool, test_deps: bool = False
) -> dict[str, str]:
    """The complete environment of the test script (it replaces the image's, not extends it)."""
    env = {"LANG": "C.UTF-8", "TERM": "xterm-256color", "USER": "root", **image_env, **task_env}
    for key in DROPPED:
        env.pop(key, None)
    image_path = [p for p in env.get("PATH", "").split(":") if p]
    rest = [p for p in image_path if p not in TRUSTED_PATH and not p.startswith("/.agentmill/")]
    env["PATH"] = ":".join(([f"{MOUNT}/bin"] if toolkit else []) + list(TRUSTED_PATH) + rest)
    env["HOME"] = HOME
    env["PYTHONNOUSERSITE"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONPATH"] = ":".join(
        [LIB] + [p for p in env.get("PYTHONPATH", "").split(":") if p] + ([TEST_DEPS_SITE] if test_deps else [])
    )
    # Offline: pip answers "already satisfied" for what the test-deps layer holds, and fails fast otherwise.
    env.update({"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_BREAK_SYSTEM_PACKAGES": "1"})
    if toolkit:
        env["PYTEST_ADDOPTS"] = addopts
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the guard loads the trusted plugins itself
    else:  # no guard to load: pin what can be pinned
        env["PYTEST_ADDOPTS"] = addopts.replace("-p agentmill_pytest_guard ", "")
    return env
