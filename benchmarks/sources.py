"""Task sources: tasks per minute of each generator kind on this machine, end to end (generation,
image builds and the admission `check` of every candidate in the sandbox).

    .venv/bin/python benchmarks/sources.py [--kinds functions,stackexchange,generate,repo_bugs,...]
                                           [--rows 24] [--max 6] [--pypi NAME==VERSION] [--workdir /tmp/bench-sources]

functions: the test fixture's good rows, repeated with distinct ids up to --rows; stackexchange: the
test fixture's Posts.xml (unverified tasks: no check, so it measures parsing and writing); generate:
the scripted teacher of tests/sources/test_generate.py (a real local HTTP server; the model's time is
not measured, the checks are); repo_bugs: the test's five-function git project (--max tasks), or a
PyPI project with --pypi (downloads it); repo_bugs_teacher: the teacher path, the scripted teacher of
tests/sources/test_teacher_bugs.py writing bugs for every function of its project and the issues
(--max tasks); stackexchange_judged: the fixture's questions with a scripted judge writing each
rubric (generation only: a judged task is checked at rollout, by the rollout's judge). Printed per
kind: kept/candidates, seconds, tasks per minute.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("AGENTMILL_IMAGES", "host")

FIXTURES = ROOT / "tests" / "sources" / "fixtures"


def bench_functions(work: Path, rows: int):
    from agentmill.sources.functions import generate, read_rows

    good = [r for r in read_rows(FIXTURES / "functions.jsonl") if r["id"] in {"clamp", "run-length", "is-palindrome"}]
    table = work / "functions.jsonl"
    with table.open("w") as f:
        for i in range(rows):
            r = dict(good[i % len(good)])
            r["id"], r["statement"] = f"{r['id']}-{i}", f"{r['statement']} (variant {i})"
            f.write(json.dumps(r) + "\n")
    return generate(table, work / "out-functions")


def bench_stackexchange(work: Path, rows: int):
    from agentmill.sources.stackexchange import generate

    return generate(FIXTURES / "Posts.xml", work / "out-se", accepted=False)


def bench_generate(work: Path, rows: int):
    from agentmill.sources.generate import generate
    from tests.helpers.chat_server import ChatServer
    from tests.sources.test_generate import TASKS, teacher

    with ChatServer(teacher) as server:
        return generate(list(TASKS), work / "out-generate", base_url=server.base_url, model="teacher")


def bench_repo_bugs(work: Path, max_tasks: int, pypi: str | None):
    from agentmill.sources.repo_bugs import generate
    from tests.sources.test_repo_bugs import make_repo

    if pypi:
        return generate(work / "out-repo-bugs", pypi=[pypi], max_tasks=max_tasks, seed=1)
    repo = make_repo(work / "textkit")
    return generate(work / "out-repo-bugs", repos=[repo], max_tasks=max_tasks, seed=3)


def bench_repo_bugs_teacher(work: Path, max_tasks: int):
    from agentmill.sources.repo_bugs import generate
    from tests.helpers.chat_server import ChatServer
    from tests.sources.test_teacher_bugs import make_repo, teacher

    repo = make_repo(work / "numkit")
    with ChatServer(teacher) as server:
        report = generate(
            work / "out-repo-bugs-teacher",
            repos=[repo],
            max_tasks=max_tasks,
            seed=5,
            teacher={"name": "teacher", "base_url": server.base_url},
            teacher_bugs=5,
        )
    t = report.extra["projects"][0]["teacher"]
    print(f"{'':14s} teacher: {t['asked']} asked, {t['refused']} refused, {t['tried']} tried, {t['kept']} kept")
    return report


def bench_stackexchange_judged(work: Path, rows: int):
    from agentmill.sources.stackexchange import generate
    from tests.helpers.chat_server import ChatServer
    from tests.sources.test_stackexchange_judged import judge

    with ChatServer(judge) as server:
        return generate(
            FIXTURES / "Posts.xml", work / "out-se-judged", judge={"name": "judge", "base_url": server.base_url}
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kinds", default="functions,stackexchange,generate,repo_bugs")
    ap.add_argument("--rows", type=int, default=24)
    ap.add_argument("--max", type=int, default=6)
    ap.add_argument("--pypi", default=None)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/bench-sources"))
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    print(f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.2f}")
    for kind in args.kinds.split(","):
        t0 = time.monotonic()
        if kind == "repo_bugs":
            report = bench_repo_bugs(args.workdir, args.max, args.pypi)
        elif kind == "repo_bugs_teacher":
            report = bench_repo_bugs_teacher(args.workdir, args.max)
        elif kind == "stackexchange_judged":
            report = bench_stackexchange_judged(args.workdir, args.rows)
        else:
            report = {"functions": bench_functions, "stackexchange": bench_stackexchange, "generate": bench_generate}[
                kind
            ](args.workdir, args.rows)
        wall = time.monotonic() - t0
        print(
            f"{kind:14s} {len(report.kept):3d}/{report.candidates:<3d} kept  {wall:7.1f} s  "
            f"{60 * len(report.kept) / wall:8.1f} tasks/min  dropped {report.reasons}"
        )


if __name__ == "__main__":
    main()
