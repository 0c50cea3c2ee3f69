"""`agentmill train sft`: two optimiser steps of TRL's SFTTrainer on a real export, on CPU, with the
labels that reached the model checked token by token against an independent reckoning
(tests/rl/labels.py), and the loss of the first step recomputed from that reckoning, so a trainer
that trained the prompt, the terminal output or an unanswered trailing turn would be caught."""

from __future__ import annotations

import json
import math
import re

import pytest

from agentmill.errors import AgentmillError
from agentmill.rl.sft_data import IGNORE
from tests.conftest import sandbox
from tests.rl.conftest import needs_train
from tests.rl.labels import check_labels, expected_labels

pytestmark = [sandbox, needs_train]
MAX_LENGTH = 1400  # keeps CPU steps short: the tool task's row (its tool schemas: ~8k tokens) is left out, reported


def with_unanswered_turn(row: dict) -> dict:
    """The row cut after its first assistant turn, plus the observation that came next, never answered."""
    messages = row["messages"]
    first = next(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return {
        **row,
        "messages": [*messages[: first + 1], {"role": "user", "content": "UNANSWERED-OBSERVATION: never trained"}],
    }


def capture_forward_inputs(model) -> list[dict]:
    """What each training step handed the model (its input ids, attention mask and labels) and the dtype
    its first linear layer computed in: bfloat16 on a CPU without bf16 instructions makes a step ~10x
    slower. The dtype is read inside the forward, where the trainer's autocast is in effect: it is
    entered by the wrapped `forward`, after the model's own pre-hooks, and TRL's fused output layer
    never calls `lm_head` as a module."""
    import torch

    seen: list[dict] = []

    def inputs(_module, _args, kwargs):
        if model.training and kwargs.get("labels") is not None:
            seen.append(
                {k: kwargs[k].tolist() for k in ("input_ids", "attention_mask", "labels") if kwargs.get(k) is not None}
            )

    def compute_dtype(_module, _args, output):
        if model.training and seen and "compute_dtype" not in seen[-1]:  # not the checkpointed recompute
            seen[-1]["compute_dtype"] = str(output.dtype)

    model.register_forward_pre_hook(inputs, with_kwargs=True)
    next(m for m in model.modules() if isinstance(m, torch.nn.Linear)).register_forward_hook(compute_dtype)
    return seen


def unpadded(batch: dict) -> list[tuple[list[int], list[int]]]:
    rows = []
    for ids, mask, labels in zip(batch["input_ids"], batch["attention_mask"], batch["labels"]):
        keep = [i for i, m in enumerate(mask) if m]
        rows.append(([ids[i] for i in keep], [labels[i] for i in keep]))
    return rows


def assistant_nll(model_dir, batch: list[tuple[list[int], list[int]]]) -> float:
    """The untrained model's mean next-token loss over the labelled tokens: what step 1 must log."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(model_dir), local_files_only=True).eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for ids, labels in batch:
            logp = torch.log_softmax(model(torch.tensor([ids])).logits[0, :-1].float(), -1)
            for pos, target in enumerate(labels[1:]):
                if target != IGNORE:
                    total -= logp[pos, target].item()
                    count += 1
    return total / count


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sft_two_steps_train_only_the_assistants_tokens(rl_export, smollm2_checkpoint, tmp_path):
    from agentmill.rl.sft import build_sft

    rows = [*rl_export.sft_rows, with_unanswered_turn(rl_export.sft_rows[0])]
    data = tmp_path / "sft.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = build_sft(smollm2_checkpoint, [data], tmp_path / "out", steps=2, batch_size=1, max_length=MAX_LENGTH)
    notes = run.notes()
    assert "1 rows ended on an unanswered turn: dropped before training" in notes
    assert any("over --max-length 1400" in n for n in notes)  # the long tool row: reported, not cut
    seen = capture_forward_inputs(run.trainer.model)
    run.trainer.train()
    losses = [h["loss"] for h in run.trainer.state.log_history if "loss" in h]
    assert len(losses) == 2 and all(math.isfinite(x) and x > 0 for x in losses), losses
    assert len(seen) == 2  # one forward per step (batch 1): the two shortest rows, one epoch
    assert [batch.get("compute_dtype") for batch in seen] == [
        "torch.float32"
    ] * 2  # float32 on a CPU, not TRL's default bf16
    tok = run.tokenizer
    by_ids = {json.dumps(expected_labels(tok, row)[0]): row for row in rows}
    trained = []
    for batch in seen:
        for ids, labels in unpadded(batch):
            row = by_ids[json.dumps(ids)]
            check_labels(tok, row, ids, labels)  # every label is the assistant's, every assistant token is labelled
            assert "UNANSWERED-OBSERVATION" not in tok.decode(ids)
            trained.append(row)
    assert any(
        r["messages"][-1]["content"].startswith("UNANSWERED") for r in trained
    )  # the trimmed row was trained, trimmed
    assert losses[0] == pytest.approx(assistant_nll(smollm2_checkpoint, unpadded(seen[0])), rel=2e-3)
    run.trainer.save_model(str(tmp_path / "out"))
    assert (tmp_path / "out" / "model.safetensors").exists()


def test_the_label_check_fires_on_labels_over_every_token(rl_export, smollm2_checkpoint):
    """The gate can fail: a trainer that ignored the mask (labels = input ids), or that kept the unanswered turn."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(smollm2_checkpoint), local_files_only=True)
    row = rl_export.sft_rows[0]
    ids, labels = expected_labels(tok, row)
    check_labels(tok, row, ids, labels)
    with pytest.raises(AssertionError):
        check_labels(tok, row, ids, list(ids))
    trailing = with_unanswered_turn(row)
    untrimmed = tok.apply_chat_template(
        trailing["messages"], tools=json.loads(row["tools"]) if row.get("tools") else None, tokenize=True
    )
    with pytest.raises(AssertionError, match="last assistant turn"):
        check_labels(tok, trailing, untrimmed, [IGNORE] * len(untrimmed))


def test_a_template_without_markers_stops_training_before_any_step(rl_export, smollm2_checkpoint, tmp_path):
    from agentmill.rl.sft import build_sft

    data = tmp_path / "sft.jsonl"
    data.write_text(json.dumps(rl_export.sft_rows[0]) + "\n")
    plain = tmp_path / "plain.jinja"
    plain.write_text("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}")
    with pytest.raises(AgentmillError, match="plain.jinja: has no"):
        build_sft(smollm2_checkpoint, [data], tmp_path / "out", steps=1, chat_template=plain)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_train_sft_cli_reports_left_out_rows_and_saves_a_marked_checkpoint(rl_export, smollm2_checkpoint, tmp_path):
    from transformers import AutoTokenizer

    from agentmill.rl.chat_template import has_generation_markers
    from tests.rl.conftest import agentmill

    data = tmp_path / "sft.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rl_export.sft_rows))
    r = agentmill(
        "train",
        "sft",
        str(data),
        "--model",
        str(smollm2_checkpoint),
        "--out",
        str(tmp_path / "out"),
        "--steps",
        "1",
        "--max-length",
        "1200",
        timeout=900,
    )
    assert "1 rows" in r.stderr and r.stderr.count("over --max-length 1200") == len(rl_export.sft_rows) - 1, r.stderr[
        -2000:
    ]
    assert re.search(r"1 logged steps; loss \d+\.\d+", r.stderr)
    tok = AutoTokenizer.from_pretrained(str(tmp_path / "out"), local_files_only=True)
    assert has_generation_markers(tok.chat_template) and (tmp_path / "out" / "model.safetensors").exists()
