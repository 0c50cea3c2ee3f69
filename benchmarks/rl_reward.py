"""What the RL reward costs: completions scored per second by agentmill's verifier reward.

    .venv/bin/python benchmarks/rl_reward.py [--tasks csv-revenue-by-region,json-users-to-csv] [--repeat 4] [--concurrency 1,4]

For each bundled terminal task, two completions as a policy would write them: the task's solution
typed as one terminus command (duration 1 s) and a nop reply (no commands, task_complete). Each is
scored `--repeat` times through `GRPOReward` (one batch per concurrency level: image cache lookup,
copy, agent sandbox, tmux, the policy's waits, a fresh verifier sandbox). Printed: completions/s,
p50/p90 latency per completion, and the scores (solutions must score 1, nops 0, or it exits 1).
Then the SFT side without torch: rows/s tokenised with assistant masks (SmolLM2's tokenizer).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentmill.rl import GRPOReward  # noqa: E402
from agentmill.tasks import sample_dataset_path  # noqa: E402
from agentmill.tasks.dataset import load_dataset  # noqa: E402


def completions(task) -> tuple[str, str]:
    script = (task.path / "solution" / "solve.sh").read_text()
    solve = {
        "analysis": "",
        "plan": "",
        "task_complete": True,
        "commands": [{"keystrokes": f"bash <<'AGENTMILL_EOF'\n{script}AGENTMILL_EOF\n", "duration": 1.0}],
    }
    nop = {"analysis": "", "plan": "", "task_complete": True, "commands": []}
    return json.dumps(solve), json.dumps(nop)


def timed_batch(reward: GRPOReward, items: list[tuple[str, str, float]]) -> tuple[float, list[float], list[float]]:
    """(wall seconds, per-completion latencies, scores) of one batch, each completion timed alone too."""
    latencies = []
    started = time.perf_counter()
    scores = reward(
        prompts=[None] * len(items),
        completions=[c for _, c, _ in items],
        reward_model=[{"ground_truth": h} for h, _, _ in items],
        extra_info=[{"agent": "terminus"}] * len(items),
    )
    wall = time.perf_counter() - started
    for h, c, _ in items[:4]:  # a few alone, for the latency of one completion
        t = time.perf_counter()
        reward(prompts=[None], completions=[c], reward_model=[{"ground_truth": h}], extra_info=[{"agent": "terminus"}])
        latencies.append(time.perf_counter() - t)
    return wall, latencies, scores


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default="csv-revenue-by-region,json-users-to-csv")
    ap.add_argument("--repeat", type=int, default=4)
    ap.add_argument("--concurrency", default="1,4")
    args = ap.parse_args()
    root = sample_dataset_path()
    tasks = load_dataset(root, names=args.tasks.split(",")).tasks
    items = []
    for t in tasks:
        solve, nop = completions(t)
        items += [(t.content_hash, solve, 1.0), (t.content_hash, nop, 0.0)] * args.repeat
    warm = GRPOReward(tasks=root)
    warm(
        prompts=[None], completions=[items[1][1]], reward_model=[{"ground_truth": items[1][0]}], extra_info=[{}]
    )  # images, toolkit
    ok = True
    for c in (int(x) for x in args.concurrency.split(",")):
        reward = GRPOReward(tasks=root, concurrency=c)
        wall, latencies, scores = timed_batch(reward, items)
        wrong = sum(s != want for s, (_, _, want) in zip(scores, items))
        ok &= wrong == 0
        print(
            f"concurrency {c}: {len(items)} completions in {wall:.1f}s = {len(items) / wall:.2f}/s; "
            f"one alone p50 {statistics.median(latencies):.2f}s (solution + nop); wrong scores: {wrong}"
        )
    try:
        from agentmill.models.local import local_gguf
        from agentmill.rl.chat_template import use_marked_template
        from agentmill.rl.sft_data import tokenize_conversation
        from agentmill.traces.tokens import gguf_tokenizer
    except ImportError:
        return 0 if ok else 1
    tok = gguf_tokenizer(local_gguf())
    use_marked_template(tok)
    turn = [
        {"role": "assistant", "content": json.dumps({"analysis": "x" * 200, "plan": "y" * 100, "commands": []})},
        {"role": "user", "content": "New terminal output:\n" + "line of output\n" * 40},
    ]
    conv = [{"role": "system", "content": "s" * 1500}, {"role": "user", "content": "task"}] + turn * 15
    conv = conv[:-1]
    n, started = 50, time.perf_counter()
    for _ in range(n):
        tokenize_conversation(tok, conv)
    dt = time.perf_counter() - started
    print(
        f"sft rows (31 messages, {len(tokenize_conversation(tok, conv).input_ids)} tokens): {n / dt:.1f} rows/s tokenised with masks"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
