"""One kind of run folder for every reader: a rollout folder, or a recipe run folder that points to its rollout."""

from __future__ import annotations

from pathlib import Path

from agentmill.errors import AgentmillError


def resolve_run_dir(path: Path) -> Path:
    """The rollout folder behind `path`: the folder itself (`agentmill rollout --out`), or the `rollout`
    link of a recipe run folder (`agentmill run --out`). One clear error otherwise."""
    path = Path(path)
    if (path / "ledger.sqlite").is_file():
        return path
    if (path / "rollout" / "ledger.sqlite").is_file():
        return (path / "rollout").resolve()
    if not path.exists():
        raise AgentmillError(f"{path}: no such folder")
    if (path / "funnel.json").exists() or (path / "cache.jsonl").exists():
        raise AgentmillError(
            f"{path}: a recipe run folder without a finished rollout stage (no rollout/ledger.sqlite); "
            f"run the recipe first"
        )
    raise AgentmillError(
        f"{path}: not a run folder (no ledger.sqlite); give a folder made by `agentmill rollout --out` "
        f"or `agentmill run --out`"
    )
