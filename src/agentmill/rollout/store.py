"""Finished trials kept across runs, keyed by trial identity, so no teacher is paid twice.

A recipe's rollout stage lives in a folder named after its upstream stages, so changing the mix
(a smaller budget, another seed) makes a new run folder. Its trials whose identity is unchanged
(same task content, agent, model, sampling, attempt index) are taken from this store instead of
being run again. Each run's ledger stays the source of truth for that run; the store is only a
place to copy finished trial folders from.

Layout: `<root>/<trial_id>/` is a whole trial folder (written under a temporary name, then renamed).
Trials that ended in an infrastructure failure are not stored: a new run should try them again.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from agentmill.verify.outcome import Outcome


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)  # trial folders are never modified once written: sharing inodes is safe
    except OSError:
        shutil.copy2(src, dst)


class TrialStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    def get(self, trial_id: str) -> Path | None:
        folder = self.root / trial_id
        return folder if (folder / "result.json").is_file() else None

    def put(self, trial_id: str, folder: Path) -> bool:
        """Keep a finished trial folder. False when it is an infrastructure failure, unjudged (a later
        run with a judge must judge it, not reuse it) or already kept."""
        result = json.loads((folder / "result.json").read_text())
        outcome = Outcome(result["outcome"])
        if outcome.is_infra or outcome is Outcome.UNJUDGED or self.get(trial_id) is not None:
            return False
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".tmp-{trial_id}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(folder, tmp, copy_function=_link_or_copy)
        try:
            tmp.rename(self.root / trial_id)
        except OSError:  # another run stored it first
            shutil.rmtree(tmp, ignore_errors=True)
            return False
        return True

    def copy_to(self, trial_id: str, dest: Path) -> None:
        """Copy a stored trial to `dest` (a temporary folder the caller renames into place)."""
        shutil.copytree(self.root / trial_id, dest, copy_function=_link_or_copy)
