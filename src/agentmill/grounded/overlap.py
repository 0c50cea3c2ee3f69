"""How close the generated tasks come to a benchmark, beyond the contaminated/clean verdict
(contamination.py): the pairs ranked by 13-gram similarity (GraphForge reports the top 20), the
share of benchmark tasks whose occupation the generated tasks cover, and a system's pairwise win
rate on benchmark tasks with and without such coverage.

Similarity of a (generated task, benchmark task) pair = the share of the benchmark instruction's
13-grams found anywhere in the generated task (its instruction and its workspace files' text).
Occupations are read from each task.toml's `[metadata] occupation` (grounded tasks record theirs;
a benchmark task without one is counted as unknown).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from agentmill.grounded import readers
from agentmill.recipe.stages.task_filters.decontaminate import ngrams
from agentmill.tasks import load_dataset, load_task


def _occupation(task_dir: Path) -> str | None:
    try:
        meta = tomllib.loads((Path(task_dir) / "task.toml").read_text()).get("metadata", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    occ = meta.get("occupation")
    return re.sub(r"\s+", " ", str(occ)).strip().casefold() if occ else None


def _generated_grams(task_dir: Path, n: int) -> set:
    task = load_task(task_dir)
    grams = set(ngrams(task.instruction, n))
    ws = Path(task_dir) / "environment" / "workspace"
    for f in sorted(
        p for p in ws.rglob("*") if p.is_file() and not p.is_symlink() and p.suffix.lower() in readers.READABLE
    ):
        try:
            grams |= ngrams(readers.plain_text(f), n)
        except readers.UnreadableFile:
            continue
    return grams


def benchmark_tasks(benchmarks: list[str]):
    tasks = []
    for b in benchmarks:
        tasks += load_dataset(Path(b).expanduser()).tasks
    return tasks


def rank_similar(task_dirs: list[Path], benchmarks: list[str], *, n: int = 13, top: int = 20) -> list[dict]:
    bench = [(t.name, t.path, ngrams(t.instruction, n)) for t in benchmark_tasks(benchmarks)]
    rows = []
    for d in task_dirs:
        mine = _generated_grams(d, n)
        for name, _path, grams in bench:
            if not grams:
                continue
            shared = len(grams & mine)
            rows.append(
                {"task": Path(d).name, "benchmark": name, "shared": shared, "similarity": round(shared / len(grams), 4)}
            )
    rows.sort(key=lambda r: (-r["similarity"], -r["shared"], r["task"], r["benchmark"]))
    return rows[:top]


def occupation_overlap(task_dirs: list[Path], benchmarks: list[str]) -> dict:
    ours = {o for d in task_dirs if (o := _occupation(d))}
    bench = {t.name: _occupation(t.path) for t in benchmark_tasks(benchmarks)}
    known = {name: o for name, o in bench.items() if o}
    covered = sorted(name for name, o in known.items() if o in ours)
    return {
        "benchmark_tasks": len(bench),
        "with_occupation": len(known),
        "covered": covered,
        "covered_share": round(len(covered) / len(known), 4) if known else None,
        "generated_occupations": len(ours),
    }


def win_rate_by_coverage(comparisons: list[dict], system: str, covered: set[str]) -> dict:
    """`comparisons`: {a, b, winner: A|B|tie, task}. A tie counts half a win."""
    out = {}
    for group, want in (("covered", True), ("not covered", False)):
        games = wins = 0.0
        for c in comparisons:
            if system not in (c["a"], c["b"]) or (c.get("task") in covered) != want:
                continue
            games += 1
            side = "A" if c["a"] == system else "B"
            wins += 1.0 if c["winner"] == side else 0.5 if c["winner"] == "tie" else 0.0
        out[group] = {"comparisons": int(games), "win_rate": round(wins / games, 4) if games else None}
    return out
