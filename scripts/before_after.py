"""Did a change alter agentmill's outputs? Run the same work under two git revisions and compare.

    .venv/bin/python scripts/before_after.py REV_BEFORE [REV_AFTER] [--out DIR] [--skip oracle|recipe]

Each revision is unpacked with `git archive` (nothing in the working tree is touched) and run with
this checkout's virtualenv, its `src/` first on PYTHONPATH:
- oracle: `check --sample --json`, `rollout --sample` with the oracle and the nop agent, and
  `export` of the oracle run as trl, sharegpt, harbor and rl;
- recipe: a six-stage recipe over the bundled tasks (augment, task filters, mix, terminus rollouts,
  trace filters, four exports) against one scripted chat server (tests/recipe/test_pipeline.py's
  policy, served once for both revisions so even the recorded endpoint is the same).
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
EXPORTS = "".join(f'\n[[exports]]\nformat = "{f}"\nfile = "{f}.{ext}"\n'
                  for f, ext in (("sharegpt", "jsonl"), ("rl", "parquet"), ("harbor", "jsonl")))


def unpack(rev: str, into: Path) -> Path:
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def agentmill(tree: Path, cache: Path, *args: str, log: Path) -> int:
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "AGENTMILL_CACHE": str(cache), "AGENTMILL_IMAGES": "host"}
    with log.open("a") as out:
        return subprocess.run([PY, "-m", "agentmill.cli", *args], env=env, cwd="/tmp", stdout=out, stderr=out).returncode


def oracle_part(tree: Path, out: Path, cache: Path, log: Path) -> None:
    out.mkdir(parents=True)
    steps = [["toolkit"], ["check", "--sample", "--json", str(out / "check.json")],
             ["rollout", "--sample", "--agent", "oracle", "--out", str(out / "rollout"), "-c", "2"],
             ["rollout", "--sample", "--agent", "nop", "--out", str(out / "rollout-nop"), "-c", "2"]]
    steps += [["export", str(out / "rollout"), "--format", f, "--out", str(out / "export" / f"{f}.jsonl"),
               "--min-turns", "0", "--keep-all-outcomes"] for f in ("trl", "sharegpt", "harbor")]
    steps += [["export", str(out / "rollout"), "--format", "rl", "--out", str(out / "export" / "rl.parquet"),
               "--keep-all-outcomes"]]
    for step in steps:
        rc = agentmill(tree, cache, *step, log=log)
        print(f"  {tree.name}: agentmill {step[0]} -> exit {rc}", flush=True)


def recipe_part(trees: list[Path], work: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.helpers.chat_server import ChatServer
    from tests.recipe.test_pipeline import policy_for_samples, recipe_text

    with ChatServer(policy_for_samples()) as srv:
        text = recipe_text(srv.base_url, min_turns=1) + EXPORTS
        for tree in trees:
            folder = work / tree.name / "recipe"
            folder.mkdir(parents=True)
            (folder / "recipe.toml").write_text(text)
            rc = agentmill(tree, work / tree.name / "cache", "run", str(folder / "recipe.toml"), "--out", str(folder / "run"),
                           log=work / f"{tree.name}.log")
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
        r = subprocess.run([PY, "-m", "agentmill.cli", "diff", str(a), str(b), *sum((["--alias", x] for x in aliases), [])],
                           capture_output=True, text=True)
        print(f"{part}: {r.stdout.strip() or r.stderr.strip()}")
        same &= r.returncode == 0
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
