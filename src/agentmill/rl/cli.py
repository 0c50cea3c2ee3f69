"""`agentmill train ...`: the commands of the optional `train` extra; the logic is in rl/sft.py, rl/grpo.py and rl/checkpoint.py."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from agentmill.errors import AgentmillError

app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Train on agentmill's exports: SFT and GRPO through TRL (needs the 'train' extra: torch, trl).",
)
console = Console(stderr=True, soft_wrap=True)


def _fail(message: str, code: int = 2) -> None:
    console.print(f"[red]error:[/red] {escape(message)}", highlight=False)
    raise typer.Exit(code)


def _say(report) -> None:
    for note in report.notes:
        console.print(escape(note), highlight=False)
    if report.losses:
        console.print(
            f"{len(report.losses)} logged steps; loss {report.losses[0]:.4f} -> {report.losses[-1]:.4f}",
            highlight=False,
        )
    if report.rewards:
        console.print(
            f"{len(report.rewards)} rewards from the verifier; mean {sum(report.rewards) / len(report.rewards):.3f}",
            highlight=False,
        )
    console.print(f"checkpoint: {report.out}", highlight=False)


@app.command("sft")
def sft(
    data: list[Path] = typer.Argument(..., help="`trl` exports (JSONL or Parquet): agentmill export --format trl."),
    model: Path = typer.Option(
        ..., "--model", help="A transformers checkpoint folder (see `agentmill train checkpoint` for GGUF files)."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Where the trained checkpoint goes."),
    steps: int = typer.Option(100, "--steps", min=1, help="Optimiser steps."),
    learning_rate: float = typer.Option(1e-5, "--lr", help="Learning rate."),
    batch_size: int = typer.Option(1, "--batch-size", min=1, help="Rows per device per step."),
    max_length: int | None = typer.Option(
        None, "--max-length", min=1, help="Leave out rows longer than this many tokens (never cut mid-turn)."
    ),
    chat_template: Path | None = typer.Option(
        None,
        "--chat-template",
        help="A chat template with {% generation %} markers (default: the model's, or the bundled ChatML fix).",
    ),
    seed: int = typer.Option(0, "--seed", help="Training seed."),
) -> None:
    """Supervised fine-tuning on the assistant's tokens only (TRL SFTTrainer)."""
    from agentmill.rl.sft import train_sft

    try:
        _say(
            train_sft(
                model,
                data,
                out,
                steps=steps,
                learning_rate=learning_rate,
                batch_size=batch_size,
                max_length=max_length,
                chat_template=chat_template,
                seed=seed,
            )
        )
    except AgentmillError as e:
        _fail(str(e))


@app.command("rl")
def rl(
    data: list[Path] = typer.Argument(..., help="`rl` exports (JSONL or Parquet): agentmill export --format rl."),
    model: Path = typer.Option(..., "--model", help="A transformers checkpoint folder."),
    tasks: list[Path] = typer.Option(
        ..., "--tasks", help="Folder(s) holding the rows' tasks (found by content hash; repeatable)."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Where the trained checkpoint goes."),
    steps: int = typer.Option(100, "--steps", min=1, help="Optimiser steps."),
    generations: int = typer.Option(4, "--generations", min=2, help="Completions per prompt (GRPO's group)."),
    max_completion_tokens: int = typer.Option(512, "--max-completion-tokens", min=1, help="Tokens per completion."),
    learning_rate: float = typer.Option(1e-6, "--lr", help="Learning rate."),
    tamper_penalty: float | None = typer.Option(
        None, "--tamper-penalty", min=0, help="Score tampering with the verifier -P instead of 0."
    ),
    concurrency: int = typer.Option(4, "--concurrency", min=1, help="Sandboxes scoring completions at once."),
    seed: int = typer.Option(0, "--seed", help="Training seed."),
) -> None:
    """GRPO on environment rewards: each completion runs in the sandbox and the task's verifier scores it."""
    from agentmill.rl.grpo import train_rl

    try:
        _say(
            train_rl(
                model,
                data,
                tasks,
                out,
                steps=steps,
                generations=generations,
                max_completion_tokens=max_completion_tokens,
                learning_rate=learning_rate,
                tamper_penalty=tamper_penalty,
                concurrency=concurrency,
                seed=seed,
            )
        )
    except AgentmillError as e:
        _fail(str(e))


@app.command("checkpoint")
def checkpoint(
    gguf: Path = typer.Argument(..., help="A GGUF model file (e.g. the embedded SmolLM2's)."),
    out: Path = typer.Option(..., "--out", "-o", help="The transformers checkpoint folder to write."),
    tokenizer_only: bool = typer.Option(False, "--tokenizer-only", help="Write only the tokenizer (no torch needed)."),
    chat_template: Path | None = typer.Option(
        None, "--chat-template", help="A chat template with {% generation %} markers."
    ),
) -> None:
    """Turn a GGUF file into a trainable transformers checkpoint (tokenizer with a marked chat template)."""
    from agentmill.rl.checkpoint import checkpoint_from_gguf, tokenizer_from_gguf

    if not gguf.is_file():
        _fail(f"{gguf}: not found")
    try:
        notes = (
            [f"tokenizer only; chat template: {tokenizer_from_gguf(gguf, out, chat_template=chat_template)}"]
            if tokenizer_only
            else checkpoint_from_gguf(gguf, out, chat_template=chat_template)
        )
    except AgentmillError as e:
        _fail(str(e))
    for note in notes:
        console.print(escape(note), highlight=False)
    console.print(f"checkpoint: {out}", highlight=False)
