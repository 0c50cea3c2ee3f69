"""How the guest exec server is started: as an imported module, from bytecode compiled once on the
host, not as a script. Python compiles a script's source on every run (the server: ~1.4 ms of CPU
on each sandbox's critical path) but loads an imported module's cached .pyc. The guest folder is
read-only inside the sandbox, so the host writes the .pyc; a guest whose python3 is another minor
version than the host's ignores it (another cache tag) and compiles the source, as before.
"""

from __future__ import annotations

import importlib.util
import py_compile
from pathlib import Path

from agentmill.runtime.paths import package_assets

GUEST_DIR = "/.agentmill/guest"
# The server's folder first on sys.path (-I leaves the script's folder off it), then its main().
LAUNCH = f"import sys; sys.path.insert(0, {GUEST_DIR!r}); import server; server.main(sys.argv[1])"


def guest_assets() -> Path:
    """The guest folder's readable copy, with server.py's bytecode beside it."""
    guest = package_assets("guest")
    source = guest / "server.py"
    cached = Path(importlib.util.cache_from_source(str(source)))
    if not cached.exists():
        try:
            py_compile.compile(str(source), cfile=str(cached), doraise=True)
            cached.parent.chmod(0o755)  # sandbox uids read it
            cached.chmod(0o644)
        except (OSError, py_compile.PyCompileError):
            pass  # the guest compiles the source itself
    return guest


def guest_launch_argv(sock: str) -> list[str]:
    return ["/usr/bin/python3", "-I", "-S", "-c", LAUNCH, sock]
