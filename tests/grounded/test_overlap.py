"""`ground decontaminate --rank/--comparisons`: the generated tasks' closest benchmark tasks by
13-gram similarity (workspace text included), occupation overlap, and a system's win rate split
by whether the benchmark task's occupation is covered."""

import json

from typer.testing import CliRunner

from agentmill.cli import app
from agentmill.grounded.overlap import win_rate_by_coverage
from agentmill.tasks import TaskConfig, write_task

runner = CliRunner()
LEDGER = (
    "The general ledger trial balance for the third quarter shows accounts payable of four hundred "
    "twelve thousand dollars against receivables that were reconciled by the controller last week."
)


def make(root, name, instruction, occupation=None, workspace=None):
    meta = {"source": "grounded"} | ({"occupation": occupation} if occupation else {})
    return write_task(
        root / name,
        instruction=instruction,
        config=TaskConfig.model_validate({"metadata": meta}),
        test_sh="#!/bin/bash\ntrue\n",
        environment_files=workspace or {},
    )


def test_ranking_occupations_and_win_rate_by_coverage(tmp_path):
    store = tmp_path / "store" / "tasks"
    make(
        store,
        "t1",
        "Reconcile the quarter's ledger and write a memo.",
        "Accountants and Auditors",
        {"workspace/ledger.md": f"# Ledger notes\n{LEDGER}\n"},
    )
    make(store, "t2", "Summarise the lab's titration results in a table.", "Chemists")
    bench = tmp_path / "bench"
    make(bench, "near", f"Read this and answer: {LEDGER} What is missing?", "Accountants and Auditors")
    make(bench, "lab", "Plan next week's experiments on polymer samples for the group.", "chemists")
    make(bench, "dance", "Choreograph a three minute routine for the spring recital.", "Dancers")
    make(bench, "unknown", "Sort the inbox by sender and date for the whole team.")
    comps = tmp_path / "c.jsonl"
    comps.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in [
                {"a": "ours", "b": "base", "winner": "A", "task": "near"},
                {"a": "base", "b": "ours", "winner": "tie", "task": "lab"},
                {"a": "base", "b": "ours", "winner": "A", "task": "dance"},
                {"a": "base", "b": "other", "winner": "A", "task": "dance"},
            ]
        )
    )
    res = runner.invoke(
        app,
        [
            "ground",
            "decontaminate",
            str(tmp_path / "store"),
            "--benchmark",
            str(bench),
            "--rank",
            "3",
            "--comparisons",
            str(comps),
            "--system",
            "ours",
            "--json",
            str(tmp_path / "o.json"),
        ],
    )
    assert res.exit_code == 1, res.output  # t1's workspace shares 13-grams with 'near': contaminated, and ranked first
    report = json.loads((tmp_path / "o.json").read_text())
    top = report["ranking"][0]
    assert (top["task"], top["benchmark"]) == ("t1", "near") and top["similarity"] > 0.5
    # the other benchmark instructions are shorter than 13 words: no 13-gram to compare
    assert [(r["task"], r["benchmark"], r["similarity"]) for r in report["ranking"][1:]] == [("t2", "near", 0.0)]
    occ = report["occupations"]
    assert occ["benchmark_tasks"] == 4 and occ["with_occupation"] == 3 and occ["covered"] == ["lab", "near"]
    assert report["win_rate_by_coverage"] == {
        "covered": {"comparisons": 2, "win_rate": 0.75},
        "not covered": {"comparisons": 1, "win_rate": 0.0},
    }
    assert "t1" in res.output and "2 of 3 benchmark tasks" in res.output


def test_win_rate_needs_the_system_and_counts_ties_half():
    rows = [{"a": "x", "b": "y", "winner": "tie", "task": "k"}]
    assert win_rate_by_coverage(rows, "x", {"k"})["covered"] == {"comparisons": 1, "win_rate": 0.5}
    res = runner.invoke(app, ["ground", "decontaminate", "s", "--benchmark", "b", "--comparisons", "c.jsonl"])
    assert res.exit_code == 2 and "--comparisons needs --system" in res.output
