"""Synthesised tasks as a recipe source (`[[sources]] kind = "synth"`): the accepted tool-task folders
of an `agentmill synth run` output folder, so they flow into rollouts, trace filters and exports."""

from __future__ import annotations

from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.synth.store import SynthStore


def synth_tasks_dir(out: Path | str) -> Path:
    out = Path(out).expanduser()
    if not (out / SynthStore.FILE).is_file():
        raise AgentmillError(
            f"{out}: not a synth output folder (no {SynthStore.FILE}; made by `agentmill synth run --out`)"
        )
    tasks = out / "tasks"
    if not tasks.is_dir():
        raise AgentmillError(f"{out}: a synth output folder with no tasks/ yet (nothing accepted so far)")
    return tasks
