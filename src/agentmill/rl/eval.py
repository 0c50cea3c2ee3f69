"""`agentmill eval`: measure a checkpoint on a task set, so runs before and after training sit in one table.

The checkpoint is served behind an OpenAI-compatible endpoint (vLLM for real models, the embedded
llama.cpp server for a GGUF file); its trials are an ordinary rollout (resumable, typed outcomes,
telemetry) in `EVAL_DIR/runs/<label>/<benchmark>/`. Then the eval folder's shared files get this
label's figures, merged with every earlier label's:

- `results.json`: `{label: {"<benchmark> pass@1": [per-task scores], "<benchmark> pass@k": [...]}}`,
  the format `agentmill table` (and `agentmill ablate`) reads: one row per checkpoint;
- `telemetry.json`: `{label: {benchmark: {pass@k, outcomes, behaviour telemetry}}}`, which
  `agentmill table` shows beside the scores (turns, command errors, parse errors, premature
  completions, self-corrections, repeated commands, tamper).

Per-task pass@k is the unbiased estimator over the attempts the agent made (infrastructure failures
are not attempts); a task with fewer than k attempted trials has no pass@k score.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console
from rich.table import Table

from agentmill import defaults
from agentmill.agents.registry import agent_class, split_by_support
from agentmill.errors import AgentmillError
from agentmill.models.client import SamplingParams
from agentmill.models.session import LOCAL_MODEL, served_name
from agentmill.rollout.commands import execute_rollout
from agentmill.rollout.config import RolloutConfig
from agentmill.rollout.network import DEFAULT_NETWORK, NetworkMode
from agentmill.rollout.status import NOT_SCORED, pass_at_k, summarize
from agentmill.runtime.atomic import write_json_atomic
from agentmill.tasks.model import Task

if TYPE_CHECKING:
    from agentmill.agents.base import Agent

RESULTS = "results.json"
TELEMETRY = "telemetry.json"


class EvalSpec(BaseModel):
    """What one `agentmill eval` measures. `label` names the checkpoint (a table row), `benchmark` the task set."""

    model_config = ConfigDict(extra="forbid")

    label: str = Field(min_length=1)
    benchmark: str = Field(min_length=1)
    agent: str = "terminus"
    model: str | None = None  # the served name at base_url, or "local"
    base_url: str | None = None
    api_key_env: str | None = None
    attempts: int = Field(1, ge=1)
    concurrency: int = Field(defaults.CONCURRENCY, ge=1)
    model_concurrency: int = Field(defaults.MODEL_CONCURRENCY, ge=1)
    sampling: SamplingParams = Field(default_factory=SamplingParams)
    max_turns: int = Field(defaults.MAX_TURNS, ge=1)
    max_context: int | None = Field(None, gt=0)
    network: NetworkMode = DEFAULT_NETWORK  # the agents' network (rollout/network.py)


@dataclass
class EvalRecord:
    label: str
    benchmark: str
    run_dir: Path
    scores: dict[str, list[float]]  # column -> per-task scores, in task-name order
    figures: dict  # pass@k means, outcomes, behaviour telemetry


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=,+-]", "_", name).strip(".") or "_"


def run_dir_for(eval_dir: Path, spec: EvalSpec) -> Path:
    return eval_dir / "runs" / safe_name(spec.label) / safe_name(spec.benchmark)


def rollout_config(spec: EvalSpec, dataset_root: Path) -> RolloutConfig:
    cls: type[Agent] = agent_class(spec.agent)  # the registry checked the class has Agent's attributes
    if cls.needs_model and not spec.model:
        raise AgentmillError(
            f"--model: the {spec.agent} agent needs a model (the checkpoint's served name, or 'local')"
        )
    if cls.needs_model and spec.model != LOCAL_MODEL and not spec.base_url:
        raise AgentmillError("--base-url: give the endpoint serving --model (or use --model local)")
    return RolloutConfig(
        dataset=str(dataset_root),
        agent=spec.agent,
        agent_version=cls.version,
        model=served_name(spec.model) if cls.needs_model and spec.model else None,  # no model: refused above
        sampling=spec.sampling,
        max_turns=spec.max_turns,
        max_context=spec.max_context,
        attempts=spec.attempts,
        network=spec.network,
        base_url=spec.base_url,
        api_key_env=spec.api_key_env,
        concurrency=spec.concurrency,
        model_concurrency=spec.model_concurrency,
    )


def run_eval(
    spec: EvalSpec,
    tasks: list[Task],
    dataset_root: Path,
    eval_dir: Path,
    *,
    console: Console,
    check_endpoint: bool = True,
) -> EvalRecord:
    """Run (or resume) the checkpoint's rollout, then record its figures in the eval folder."""
    tasks, unsupported = split_by_support(spec.agent, tasks)
    for line in unsupported:
        console.print(f"[yellow]skipped:[/yellow] {line}", highlight=False)
    if not tasks:
        raise AgentmillError(f"--agent {spec.agent}: none of the tasks is one it works on")
    config = rollout_config(spec, dataset_root)
    run_dir = run_dir_for(eval_dir, spec)
    # retry_infra: an outage's trials are not measurements; the same eval command runs them again
    execute_rollout(
        config,
        tasks,
        run_dir,
        model_name=spec.model if config.model else None,
        retry_infra=True,
        console=console,
        check_endpoint=check_endpoint,
    )
    record = record_run(run_dir, spec.label, spec.benchmark, k=spec.attempts)
    save_record(eval_dir, record)
    return record


