"""`agentmill train sft`: TRL's SFTTrainer on exported `trl` rows, assistant tokens only.

The rows are tokenised here (rl/sft_data.py) with a chat template that has generation markers
(rl/chat_template.py) and handed to the trainer as `input_ids` + `labels` (-100 off the assistant's
turns), which TRL uses as they are. TRL's own truncation is switched off (`max_length=None`): a row
over `--max-length` is left out and reported, never cut mid-turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentmill.errors import AgentmillError
from agentmill.rl.chat_template import use_marked_template
from agentmill.rl.sft_data import Prepared, prepare_rows
from agentmill.rl.training import (
    TrainReport,
    load_tokenizer,
    logged_losses,
    read_rows,
    require_train_extra,
    trainer_args,
)


@dataclass
class SFTRun:
    trainer: Any  # trl.SFTTrainer, ready to train
    tokenizer: Any  # with the marked template (saved with the checkpoint)
    prepared: Prepared
    template_origin: str

    def notes(self) -> list[str]:
        notes = [f"chat template: {self.template_origin}", f"{len(self.prepared.rows)} rows", *self.prepared.skipped]
        if self.prepared.trimmed:
            notes.append(f"{self.prepared.trimmed} rows ended on an unanswered turn: dropped before training")
        return notes


def build_sft(
    model: Path,
    data: list[Path],
    out: Path,
    *,
    steps: int = 100,
    learning_rate: float = 1e-5,
    batch_size: int = 1,
    max_length: int | None = None,
    chat_template: Path | None = None,
    seed: int = 0,
) -> SFTRun:
    """The trainer and its data, before any step (tests and callers can look at what it will be fed)."""
    require_train_extra()
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    tokenizer = load_tokenizer(model)
    origin = use_marked_template(tokenizer, chat_template)
    prepared = prepare_rows(read_rows(data), tokenizer, max_length=max_length)
    if not prepared.rows:
        raise AgentmillError("no row to train on: " + ("; ".join(prepared.skipped[:5]) or "the files are empty"))
    dataset = Dataset.from_list([{"input_ids": r["input_ids"], "labels": r["labels"]} for r in prepared.rows])
    args = SFTConfig(
        output_dir=str(out),
        max_steps=steps,
        learning_rate=learning_rate,
        per_device_train_batch_size=batch_size,
        max_length=None,
        seed=seed,
        **trainer_args(),
    )
    trainer = SFTTrainer(
        model=AutoModelForCausalLM.from_pretrained(str(model), local_files_only=True),
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    return SFTRun(trainer, tokenizer, prepared, origin)


def train_sft(model: Path, data: list[Path], out: Path, **settings: Any) -> TrainReport:
    """Train, then save the checkpoint with its marked template (the next round trains the same way)."""
    run = build_sft(model, data, out, **settings)
    run.trainer.train()
    run.trainer.save_model(str(out))
    run.tokenizer.save_pretrained(str(out))
    return TrainReport(out, run.trainer.args.max_steps, logged_losses(run.trainer), notes=run.notes())
