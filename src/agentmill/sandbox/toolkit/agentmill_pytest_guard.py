"""agentmill's pytest guard, loaded into every pytest a verifier runs (`-p` in PYTEST_ADDOPTS).

Plugin autoload is off in verifier sandboxes (PYTEST_DISABLE_PLUGIN_AUTOLOAD): this module loads
the entry-point plugins installed in trusted places (the toolkit, the host's and the image's
read-only site folders), so `--ctrf` and the image's own plugins still work, and refuses the rest.
Before any test runs it checks that pytest, its plugins, conftests and ini file come from trusted
places; anything else is reported on stderr as tamper evidence and ends the session unpassed.
"""

import os
import sys

TRUSTED = ("/.agentmill/toolkit/", "/.agentmill/testdeps/", "/.agentmill/pin/", "/usr/lib/python3", "/usr/local/lib/python3", "/tests/")
MARK = "AGENTMILL_TAMPER"


def _trusted(path) -> bool:
    return os.path.realpath(str(path)).startswith(TRUSTED)


def _report(kind: str, path, detail: str) -> None:
    sys.stderr.write(f"{MARK}\t{kind}\t{str(path)[:300]}\t{detail[:300]}\n")
    sys.stderr.flush()


def pytest_addhooks(pluginmanager):
    """Runs as this plugin registers (before options are parsed): load the trusted entry points."""
    from importlib.metadata import distributions

    seen = set()
    for dist in distributions():
        eps = [ep for ep in dist.entry_points if ep.group == "pytest11"]
        if not eps:
            continue
        where = str(dist.locate_file(""))
        if not _trusted(where):
            _report("runner_guard", where, f"pytest plugin '{dist.metadata['Name']}' from an untrusted folder: not loaded")
            continue
        for ep in eps:
            if ep.name in seen or pluginmanager.get_plugin(ep.name) is not None or pluginmanager.is_blocked(ep.name):
                continue
            seen.add(ep.name)
            pluginmanager.register(ep.load(), name=ep.name)


def pytest_configure(config):
    problems = []
    for name in ("pytest", "_pytest", "pluggy"):
        path = getattr(sys.modules.get(name), "__file__", None)
        if path and not _trusted(path):
            problems.append(("shadow_module", path, f"'{name}' was imported from an untrusted folder"))
    for plugin in config.pluginmanager.get_plugins():
        path = getattr(plugin, "__file__", None)
        if path and not _trusted(path):
            problems.append(("runner_guard", path, "a pytest plugin or conftest outside the trusted folders"))
    inipath = getattr(config, "inipath", None)
    if inipath and not _trusted(inipath):
        problems.append(("runner_config", inipath, "pytest read its configuration outside /tests"))
    for kind, path, detail in problems:
        _report(kind, path, detail)
    if problems:
        import pytest

        pytest.exit("agentmill verifier: untrusted test-runner set-up (see AGENTMILL_TAMPER lines)", returncode=4)
