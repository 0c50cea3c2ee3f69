"""`agentmill train`: thin wrappers over TRL for agentmill's exports (the optional `train` extra).

- `train_sft`: TRL's SFTTrainer on `trl` rows, tokenised here (rl/sft_data.py) with a chat template
  that has generation markers (rl/chat_template.py), so only the assistant's tokens carry loss and a
  trailing unanswered turn is never trained. The trainer gets `input_ids` + `assistant_masks`.
- `train_rl`: TRL's GRPOTrainer on `rl` rows; every reward is the task's verifier on what the
  completion did in agentmill's sandbox (rl/reward.py).
- `checkpoint_from_gguf`: a trainable transformers checkpoint from a GGUF file (transformers
  dequantises llama-family GGUF weights; a quantised file gives a lossy checkpoint, fine for smoke
  runs, not for real training: start from the model's original weights then).

torch, trl and accelerate are imported only here and only when a command runs; without them the
commands stop with one line naming what to install.
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
from agentmill.rl.chat_template import use_marked_template
from agentmill.rl.reward import NOT_FOUND, GRPOReward
from agentmill.rl.sft_data import prepare_rows

TRAIN_MODULES = ("torch", "transformers", "trl", "datasets", "accelerate")


def require_train_extra(modules: tuple[str, ...] = TRAIN_MODULES) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise AgentmillError(f"training needs the 'train' extra (missing: {', '.join(missing)}): "
                             "pip install 'agentmill[train]' (torch's CPU wheels: --extra-index-url https://download.pytorch.org/whl/cpu)")


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


def _device_args() -> dict[str, Any]:
    import torch

    return {"use_cpu": not torch.cuda.is_available(), "report_to": [], "save_strategy": "no", "logging_steps": 1}


def _tokenizer(model: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model), local_files_only=True)


def train_sft(model: Path, data: list[Path], out: Path, *, steps: int = 100, learning_rate: float = 1e-5,
              batch_size: int = 1, max_length: int | None = None, chat_template: Path | None = None, seed: int = 0) -> TrainReport:
    require_train_extra()
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    tokenizer = _tokenizer(model)
    origin = use_marked_template(tokenizer, chat_template)
    prepared = prepare_rows(read_rows(data), tokenizer, max_length=max_length)
    if not prepared.rows:
        raise AgentmillError("no row to train on: " + ("; ".join(prepared.skipped[:5]) or "the files are empty"))
    dataset = Dataset.from_list([{"input_ids": r["input_ids"], "assistant_masks": r["assistant_masks"]} for r in prepared.rows])
    args = SFTConfig(output_dir=str(out), max_steps=steps, learning_rate=learning_rate, per_device_train_batch_size=batch_size,
                     seed=seed, **_device_args())
    trainer = SFTTrainer(model=AutoModelForCausalLM.from_pretrained(str(model), local_files_only=True), args=args,
                         train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))  # with the marked template: the next round trains the same way
    notes = [f"chat template: {origin}", f"{len(prepared.rows)} rows", *prepared.skipped]
    if prepared.trimmed:
        notes.append(f"{prepared.trimmed} rows ended on an unanswered turn: dropped before training")
    return TrainReport(out, steps, [h["loss"] for h in trainer.state.log_history if "loss" in h], notes=notes)


def train_rl(model: Path, data: list[Path], tasks: list[Path], out: Path, *, steps: int = 100, generations: int = 4,
             max_completion_tokens: int = 512, learning_rate: float = 1e-6, tamper_penalty: float | None = None,
             concurrency: int = 4, seed: int = 0) -> TrainReport:
    require_train_extra()
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    rows = read_rows(data)
    if not rows:
        raise AgentmillError("no RL row to train on (agentmill export --format rl)")
    # only what the reward needs travels with each prompt: the task's hash and agent
    dataset = Dataset.from_list([{"prompt": r["prompt"], "reward_model": {"ground_truth": r["reward_model"]["ground_truth"]},
                                  "extra_info": {"task_hash": r["extra_info"]["task_hash"], "agent": r["extra_info"].get("agent") or ""}}
                                 for r in rows])
    reward = GRPOReward(tasks=tasks, tamper_penalty=tamper_penalty, concurrency=concurrency)
    args = GRPOConfig(output_dir=str(out), max_steps=steps, learning_rate=learning_rate, num_generations=generations,
                      per_device_train_batch_size=generations, max_completion_length=max_completion_tokens, seed=seed,
                      **_device_args())
    tokenizer = _tokenizer(model)
    trainer = GRPOTrainer(model=str(model), reward_funcs=[reward], args=args, train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    return TrainReport(out, steps, [h["loss"] for h in trainer.state.log_history if "loss" in h],
                       rewards=[s.score for s in reward.history if s.outcome != NOT_FOUND],
                       notes=[f"outcomes: {', '.join(sorted({s.outcome for s in reward.history}))}"])


def tokenizer_from_gguf(gguf: Path, out: Path, *, chat_template: Path | None = None) -> str:
    """The GGUF file's tokenizer as a transformers tokenizer folder, with a marked chat template (no torch needed)."""
    from agentmill.traces.tokens import gguf_tokenizer

    require_train_extra(("transformers", "tokenizers", "gguf"))
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # no "PyTorch was not found" banner: not needed here
    tokenizer = gguf_tokenizer(gguf)
    origin = use_marked_template(tokenizer, chat_template)
    tokenizer.save_pretrained(str(out))
    return origin


def checkpoint_from_gguf(gguf: Path, out: Path, *, chat_template: Path | None = None) -> list[str]:
    """A trainable checkpoint (weights dequantised by transformers) plus the marked tokenizer."""
    require_train_extra(("torch", "transformers", "gguf"))
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, local_files_only=True)
    model.save_pretrained(str(out))
    origin = tokenizer_from_gguf(gguf, out, chat_template=chat_template)
    return [f"weights dequantised from {gguf.name} (a quantised file gives a lossy checkpoint)", f"chat template: {origin}"]
