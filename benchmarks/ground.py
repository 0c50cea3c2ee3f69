"""Grounded synthesis throughput: seed selection over all of O*NET, and evidence-graph build plus
deterministic fact checking per workspace (the model's part excluded: the draft graph is made
from real cells of the files, so every check does the full extraction).

    .venv/bin/python benchmarks/ground.py [--k 100,1000,all] [--workspaces 5] [--facts 200]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from agentmill.grounded import readers
from agentmill.grounded.corpus import build_corpus
from agentmill.grounded.graph import GraphDraft, check_facts
from agentmill.grounded.records import Workspace
from agentmill.grounded.seeds import candidate_seeds, select_seeds

WORKSPACE = [
    "energy/iowa-electricity.csv",
    "energy/iowa-electricity.xlsx",
    "energy/iowa-electricity-about.docx",
    "labor/us-employment.xlsx",
    "markets/stocks.csv",
    "weather/seattle-weather-about.md",
]


def seeds_bench(ks: list[str]) -> None:
    t = time.perf_counter()
    stats: dict = {}
    pool = candidate_seeds(stats=stats)
    build = time.perf_counter() - t
    print(
        f"candidates: {stats['rows']} O*NET task-DWA rows -> {len(pool)} seeds in {build:.2f} s "
        f"({stats['rows'] / build:,.0f} rows/s)"
    )
    select_seeds(pool, 10)  # warm-up
    for k in ks:
        n = len(pool) if k == "all" else int(k)
        t = time.perf_counter()
        chosen = select_seeds(pool, n)
        dt = time.perf_counter() - t
        print(
            f"greedy selection k={k}: {len(chosen)} seeds in {dt * 1000:.1f} ms = {len(chosen) / dt:,.0f} seeds/s "
            f"(with candidate generation: {len(chosen) / (dt + build):,.0f} seeds/s)"
        )


def draft_for(ws_dir: Path, files: list[str], n: int, rng: random.Random) -> dict:
    nodes = []
    for i in range(n):
        f = files[i % len(files)]
        path = ws_dir / f
        if readers.fmt(path) in ("csv", "xlsx"):
            rows = readers.table(path)
            r = rng.randrange(len(rows))
            field = rng.choice(list(rows[r]))
            loc = {"kind": "row_field", "row": r + 1, "field": field}
            value = rows[r][field]
        else:
            words = readers.plain_text(path).split()
            j = rng.randrange(max(1, len(words) - 5))
            value = " ".join(words[j : j + 4])
            loc = {"kind": "span", "text": value}
        if i % 10 == 9:  # one in ten is wrong: the check must catch it
            value = value + "9"
            if loc["kind"] == "span":
                loc["text"] = value
        nodes.append({"id": f"n{i}", "file": f, "field": "x", "value": value, "locator": loc})
    return {
        "nodes": nodes,
        "edges": [{"src": f"n{i}", "dst": f"n{i + 1}", "relation": "compare"} for i in range(n - 1)],
    }


def graph_bench(workspaces: int, facts: int) -> None:
    from agentmill.grounded.seeds import candidate_seeds as cs

    seed = cs()[0]
    root = Path(tempfile.mkdtemp(prefix="ground-bench-"))
    try:
        corpus = build_corpus(root / "corpus")
        times, dropped = [], []
        for w in range(workspaces):
            ws_dir = root / f"ws{w}"
            for f in WORKSPACE:
                (ws_dir / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(corpus / f, ws_dir / f)
            ws = Workspace(
                seed=seed, files=[{"path": f, "source": f, "role": "core", "sha256": "-"} for f in WORKSPACE]
            )
            draft = GraphDraft.model_validate(draft_for(ws_dir, WORKSPACE, facts, random.Random(w)))
            t = time.perf_counter()
            graph = check_facts(ws, ws_dir, draft)
            times.append(time.perf_counter() - t)
            dropped.append(sum(1 for d in graph.dropped if "id" in d))
        p50 = statistics.median(times)
        print(
            f"graph build + fact check: {workspaces} workspaces x {facts} facts ({len(WORKSPACE)} files: csv, xlsx, docx, md): "
            f"p50 {p50 * 1000:.0f} ms/workspace, max {max(times) * 1000:.0f} ms, {facts / p50:,.0f} facts/s; "
            f"dropped {statistics.mean(dropped):.0f} of {facts} (planted: {facts // 10})"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", default="100,1000,all")
    ap.add_argument("--workspaces", type=int, default=5)
    ap.add_argument("--facts", type=int, default=200)
    a = ap.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    seeds_bench(a.k.split(","))
    graph_bench(a.workspaces, a.facts)


if __name__ == "__main__":
    main()
