"""Infrastructure failures in a rollout folder: the outage summary, the `--retry infra` hint and
whether the run produced nothing else (exit code 3)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from agentmill.models.outages import outage_lines
from agentmill.rollout.ledger import Ledger
from agentmill.verify.outcome import Outcome

INFRA_OUTCOMES = {o.value for o in Outcome if o.is_infra}


def infra_rows(run_dir: Path) -> tuple[list[dict], int]:
    """(finished trials that ended in infrastructure failure, finished trials in all)."""
    path = run_dir / "ledger.sqlite"
    if not path.exists():
        return [], 0
    ledger = Ledger(path)
    try:
        marks = ",".join("?" * len(INFRA_OUTCOMES))
        bad = list(ledger.iter_rows(f"state='done' AND outcome IN ({marks})", tuple(sorted(INFRA_OUTCOMES))))
        return bad, ledger.count("done")
    finally:
        ledger.close()


def retry_command(argv: list[str] | None = None) -> str:
    """This command again with `--retry infra` (added once)."""
    args = list(sys.argv[1:] if argv is None else argv)
    for i, a in enumerate(args):
        if a == "--retry" and i + 1 < len(args):
            args[i + 1] = "infra"
            break
        if a.startswith("--retry="):
            args[i] = "--retry=infra"
            break
    else:
        args += ["--retry", "infra"]
    return shlex.join(["agentmill", *args])


def infra_report(run_dir: Path, *, retry_hint: bool = True) -> tuple[list[str], bool]:
    """(lines to print, every finished trial ended in infrastructure failure). No lines when none did."""
    bad, finished = infra_rows(run_dir)
    if not bad:
        return [], False
    lines = [f"{len(bad)} of {finished} finished trials ended in infrastructure failures (not the agent's doing):"]
    lines += [f"  {line}" for line in outage_lines(r["exception"] for r in bad)]
    if retry_hint:
        lines.append(f"rerun them with: {retry_command()}")
    return lines, len(bad) == finished
