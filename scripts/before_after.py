"""Did a change alter agentmill's outputs? Run the same work under two git revisions and compare.

    .venv/bin/python scripts/before_after.py REV_BEFORE [REV_AFTER] [--out DIR] [--skip oracle|recipe]

Each revision is unpacked with `git archive` (nothing in the working tree is touched) and run with
this checkout's virtualenv, its `src/` first on PYTHONPATH:
- oracle: `check --sample --json`, `rollout --sample` with the oracle and the nop agent, and
  `export` of the oracle run as trl, sharegpt, harbor and rl;
- recipe: the bundled recipe (recipes/smoke.toml: augment, task filters, mix, terminus rollouts,
  trace filters, exports) with its [model] pointed at one scripted chat server instead of the
  embedded model (tests/recipe/test_pipeline.py's policy: it types each task's reference solution;
  served once for both revisions so even the recorded endpoint is the same). A real model's replies
  depend on what the terminal shows, and that includes the sandbox's clock.
Then `agentmill diff` compares the two output folders, masking clocks, pids, hosts and the folders'
own paths. Exit 0 when both parts hold the same data. REV_AFTER defaults to HEAD. Takes a few minutes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = str(ROOT / ".venv" / "bin" / "python")


def unpack(rev: str, into: Path) -> Path:
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def agentmill(tree: Path, cache: Path, *args: str, log: Path) -> int:
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "AGENTMILL_CACHE": str(cache), "AGENTMILL_IMAGES": "host"}
    with log.open("a") as out:
        return subprocess.run(
            [PY, "-m", "agentmill.cli", *args], env=env, cwd="/tmp", stdout=out, stderr=out
        ).returncode


def oracle_part(tree: Path, out: Path, cache: Path, log: Path) -> None:
    out.mkdir(parents=True)
    steps = [
        ["toolkit"],
        ["check", "--sample", "--json", str(out / "check.json")],
        ["rollout", "--sample", "--agent", "oracle", "--out", str(out / "rollout"), "-c", "2"],
        ["rollout", "--sample", "--agent", "nop", "--out", str(out / "rollout-nop"), "-c", "2"],
    ]
    steps += [
        [
            "export",
            str(out / "rollout"),
            "--format",
            f,
            "--out",
            str(out / "export" / f"{f}.jsonl"),
            "--min-turns",
            "0",
            "--keep-all-outcomes",
        ]
        for f in ("trl", "sharegpt", "harbor")
    ]
    steps += [
        [
            "export",
            str(out / "rollout"),
            "--format",
            "rl",
            "--out",
            str(out / "export" / "rl.parquet"),
            "--keep-all-outcomes",
        ]
    ]
    for step in steps:
        rc = agentmill(tree, cache, *step, log=log)
        print(f"  {tree.name}: agentmill {step[0]} -> exit {rc}", flush=True)


def recipe_part(trees: list[Path], work: Path) -> None:
    import tomllib

    import tomli_w

    sys.path.insert(0, str(ROOT))
    from agentmill.tasks import load_dataset, sample_dataset_path
    from tests.helpers.chat_server import ChatServer
    from tests.recipe.test_pipeline import policy_for_samples

    recipe = tomllib.loads((ROOT / "recipes" / "smoke.toml").read_text())
    names = [t.name for t in load_dataset(sample_dataset_path()).tasks]
    with ChatServer(policy_for_samples(names)) as srv:
        recipe["model"] = {**recipe["model"], "name": "scripted", "base_url": srv.base_url}
        for tree in trees:
            folder = work / tree.name / "recipe"
            folder.mkdir(parents=True)
            (folder / "recipe.toml").write_text(tomli_w.dumps(recipe))
            rc = agentmill(
                tree,
                work / tree.name / "cache",
                "run",
                str(folder / "recipe.toml"),
                "--out",
                str(folder / "run"),
                log=work / f"{tree.name}.log",
            )
            print(f"  {tree.name}: agentmill run -> exit {rc}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after", nargs="?", default="HEAD")
    ap.add_argument("--out", type=Path, default=None, help="work folder (default: a new temporary one)")
    ap.add_argument("--skip", action="append", default=[], choices=["oracle", "recipe"])
    args = ap.parse_args()
    work = (args.out or Path(tempfile.mkdtemp(prefix="before-after-", dir="/var/tmp"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o755)  # sandboxes run as unprivileged uids and must reach the dataset copies
    trees = [unpack(rev, work / "src" / name) for rev, name in ((args.before, "before"), (args.after, "after"))]
    print(f"work folder: {work}")
    if "oracle" not in args.skip:
        for tree in trees:
            oracle_part(tree, work / tree.name / "oracle", work / tree.name / "cache", work / f"{tree.name}.log")
    if "recipe" not in args.skip:
        recipe_part(trees, work)
    same = True
    for part in [p for p in ("oracle", "recipe") if p not in args.skip]:
        a, b = work / "before" / part, work / "after" / part
        if part == "recipe":
            a, b = a / "run", b / "run"
        aliases = [f"{work / 'src' / 'before'}={work / 'src' / 'after'}", f"{work / 'before'}={work / 'after'}"]
        r = subprocess.run(
            [PY, "-m", "agentmill.cli", "diff", str(a), str(b), *sum((["--alias", x] for x in aliases), [])],
            capture_output=True,
            text=True,
        )
        print(f"{part}: {r.stdout.strip() or r.stderr.strip()}")
        same &= r.returncode == 0
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
