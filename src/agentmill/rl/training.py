"""What `agentmill train` shares: the check for the optional `train` extra, reading export rows, the
trainers' common arguments and the report a training run returns.

torch, trl and accelerate are imported only by the training modules (rl/sft.py, rl/grpo.py,
rl/checkpoint.py) and only when a command runs; without them the commands stop with one line naming
what to install.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentmill.errors import AgentmillError

TRAIN_MODULES = ("torch", "transformers", "trl", "datasets", "accelerate")

# Nothing is fetched at run time: models and tokenizers are local folders, and the Hugging Face hub
# (telemetry included) stays untouched. Set before transformers is first imported by these commands.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def require_train_extra(modules: tuple[str, ...] | None = None) -> None:
    """One line naming what to install when a module of the extra is missing (`modules`: default all of it)."""
    missing = [m for m in (TRAIN_MODULES if modules is None else modules) if importlib.util.find_spec(m) is None]
    if missing:
        raise AgentmillError(
            f"training needs the 'train' extra (missing: {', '.join(missing)}): "
            "pip install 'agentmill[train]' (torch's CPU wheels: --extra-index-url https://download.pytorch.org/whl/cpu)"
        )


def read_rows(paths: list[Path]) -> list[dict[str, Any]]:
    """Rows of JSONL or Parquet exports, in order; a bad line names its file and line."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        if not path.is_file():
            raise AgentmillError(f"{path}: not found")
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            rows += pq.read_table(path).to_pylist()
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except ValueError as e:
                raise AgentmillError(f"{path}:{n}: not a JSON row: {e}") from None
    return rows


@dataclass
class TrainReport:
    out: Path
    steps: int
    losses: list[float] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)  # GRPO: every reward the verifier gave
    notes: list[str] = field(default_factory=list)

    @property
    def finite(self) -> bool:
        return bool(self.losses) and all(math.isfinite(x) for x in self.losses)


def trainer_args() -> dict[str, Any]:
    """Arguments every run shares: CPU when there is no GPU, no external loggers, no mid-run checkpoints.

    On a CPU, float32: TRL turns bf16 on by default, and a CPU without bf16 instructions (AVX2 only, as
    most AMD EPYCs) then runs every matrix product through a slow fallback: two SFT steps of SmolLM2-135M
    took 318 s, against 30 s in float32."""
    import torch

    cpu = not torch.cuda.is_available()
    precision = {"bf16": False, "fp16": False} if cpu else {}
    return {"use_cpu": cpu, **precision, "report_to": [], "save_strategy": "no", "logging_steps": 1}


def load_tokenizer(model: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model), local_files_only=True)


def logged_losses(trainer) -> list[float]:
    return [h["loss"] for h in trainer.state.log_history if "loss" in h]
