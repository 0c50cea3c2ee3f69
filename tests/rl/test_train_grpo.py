"""`agentmill train rl`: GRPO steps of TRL's GRPOTrainer on CPU where every reward is agentmill's
verifier on what the completion did in a sandbox, on bundled tasks from a real export whose task
folder was moved. Generation is scripted at TRL's own generation boundary (`rollout_func`) with
the task's solution and a do-nothing reply, so the rewards are known: 1 and 0, from the verifier,
and the step is a real update; the CLI run lets the model generate."""

from __future__ import annotations

import json
import math
import re

import pytest

from tests.conftest import sandbox
from tests.rl.conftest import TERMINAL, agentmill, needs_train
from tests.rl.scripted import scripted_rollout, terminus

pytestmark = [sandbox, needs_train, pytest.mark.slow, pytest.mark.timeout(900)]


def test_grpo_step_rewards_1_for_the_solution_and_0_for_nothing_from_the_verifier(
    rl_export, smollm2_checkpoint, tmp_path
):
    import torch

    from agentmill.rl.grpo import build_grpo

    task = TERMINAL[0]
    data = tmp_path / "rl.jsonl"
    data.write_text(json.dumps(rl_export.row(task)) + "\n")
    script = (rl_export.tasks_dir / task / "solution" / "solve.sh").read_text()
    oracle_like = terminus([(f"bash <<'AGENTMILL_EOF'\n{script}AGENTMILL_EOF\n", 3.0)])
    nop_like = terminus([], complete=True)  # claims to be done, did nothing
    rollout = scripted_rollout([oracle_like, nop_like])
    run = build_grpo(
        smollm2_checkpoint,
        [data],
        [rl_export.tasks_dir],
        tmp_path / "out",
        steps=1,
        generations=2,
        concurrency=2,
        rollout_func=rollout,
    )
    before = {n: p.detach().clone() for n, p in run.trainer.model.named_parameters()}
    run.trainer.train()
    assert rollout.served == [oracle_like, nop_like]
    # the verifier's verdicts, in the order TRL handed the completions over
    assert [(s.score, s.outcome, s.tampered) for s in run.reward.history] == [
        (1.0, "passed", False),
        (0.0, "failed", False),
    ]
    assert [s.verifier_reward for s in run.reward.history] == [1.0, 0.0]
    step = next(h for h in run.trainer.state.log_history if "loss" in h)
    assert step["rewards/agentmill_verifier/mean"] == 0.5 and step["reward_std"] > 0.5  # what TRL trained on
    assert math.isfinite(step["loss"]) and step["loss"] != 0  # advantages of +-1: a real policy-gradient step
    changed = [n for n, p in run.trainer.model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert len(changed) == len(before)


def test_train_rl_cli_scores_the_models_own_generations_with_the_verifier(rl_export, smollm2_checkpoint, tmp_path):
    data = tmp_path / "rl.jsonl"
    data.write_text(json.dumps(rl_export.row(TERMINAL[1])) + "\n")
    r = agentmill(
        "train",
        "rl",
        str(data),
        "--model",
        str(smollm2_checkpoint),
        "--tasks",
        str(rl_export.tasks_dir),
        "--out",
        str(tmp_path / "out"),
        "--steps",
        "1",
        "--generations",
        "2",
        "--max-completion-tokens",
        "24",
        timeout=900,
    )
    said = re.search(r"(\d+) rewards from the verifier; mean ([\d.]+)", r.stderr)
    assert said and said.group(1) == "2", r.stderr[-2000:]
    # a 135M model writing 24 tokens does not solve the task: the verifier says so, it is not a machinery error
    assert float(said.group(2)) == 0.0 and "outcomes: failed" in r.stderr
    assert (tmp_path / "out" / "model.safetensors").exists() and (tmp_path / "out" / "chat_template.jinja").exists()
