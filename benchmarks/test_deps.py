"""What the test-deps layer costs: its cold build, its warm look-up, and a trial with and without it.

    .venv/bin/python benchmarks/test_deps.py [--workdir /tmp/bench-testdeps] [--runs 3]

1. The layer for two public requirement sets (the corpus's `pytest==8.4.1 tomli-w==1.0.0` and
   csv-to-parquet's `pytest==8.4.1 pandas==2.3.0 pyarrow==20.0.0`), built cold into a fresh folder
   (PyPI over this host's network), then looked up warm.
2. Oracle trials of the corpus's legacy-venv-deps task (its run-tests.sh makes a venv and installs
   a pinned non-pytest package): the first (image and layer built) and the median of --runs warm
   ones: environment (image + layer look-up), sandbox start, verifier and total seconds. For the
   "before", run `--trials-only` with another tree's code (`git archive <commit> src | tar -x -C
   /tmp/base; PYTHONPATH=/tmp/base/src ...`), where the installs were skipped and the tests failed.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentmill.agents import OracleAgent  # noqa: E402
from agentmill.images import ImageBuilder  # noqa: E402
from agentmill.rollout.trial import run_trial  # noqa: E402
from agentmill.tasks import load_task  # noqa: E402
from agentmill.verify.toolkit import ensure_toolkit  # noqa: E402
from tests.tasks.public_corpus import TB_RUN_TESTS, TOML_SOLUTION, TOML_TEST, tb_task  # noqa: E402

SETS = {
    "corpus": ["pytest==8.4.1", "tomli-w==1.0.0"],
    "csv-to-parquet": ["pytest==8.4.1", "pandas==2.3.0", "pyarrow==20.0.0"],
}


def layers(workdir: Path) -> None:
    from agentmill.verify.test_deps import ensure_test_deps

    python = ensure_toolkit(build=True) / "venv/bin/python"
    for name, packages in SETS.items():
        root = workdir / "layers"
        shutil.rmtree(root, ignore_errors=True)
        t = time.monotonic()
        deps = ensure_test_deps(packages, python, root=root)
        cold = time.monotonic() - t
        t = time.monotonic()
        ensure_test_deps(packages, python, root=root)
        warm = time.monotonic() - t
        size = sum(f.stat().st_size for f in (deps.path / "site").rglob("*") if f.is_file()) / 2**20
        print(f"layer {name}: cold {cold:.1f} s ({size:.0f} MiB), warm {warm * 1000:.1f} ms")


def trials(workdir: Path, runs: int) -> None:
    df = "FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\nWORKDIR /app\n"
    root = tb_task(
        workdir / "tasks",
        "legacy-venv-deps",
        instruction="x",
        dockerfile=df,
        solution=TOML_SOLUTION,
        test_outputs=TOML_TEST,
        run_tests=TB_RUN_TESTS.format(packages="pytest==8.4.1 tomli-w==1.0.0"),
    )
    builder = ImageBuilder(cache=workdir / "cache")
    task = load_task(root)
    first = asyncio.run(run_trial(task, OracleAgent(), builder))
    print(
        f"first trial: environment {first.timings.environment:.2f} s, total {first.timings.total:.2f} s "
        f"({first.outcome.value})"
    )
    env, start, ver, total = [], [], [], []
    for _ in range(runs):
        r = asyncio.run(run_trial(task, OracleAgent(), builder))
        env.append(r.timings.environment)
        start.append(r.timings.sandbox_start or 0.0)
        ver.append(r.timings.verifier)
        total.append(r.timings.total)
    med = statistics.median
    print(
        f"warm trials (median of {runs}): environment {med(env) * 1000:.0f} ms, sandbox start "
        f"{med(start) * 1000:.0f} ms, verifier {med(ver):.2f} s, total {med(total):.2f} s ({r.outcome.value})"
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--workdir", type=Path, default=Path("/tmp/bench-testdeps"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--trials-only", action="store_true", help="skip the layer builds (e.g. with older code)")
    a = p.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    a.workdir.mkdir(parents=True)
    a.workdir.chmod(0o755)
    if not a.trials_only:
        layers(a.workdir)
    trials(a.workdir, a.runs)


if __name__ == "__main__":
    main()
