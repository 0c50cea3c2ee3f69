"""The verifier toolkit: what container-era test scripts download, provided offline.

Harbor and Terminal-Bench test scripts typically `apt-get install curl`, pipe astral's uv
installer into sh, then `uvx -w pytest==X pytest /tests/test_outputs.py`. Verifiers never get the
network, so the toolkit (built once, from the package registries, at set-up) mounts read-only at
/.agentmill/toolkit in verifier sandboxes: a Python environment with pytest and its CTRF plugin
(over the image's own packages), and small shims for uv, uvx, pytest, curl (only the uv
installer URL is served) and apt-get (host packages only). Requested versions are not honoured:
the toolkit's versions are used and the shims say so on stderr. Python files among the shims
(the pytest guard) go to lib/, which the verifier puts on PYTHONPATH.

The Python environment is built once per package set and copied into each toolkit version, so
changing a shim never reinstalls from the registry.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

from agentmill.runtime.paths import cache_dir, package_assets
from agentmill.tasks.hashing import hash_text, hash_tree

PACKAGES = ("pytest", "pytest-json-ctrf")
MOUNT = "/.agentmill/toolkit"
LIB = f"{MOUNT}/lib"  # the pytest guard, on the verifier's PYTHONPATH
LAYOUT = "3"  # bump when the toolkit's folder layout or contents change: venv/, bin/ (shims), lib/ (python)


def toolkit_path() -> Path:
    shims = package_assets("toolkit")
    apt = package_assets("shims")
    key = hash_text(LAYOUT, hash_tree(shims), hash_tree(apt), *PACKAGES, os.path.realpath("/usr/bin/python3"))[:16]
    return cache_dir() / "toolkit" / key


def ensure_toolkit(*, build: bool = True) -> Path | None:
    """The built toolkit, building it first if asked. None when it is absent and cannot be built."""
    dest = toolkit_path()
    if (dest / ".ready").exists():
        return dest
    if not build:
        return None
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.parent / f"{dest.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (dest / ".ready").exists():
            return dest
        venv = _ensure_venv(dest.parent)
        if venv is None:
            return None
        tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        subprocess.run(["cp", "-a", "--reflink=auto", str(venv), str(tmp / "venv")], check=True)
        (tmp / "bin").mkdir()
        (tmp / "lib").mkdir()
        for src in (package_assets("shims"), package_assets("toolkit")):  # the toolkit's curl wins over the build's
            for f in src.iterdir():
                if f.is_file():
                    shutil.copy2(f, tmp / ("lib" if f.suffix == ".py" else "bin") / f.name)
        subprocess.run(["chmod", "-R", "a+rX,go-w", str(tmp)], check=True)
        (tmp / ".ready").write_text("ok\n")
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    return dest


def venv_dir(root: Path) -> Path:
    """Where the Python environment for this layout, these packages and this host Python lives."""
    return root / f"venv-{hash_text(LAYOUT, *PACKAGES, os.path.realpath('/usr/bin/python3'))[:16]}"


def _ensure_venv(root: Path) -> Path | None:
    """The toolkit's Python environment (pytest and plugins over the host's packages), built once."""
    dest = venv_dir(root)
    if (dest / ".ready").exists():
        return dest / "venv"
    tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        subprocess.run(
            ["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(tmp / "venv")],
            check=True,
            capture_output=True,
            timeout=300,
        )
        subprocess.run(
            # --ignore-installed: a host whose Debian python3-pytest came with another package would
            # otherwise satisfy the install from /usr/lib/python3/dist-packages, which the verifier's
            # image does not have (the task's image, not the host's, is the sandbox's root)
            [
                str(tmp / "venv/bin/python"),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "--ignore-installed",
                *PACKAGES,
            ],
            check=True,
            capture_output=True,
            timeout=600,
        )
    except (subprocess.SubprocessError, OSError):
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    (tmp / ".ready").write_text("ok\n")
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return dest / "venv"


def toolkit_env(base_path: str) -> dict[str, str]:
    return {"PATH": f"{MOUNT}/bin:{base_path}"}
