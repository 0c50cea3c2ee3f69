"""What `agentmill train` costs on this machine: installing the extra, turning the embedded GGUF into a
checkpoint, an SFT step and a GRPO step (135M SmolLM2, float32, CPU).

    .venv/bin/python benchmarks/train.py [--steps 3] [--install] [--work DIR]

Data: a real export made as the tests make it (tests/rl/conftest.py: terminus rollouts on two
bundled terminal tasks against a scripted teacher, an oracle rollout on a tool task). Each phase
runs in its own process, so its peak memory is its own:
- checkpoint: `agentmill train checkpoint` on the embedded GGUF (the whole command: imports,
  dequantising, saving 0.5 GB of float32 weights);
- sft: SFTTrainer steps (batch 1) on the two terminal rows (~1.1k and ~1.5k tokens; the tool row's
  ~8k tokens are left out by --max-length); the first step is apart (it warms up);
- grpo: GRPOTrainer steps of 1 prompt x 2 completions scored by the verifier: scripted completions
  (the task's solution and a nop, as in the tests; the step includes both episodes, whose part is
  printed apart), then the model's own generations (32 new tokens each);
- per step, wall seconds and this process's CPU seconds (all threads; about 2x the wall time of an
  idle 2-core machine, and less moved by other work than the wall time);
- install (--install): `pip install -e .[train]` into a fresh virtualenv (the mirror's wheels), its
  wall time and size on disk; it is deleted afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def run_child(args: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MiB, stdout) of one child process (reaped with wait4 for its own rusage)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(args, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(args[:4])}... failed:\n{err.read()[-3000:]}")
        return wall, usage.ru_maxrss / 1024, out.read()


def step_timer():
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.times: list[float] = []
            self.cpu: list[float] = []  # this process's CPU seconds (all threads): less moved by other load

        def on_step_begin(self, args, state, control, **kw):
            self.started, self.cpu_started = time.perf_counter(), time.process_time()

        def on_step_end(self, args, state, control, **kw):
            self.times.append(time.perf_counter() - self.started)
            self.cpu.append(time.process_time() - self.cpu_started)

    return StepTimer()


def phase_sft(work: Path, steps: int) -> dict:
    from agentmill.rl.sft import build_sft

    started = time.perf_counter()
    run = build_sft(
        work / "smollm2", [work / "sft.jsonl"], work / "sft-out", steps=steps, batch_size=1, max_length=1600
    )
    build = time.perf_counter() - started
    timer = step_timer()
    run.trainer.add_callback(timer)
    run.trainer.train()
    tokens = sorted(len(r["input_ids"]) for r in run.prepared.rows)
    return {
        "build_s": build,
        "steps_s": timer.times,
        "cpu_s": timer.cpu,
        "row_tokens": tokens,
        "losses": [h["loss"] for h in run.trainer.state.log_history if "loss" in h],
    }


def phase_grpo(work: Path, steps: int, scripted: bool) -> dict:
    from agentmill.rl.grpo import build_grpo
    from tests.rl.scripted import scripted_rollout, terminus

    export = json.loads((work / "export.json").read_text())
    script = Path(export["solution"]).read_text()
    rollout = (
        scripted_rollout([terminus([(f"bash <<'AGENTMILL_EOF'\n{script}AGENTMILL_EOF\n", 1.0)]), terminus([])])
        if scripted
        else None
    )
    run = build_grpo(
        work / "smollm2",
        [work / "rl.jsonl"],
        [Path(export["tasks_dir"])],
        work / "grpo-out",
        steps=steps,
        generations=2,
        max_completion_tokens=32,
        concurrency=2,
        rollout_func=rollout,
    )
    reward_times: list[float] = []
    inner = run.trainer.reward_funcs[0]

    def timed_reward(*a, **kw):
        t = time.perf_counter()
        try:
            return inner(*a, **kw)
        finally:
            reward_times.append(time.perf_counter() - t)

    run.trainer.reward_funcs[0] = timed_reward
    timer = step_timer()
    run.trainer.add_callback(timer)
    run.trainer.train()
    return {
        "steps_s": timer.times,
        "cpu_s": timer.cpu,
        "reward_s": reward_times,
        "rewards": [s.score for s in run.reward.history],
    }


def prepare(work: Path) -> tuple[float, float]:
    from tests.rl.conftest import TERMINAL, make_export

    export = make_export(work / "export")
    (work / "sft.jsonl").write_text("".join(json.dumps(r) + "\n" for r in export.sft_rows))
    (work / "rl.jsonl").write_text(json.dumps(export.row(TERMINAL[0])) + "\n")
    (work / "export.json").write_text(
        json.dumps(
            {
                "tasks_dir": str(export.tasks_dir),
                "solution": str(export.tasks_dir / TERMINAL[0] / "solution" / "solve.sh"),
            }
        )
    )
    from agentmill.models.local import local_gguf

    return run_child(
        [str(ROOT / ".venv/bin/agentmill"), "train", "checkpoint", str(local_gguf()), "--out", str(work / "smollm2")]
    )[:2]


def install_extra() -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="train-install-") as tmp:
        subprocess.run([sys.executable, "-m", "venv", f"{tmp}/venv"], check=True)
        started = time.perf_counter()
        subprocess.run(
            [f"{tmp}/venv/bin/python", "-m", "pip", "install", "-q", f"{ROOT}[train]"],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - started
        size = int(subprocess.run(["du", "-sm", f"{tmp}/venv"], capture_output=True, text=True).stdout.split()[0])
    return wall, size / 1024


def stats(xs: list[float]) -> str:
    return f"{statistics.median(xs):.1f} s (min {min(xs):.1f}, max {max(xs):.1f}, n={len(xs)})" if xs else "-"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument(
        "--install", action="store_true", help="also time `pip install .[train]` into a fresh venv (~6 GB, deleted)"
    )
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--phase", choices=["sft", "grpo-scripted", "grpo-generate"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:  # a child: one phase, its figures as JSON on stdout
        result = (
            phase_sft(args.work, args.steps)
            if args.phase == "sft"
            else phase_grpo(args.work, args.steps, args.phase == "grpo-scripted")
        )
        print(json.dumps(result))
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-train-"))
    print(f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    if args.install:
        wall, gib = install_extra()
        print(f"install .[train] into a fresh venv: {wall:.0f} s, {gib:.1f} GiB on disk")
    ck_wall, ck_peak = prepare(work)
    print(f"checkpoint (agentmill train checkpoint, whole command): {ck_wall:.1f} s, peak {ck_peak:.0f} MiB")
    me = [sys.executable, str(Path(__file__).resolve()), "--work", str(work), "--steps", str(args.steps)]
    wall, peak, out = run_child([*me, "--phase", "sft"])
    sft = json.loads(out.splitlines()[-1])
    print(
        f"sft: rows of {sft['row_tokens']} tokens; first step {sft['steps_s'][0]:.1f} s; "
        f"later steps {stats(sft['steps_s'][1:])}, CPU {stats(sft['cpu_s'][1:])}; trainer setup {sft['build_s']:.1f} s; peak {peak:.0f} MiB; losses "
        + ", ".join(f"{x:.3f}" for x in sft["losses"])
    )
    for phase in ("grpo-scripted", "grpo-generate"):
        wall, peak, out = run_child([*me, "--phase", phase])
        g = json.loads(out.splitlines()[-1])
        print(
            f"{phase}: steps {stats(g['steps_s'])}, CPU {stats(g['cpu_s'])}, of which the verifier reward {stats(g['reward_s'])}; "
            f"rewards {g['rewards']}; peak {peak:.0f} MiB"
        )
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
