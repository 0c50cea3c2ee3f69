"""Pairwise evaluation: a judge compares two systems' deliverables for the same task; ratings are a
Bradley-Terry fit (choix) on the Elo scale, with one system fixed at an anchor rating, and
bootstrap confidence intervals (comparisons resampled with replacement).

Elo scale: rating_i = anchor_rating + 400 / ln(10) * (theta_i - theta_anchor), so a system that wins
with odds r against another is 400*log10(r) points above it. A tie counts as one win each way."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agentmill.grounded import prompts
from agentmill.grounded.ask import ask_json
from agentmill.grounded.judge import deliverables_view
from agentmill.grounded.records import Spec
from agentmill.models import ModelClient

ELO = 400 / math.log(10)


class Rating(BaseModel):
    model_config = ConfigDict(extra="forbid")
    system: str
    rating: float
    low: float
    high: float
    comparisons: int


class PairVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    winner: Literal["A", "B", "tie"]
    reason: str = ""


def _pairs(outcomes: list[tuple[str, str, str]], index: dict[str, int]) -> list[tuple[int, int]]:
    """(system a, system b, winner 'A'/'B'/'tie') -> choix (winner, loser) pairs."""
    data = []
    for a, b, w in outcomes:
        ia, ib = index[a], index[b]
        if w == "A":
            data.append((ia, ib))
        elif w == "B":
            data.append((ib, ia))
        elif w == "tie":
            data += [(ia, ib), (ib, ia)]
        else:
            raise ValueError(f"comparison {a} vs {b}: winner must be 'A', 'B' or 'tie', not {w!r}")
    return data


def fit(
    outcomes: list[tuple[str, str, str]],
    systems: list[str],
    *,
    anchor: str,
    anchor_rating: float = 1667.0,
    alpha: float = 0.0,
) -> dict[str, float]:
    """Elo-scale Bradley-Terry ratings. alpha > 0 adds choix's L2 regularisation (needed when a
    system never loses or never wins: the maximum-likelihood estimate then does not exist)."""
    import choix
    import numpy as np

    index = {s: i for i, s in enumerate(systems)}
    data = _pairs(outcomes, index)
    theta = np.asarray(
        choix.opt_pairwise(len(systems), data, alpha=alpha)
        if alpha > 0
        else choix.ilsr_pairwise(len(systems), data, alpha=0.0)
    )
    base = theta[index[anchor]]
    return {s: float(anchor_rating + ELO * (theta[i] - base)) for s, i in index.items()}


def ratings(
    outcomes: list[tuple[str, str, str]],
    systems: list[str],
    *,
    anchor: str,
    anchor_rating: float = 1667.0,
    bootstrap: int = 1000,
    seed: int = 0,
    alpha: float = 0.01,
    level: float = 0.95,
) -> list[Rating]:
    point = fit(outcomes, systems, anchor=anchor, anchor_rating=anchor_rating, alpha=alpha)
    rng = random.Random(seed)
    samples: dict[str, list[float]] = {s: [] for s in systems}
    for _ in range(bootstrap):
        draw = [outcomes[rng.randrange(len(outcomes))] for _ in outcomes]
        for s, r in fit(draw, systems, anchor=anchor, anchor_rating=anchor_rating, alpha=max(alpha, 1e-3)).items():
            samples[s].append(r)
    out = []
    for s in systems:
        xs = sorted(samples[s])
        lo = xs[int((1 - level) / 2 * (len(xs) - 1))] if xs else point[s]
        hi = xs[int((1 + level) / 2 * (len(xs) - 1))] if xs else point[s]
        n = sum(1 for a, b, _ in outcomes if s in (a, b))
        out.append(Rating(system=s, rating=point[s], low=lo, high=hi, comparisons=n))
    return out


async def compare(spec: Spec, a: Path, b: Path, client: ModelClient, *, prompts_dir: Path | None = None) -> str:
    """'A', 'B' or 'tie' for two deliverable folders of the same task."""
    text = prompts.render(
        "pairwise", prompts_dir, statement=spec.statement, a=deliverables_view(spec, a), b=deliverables_view(spec, b)
    )
    verdict = await ask_json(client, [{"role": "user", "content": text}], PairVerdict, role="pairwise judge")
    return verdict.winner


def runs_by_task(folder: Path) -> dict[str, Path]:
    """task name -> deliverables folder, for a rollout-layout folder of grounded runs (`trials/*`)."""
    import json

    out: dict[str, Path] = {}
    trials = Path(folder) / "trials"
    for t in sorted(trials.iterdir()) if trials.is_dir() else []:
        try:
            task = json.loads((t / "trial.json").read_text())["task"]
        except (OSError, ValueError, KeyError):
            continue
        if (t / "deliverables").is_dir():
            out.setdefault(task, t / "deliverables")
    return out


async def compare_systems(
    tasks: dict[str, Spec],
    systems: dict[str, Path],
    client: ModelClient,
    *,
    prompts_dir: Path | None = None,
    tasks_out: list | None = None,
) -> list[tuple[str, str, str]]:
    """Every pair of systems on every task both have a run for; the order shown to the judge
    alternates, so neither system is always 'A'. `tasks_out` receives each comparison's task."""
    runs = {name: runs_by_task(folder) for name, folder in systems.items()}
    names = sorted(systems)
    outcomes, flip = [], False
    for task, spec in sorted(tasks.items()):
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                if task not in runs[a] or task not in runs[b]:
                    continue
                first, second = (b, a) if flip else (a, b)
                flip = not flip
                winner = await compare(spec, runs[first][task], runs[second][task], client, prompts_dir=prompts_dir)
                outcomes.append((first, second, winner))
                if tasks_out is not None:
                    tasks_out.append(task)
    return outcomes