def record_run(run_dir: Path, label: str, benchmark: str, *, k: int) -> EvalRecord:
    """Per-task pass@1 and pass@k from a finished run folder, and its behaviour telemetry."""
    summary = summarize(run_dir)
    by_task: dict[str, list[dict]] = defaultdict(list)
    for t in summary["trial_list"]:
        if t["state"] == "done" and t["outcome"] not in NOT_SCORED:  # infra failures, unjudged trials
            by_task[t["task"]].append(t)
    passes = {task: (len(ts), sum(t["outcome"] == "passed" for t in ts)) for task, ts in sorted(by_task.items())}
    scores = {f"{benchmark} pass@1": [c / n for n, c in passes.values()]}
    if k > 1:
        scores[f"{benchmark} pass@{k}"] = [pass_at_k(n, c, k) for n, c in passes.values() if n >= k]
    figures = {
        "tasks": summary["tasks"],
        "attempted_tasks": len(passes),
        "attempts": k,
        "pass_at_k": summary.get("pass_at_k", {}),
        "outcomes": summary["outcomes"],
        "infra_failures": summary["infra_failures"],
        "mean_reward": summary["mean_reward"],
        "tokens": summary["tokens"],
        "telemetry": summary["telemetry"],
        "run_dir": str(run_dir),
    }
    return EvalRecord(label, benchmark, run_dir, scores, figures)


def save_record(eval_dir: Path, record: EvalRecord) -> None:
    """Merge this label's scores and figures into the eval folder's results.json and telemetry.json."""
    results = read_json_object(eval_dir / RESULTS)
    row = results.setdefault(record.label, {})
    for column in [c for c in row if c.startswith(f"{record.benchmark} pass@")]:
        del row[column]  # a re-run replaces this benchmark's columns (attempts may have changed)
    row.update(record.scores)
    write_json_atomic(eval_dir / RESULTS, results)
    telemetry = read_json_object(eval_dir / TELEMETRY)
    telemetry.setdefault(record.label, {})[record.benchmark] = record.figures
    write_json_atomic(eval_dir / TELEMETRY, telemetry)


def read_json_object(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise AgentmillError(f"{path}: cannot merge into it: {e}") from None
    if not isinstance(data, dict):
        raise AgentmillError(f"{path}: cannot merge into it: expected a JSON object, got {type(data).__name__}")
    return data


BEHAVIOUR = (  # (column, telemetry key, format)
    ("turns", "mean_assistant_turns", "{:.1f}"),
    ("commands", "mean_commands", "{:.1f}"),
    ("cmd errors", "command_error_rate", "{:.0%}"),
    ("parse errors", "parse_errors", "{}"),
    ("claimed", "completion_claimed", "{}"),
    ("premature", "premature_completion", "{}"),
    ("self-corr.", "self_corrections", "{}"),
    ("repeated", "repeated_commands", "{}"),
    ("timed out", "timed_out", "{}"),
    ("tampered", "tampered", "{}"),
)


def behaviour_table(telemetry: dict) -> Table:
    """Pass@k and behaviour telemetry per (checkpoint, benchmark): one column each, one row per figure
    (a few checkpoints side by side read best down the page)."""
    runs = [(label, bench, fig or {}) for label, benches in telemetry.items() for bench, fig in (benches or {}).items()]
    table = Table(title="behaviour (agentmill eval)")
    table.add_column("")
    for label, bench, _ in runs:
        table.add_column(f"{label}\n{bench}", justify="right")
    table.add_row("trials", *(str((f.get("telemetry") or {}).get("trajectories", 0)) for _, _, f in runs))
    table.add_row("pass@1", *(_mean((f.get("pass_at_k") or {}).get("1")) for _, _, f in runs))
    table.add_row(
        "pass@k",
        *(
            f"{_mean((f.get('pass_at_k') or {}).get(str(f.get('attempts', 1))))} (k={f.get('attempts', 1)})"
            for _, _, f in runs
        ),
    )
    for name, key, fmt in BEHAVIOUR:
        table.add_row(
            name, *(fmt.format(t[key]) if key in (t := f.get("telemetry") or {}) else "—" for _, _, f in runs)
        )
    return table


def _mean(cell: dict | None) -> str:
    if not cell or cell.get("mean") is None or (isinstance(cell["mean"], float) and math.isnan(cell["mean"])):
        return "—"
    return f"{cell['mean']:.2f} ± {cell['se']:.2f}"


def telemetry_beside(results_path: Path) -> dict | None:
    """The eval telemetry written beside a results.json, if any (for `agentmill table`)."""
    path = results_path.parent / TELEMETRY
    return read_json_object(path) if path.exists() else None
