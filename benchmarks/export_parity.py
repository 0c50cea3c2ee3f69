"""Exported rows before and after a change, byte for byte: every format and option, on one run folder.

    .venv/bin/python benchmarks/export_parity.py --baseline-src DIR [--run RUN_DIR] [--n 400] [--workers 1 2]

DIR is the `src` folder of the code to compare with (for example `git archive <commit> src | tar -x -C /tmp/base`).
Each case runs `export_run` in a child process, once with the baseline's code and once with this
tree's for each --workers value, into separate folders; then every output file is compared. Harbor
job folders carry a fresh job id and the export's clock, which are masked; nothing else is. Without
--run, a varied run folder (tests/traces/builders.py: write_varied_run) of --n trials is built.
Prints one line per case and output, and exits 1 if any differs.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.traces.builders import NASTY, write_varied_run  # noqa: E402

KEEP_ALL = {"min_turns": 0, "drop_outcomes": [], "subagents": "keep", "tamper": "keep"}
GGUF = "gguf"  # stands for the embedded model's GGUF file (its tokenizer) when it is installed

# name -> (format, output file name, export_run keywords)
CASES: dict[str, tuple[str, str, dict]] = {
    "trl-default": ("trl", "rows.jsonl", {}),
    "trl-all": ("trl", "rows.jsonl", {"spec": KEEP_ALL}),
    "trl-all-drop": ("trl", "rows.jsonl", {"spec": KEEP_ALL, "reasoning": "drop"}),
    "trl-parquet": ("trl", "rows.parquet", {"spec": KEEP_ALL}),
    "sharegpt-all": ("sharegpt", "rows.jsonl", {"spec": KEEP_ALL}),
    "sharegpt-drop": ("sharegpt", "rows.jsonl", {"spec": {**KEEP_ALL, "reward": "success"}, "reasoning": "drop"}),
    "harbor-all": ("harbor", "rows.jsonl", {"spec": KEEP_ALL}),
    "rl-default": ("rl", "rows.jsonl", {}),
    "harbor-job": ("harbor-job", "job", {"spec": KEEP_ALL}),
    "harbor-job-no-surrogates": ("harbor-job", "job", {"spec": KEEP_ALL, "run": "no-surrogates"}),
    "trl-strict": (
        "trl",
        "rows.jsonl",
        {
            "spec": {
                "min_turns": 3,
                "completion": "unclaimed",
                "max_error_rate": 0.9,
                "max_repeated_commands": 3,
                "max_truncated": 0,
                "min_reward": 0.5,
            }
        },
    ),
    "trl-max-tokens": ("trl", "rows.jsonl", {"spec": {**KEEP_ALL, "max_tokens": 400}}),
    "trl-tokenizer": ("trl", "rows.jsonl", {"spec": {**KEEP_ALL, "max_tokens": 600}, "tokenizer": GGUF}),
}

CHILD = """
import json, sys
from pathlib import Path
from agentmill.traces.export import EmptyExport, export_run
from agentmill.traces.filters import FilterSpec
run, out, fmt, kw = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
kw["spec"] = FilterSpec.model_validate(kw.get("spec", {}))
try:
    r = export_run(run, fmt, out, **kw)
    summary = {"rows": r.rows, "redactions": r.redactions, "tokens": r.tokens, "skipped": r.skipped,
               "funnel": [vars(s) for s in r.funnel], "extra": [Path(p).name for p in r.extra_files]}
except EmptyExport as e:
    summary = {"empty": str(e)}
(out.parent / "report.json").write_text(json.dumps(summary, indent=1))
"""

_MASKS = [
    re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),  # the job's fresh id
    re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:\+00:00|Z)?"),
]  # the export's clock


def gguf_path() -> str | None:
    try:
        from agentmill.models.local import local_gguf

        return str(local_gguf())
    except Exception:  # not installed: that case is skipped
        return None


def run_case(src: Path, run: Path, dest: Path, fmt: str, out_name: str, kw: dict) -> None:
    """Export into one fixed folder (paths written into rows are then the same), then move it to `dest`."""
    here = dest.parents[1] / "current"
    shutil.rmtree(here, ignore_errors=True)
    here.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(run), str(here / out_name), fmt, json.dumps(kw)],
        env=env,
        capture_output=True,
        text=True,
        cwd=here,
    )
    if proc.returncode != 0:  # an export that fails must fail alike: its error is compared
        (here / "report.json").write_text(json.dumps({"failed": proc.stderr.strip().splitlines()[-1]}))
    dest.parent.mkdir(parents=True, exist_ok=True)
    here.rename(dest)


def same(a: Path, b: Path, masked: bool) -> bool:
    if not masked:
        return filecmp.cmp(a, b, shallow=False)
    ta, tb = a.read_text(errors="replace"), b.read_text(errors="replace")
    for mask in _MASKS:
        ta, tb = mask.sub("<masked>", ta), mask.sub("<masked>", tb)
    return ta == tb


def compare(base: Path, new: Path, masked: bool) -> list[str]:
    files = sorted(p.relative_to(base) for p in base.rglob("*") if p.is_file())
    theirs = sorted(p.relative_to(new) for p in new.rglob("*") if p.is_file())
    if files != theirs:
        return [f"file lists differ: {sorted(set(files) ^ set(theirs))[:5]}"]
    return [str(f) for f in files if not same(base / f, new / f, masked and f.name != "trajectory.json")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline-src", required=True, type=Path)
    ap.add_argument("--run", type=Path)
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/export-parity"))
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    run = args.run
    if run is None:
        run = args.workdir / "run"
        write_varied_run(run, args.n)
    # a run without lone surrogates, for what cannot write them (harbor-job at the time of writing)
    plain_run = args.workdir / "run-no-surrogates"
    write_varied_run(plain_run, args.n, nasty=[t for t in NASTY if not any(0xD800 <= ord(c) <= 0xDFFF for c in t)])
    gguf, failed = gguf_path(), 0
    for name, (fmt, out_name, kw) in CASES.items():
        if kw.get("tokenizer") == GGUF:
            if gguf is None:
                print(f"{name}: skipped (no embedded model for its tokenizer)")
                continue
            kw = {**kw, "tokenizer": gguf}
        kw = dict(kw)
        case_run = plain_run if kw.pop("run", None) else run
        base = args.workdir / "base" / name
        run_case(args.baseline_src, case_run, base, fmt, out_name, kw)
        for w in args.workers:
            new = args.workdir / f"new-w{w}" / name
            run_case(ROOT / "src", case_run, new, fmt, out_name, {**kw, "workers": w})
            diff = compare(base, new, masked=fmt == "harbor-job")
            report = json.loads((base / "report.json").read_text())
            failed += bool(diff)
            print(
                f"{name} workers={w}: {'DIFFERS ' + ', '.join(diff) if diff else 'identical'} "
                f"({report.get('rows', 0)} rows, {report.get('redactions', 0)} redactions, "
                f"{len(report.get('skipped', []))} skipped{', empty' if 'empty' in report else ''}"
                f"{', failed: ' + report['failed'] if 'failed' in report else ''})"
            )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
