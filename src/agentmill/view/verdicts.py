"""What the export filters say about one trial: kept, or the first rule that drops it, and every rule it fails.

The rules are the exporters' own (traces/filters.py), with the spec the run's exports would use:
a recipe run's `[trace_filters]`, else `agentmill export`'s defaults, or a `--filters` file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.traces.atif import Trajectory
from agentmill.traces.filters import FilterSpec, rules
from agentmill.traces.records import TraceRecord
from agentmill.traces.render import render
from agentmill.traces.telemetry import Telemetry, compute_telemetry
from agentmill.traces.tokens import TokenCounter

# (turns, tamper, tamper_kinds, filter_kept, filter_reason, filters_failed, facts_error)
Facts = tuple


class FilterJudge:
    def __init__(self, spec: FilterSpec, source: str):
        self.spec = spec
        self.source = source  # where the spec came from, shown in the viewer
        counter = TokenCounter()
        self.rules = rules(spec, counter, lambda r: (render(r.trajectory).messages, None))
        self.descriptions = {name: description for name, description, _ in self.rules}
        self.key = hashlib.sha256(json.dumps(spec.model_dump(), sort_keys=True).encode()).hexdigest()[:16]
        self._needs_trajectory = spec.max_tokens is not None

    def facts(self, folder: Path) -> Facts:
        """The indexed facts of one trial folder; an unreadable folder gives its error, not an exception."""
        try:
            record = self._record(folder)
        except (OSError, ValueError, KeyError, TypeError) as e:
            return (
                None,
                None,
                None,
                None,
                None,
                None,
                f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}",
            )
        failed = [name for name, _description, keep in self.rules if not keep(record)]
        tele = record.telemetry
        tamper = len(record.result.get("tamper") or []) or tele.tamper
        kinds = sorted(
            {str(e.get("kind")) for e in record.result.get("tamper") or [] if isinstance(e, dict)}
            | set(tele.tamper_kinds)
        )
        return (
            tele.assistant_turns,
            tamper,
            ",".join(kinds) or None,
            int(not failed),
            failed[0] if failed else None,
            ",".join(failed) or None,
            None,
        )

    def _record(self, folder: Path) -> TraceRecord:
        result = json.loads((folder / "result.json").read_text())
        trial = json.loads((folder / "trial.json").read_text())
        if not isinstance(result, dict) or "outcome" not in result or not isinstance(trial, dict):
            raise ValueError("result.json needs an outcome")
        trajectory = None
        tele_path = folder / "telemetry.json"
        if tele_path.exists():
            telemetry = Telemetry.model_validate_json(tele_path.read_text())
        else:  # runs written before telemetry existed
            trajectory = Trajectory.model_validate_json((folder / "trajectory.json").read_text())
            telemetry = compute_telemetry(trajectory, result)
        if self._needs_trajectory and trajectory is None:
            trajectory = Trajectory.model_validate_json((folder / "trajectory.json").read_text())
        return TraceRecord(trial, result, trajectory, telemetry, folder=folder)  # type: ignore[arg-type]


def judge_for(run_dir: Path, rollout_dir: Path, filters_file: Path | None = None) -> FilterJudge:
    """The filter spec the run's exports use: `--filters FILE`, a recipe's `[trace_filters]`, else the defaults."""
    if filters_file is not None:
        return FilterJudge(FilterSpec.from_toml(filters_file), str(filters_file))
    for recipe in (run_dir / "recipe.toml", rollout_dir.parent / "recipe.toml"):
        if recipe.is_file() and (recipe.parent / "rollout").exists():
            from agentmill.recipe.schema import load_recipe  # only for recipe runs

            try:
                return FilterJudge(load_recipe(recipe)[0].trace_filters, f"{recipe} [trace_filters]")
            except AgentmillError as e:
                raise AgentmillError(f"{recipe}: cannot read its [trace_filters]: {e}") from None
    return FilterJudge(FilterSpec(), "agentmill export defaults")
