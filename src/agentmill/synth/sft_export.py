"""SFT rows out of a synth run: each accepted sample's ballot solver trajectories that passed its
verifiers, exported by the trace exporter (`traces.export.export_trials`: the same filters and exact
row rules as `agentmill export`). The ballot already ran the stronger solver on the accepted task and
checked its end state; these are verified demonstrations, with no further rollout.

Only the ballot of the attempt that was accepted counts (an earlier attempt's task was different), and
only trials whose task hash is the accepted folder's (the trajectory is of the task that is published).
"""

from __future__ import annotations

from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.synth.output import tasks_dir
from agentmill.synth.store import SynthStore
from agentmill.tasks.tool_task import load_tool_task
from agentmill.traces.export import ExportReport, export_trials
from agentmill.traces.filters import FilterSpec
from agentmill.traces.records import load_trace, trial_folders
from agentmill.traces.render import Reasoning


def verified_trials(out: Path) -> tuple[list[Path], list[str]]:
    """The accepted samples' solver trial folders (ballot of the accepted attempt, same task hash), and notes."""
    store = SynthStore.open_existing(out)
    try:
        rows = store.rows(
            "SELECT a.candidate_id, t.n FROM acceptances a JOIN attempts t USING (attempt_id) "
            "ORDER BY a.at, a.candidate_id"
        )
    finally:
        store.close()
    folders, notes = [], []
    for r in rows:
        run = Path(out) / "work" / r["candidate_id"] / f"a{r['n']}" / "ballot-solver"
        if not (run / "trials").is_dir():
            notes.append(f"{r['candidate_id']}: no solver ballot run at {run} (ballot disabled?)")
            continue
        expected = load_tool_task(tasks_dir(out) / r["candidate_id"]).content_hash
        for folder in trial_folders(run):
            try:
                task_hash = load_trace(folder).trial.get("task_hash")
            except (OSError, ValueError, KeyError) as e:
                notes.append(f"{folder}: unreadable ({type(e).__name__})")
                continue
            if task_hash != expected:
                notes.append(f"{folder}: a trial of another version of {r['candidate_id']}; left out")
                continue
            folders.append(folder)
    return folders, notes


def export_synth(
    out: Path,
    fmt: str,
    dest: Path,
    *,
    spec: FilterSpec | None = None,
    reasoning: Reasoning = "think",
    tokenizer: str | Path | None = None,
    allow_empty: bool = False,
) -> tuple[ExportReport, list[str]]:
    """Rows of the verified solver trajectories. The spec's reward rule is forced to `success`: a
    trajectory the verifiers failed is no demonstration."""
    spec = (spec or FilterSpec()).merged(reward="success")
    folders, notes = verified_trials(Path(out))
    if not folders and not allow_empty:
        raise AgentmillError(
            f"{out}: no accepted sample has solver trajectories to export" + (f" ({notes[0]})" if notes else "")
        )
    return export_trials(
        folders, fmt, dest, spec=spec, reasoning=reasoning, tokenizer=tokenizer, allow_empty=allow_empty, workers=1
    ), notes
