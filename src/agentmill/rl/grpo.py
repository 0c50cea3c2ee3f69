"""`agentmill train rl`: TRL's GRPOTrainer on exported `rl` rows, with agentmill's verifier as the
only reward: each completion runs as an episode in the task's sandbox (rl/reward.py) and the
task's own verifier scores the end state. Single-turn: one terminus reply, or one set of tool
calls, per prompt; multi-turn RL goes through verl's agent loop (rl/live.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentmill.errors import AgentmillError
from agentmill.rl.reward import NOT_FOUND, GRPOReward
from agentmill.rl.training import (
    TrainReport,
    load_tokenizer,
    logged_losses,
    read_rows,
    require_train_extra,
    trainer_args,
)


@dataclass
class GRPORun:
    trainer: Any  # trl.GRPOTrainer, ready to train
    reward: GRPOReward  # its only reward function: .history holds every score and outcome
    tokenizer: Any
    skipped: list[str]  # rows left out, and why


def rl_dataset_rows(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """(dataset rows, one line per row left out): only what the reward needs travels with each prompt,
    the task's hash and the agent's protocol. A row that is not an `rl` row is reported and skipped."""
    out, skipped = [], []
    for i, r in enumerate(rows):
        try:
            out.append(
                {
                    "prompt": r["prompt"],
                    "reward_model": {"ground_truth": r["reward_model"]["ground_truth"]},
                    "extra_info": {
                        "task_hash": r["extra_info"]["task_hash"],
                        "agent": r["extra_info"].get("agent") or "",
                    },
                }
            )
        except (KeyError, TypeError, AttributeError) as e:
            skipped.append(f"row {i}: not an `rl` row (agentmill export --format rl): missing or malformed {e}")
    return out, skipped


def build_grpo(
    model: Path,
    data: list[Path],
    tasks: list[Path],
    out: Path,
    *,
    steps: int = 100,
    generations: int = 4,
    max_completion_tokens: int = 512,
    learning_rate: float = 1e-6,
    tamper_penalty: float | None = None,
    concurrency: int = 4,
    seed: int = 0,
    rollout_func: Callable | None = None,
) -> GRPORun:
    """The trainer before any step. `rollout_func` is TRL's hook for generating elsewhere (an external engine):
    `(prompts, trainer) -> {"prompt_ids", "completion_ids", "logprobs"}`; by default the model generates."""
    require_train_extra()
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    rows, skipped = rl_dataset_rows(read_rows(data))
    if not rows:
        raise AgentmillError(
            "no RL row to train on (agentmill export --format rl)" + "".join(f"; {s}" for s in skipped[:5])
        )
    reward = GRPOReward(tasks=tasks, tamper_penalty=tamper_penalty, concurrency=concurrency)
    args = GRPOConfig(
        output_dir=str(out),
        max_steps=steps,
        learning_rate=learning_rate,
        num_generations=generations,
        per_device_train_batch_size=generations,
        max_completion_length=max_completion_tokens,
        seed=seed,
        **trainer_args(),
    )
    tokenizer = load_tokenizer(model)
    extra: dict[str, Any] = {"rollout_func": rollout_func} if rollout_func is not None else {}
    trainer = GRPOTrainer(
        model=str(model),
        reward_funcs=[reward],
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        **extra,
    )
    return GRPORun(trainer, reward, tokenizer, skipped)


def train_rl(model: Path, data: list[Path], tasks: list[Path], out: Path, **settings: Any) -> TrainReport:
    run = build_grpo(model, data, tasks, out, **settings)
    run.trainer.train()
    run.trainer.save_model(str(out))
    run.tokenizer.save_pretrained(str(out))
    scored = [s for s in run.reward.history if s.outcome != NOT_FOUND]
    return TrainReport(
        out,
        run.trainer.args.max_steps,
        logged_losses(run.trainer),
        rewards=[s.score for s in scored],
        notes=[*run.skipped, f"outcomes: {', '.join(sorted({s.outcome for s in run.reward.history}))}"],
    )
