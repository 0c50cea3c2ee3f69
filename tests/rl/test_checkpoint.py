"""`agentmill train checkpoint`: the embedded SmolLM2 GGUF becomes a trainable transformers checkpoint
that computes what llama.cpp computes from the same file (logits compared position by position, with
the converter's classic defect planted to watch the comparison fire), with a tokenizer whose ids are
llama.cpp's and whose chat template marks the assistant's tokens. Nothing is downloaded."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from agentmill.rl.chat_template import has_generation_markers
from tests.rl.conftest import CLI, HAVE_MODEL, embedded_gguf, needs_train

CONVERSATION = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Write a shell command that counts the lines of data.csv."},
    {"role": "assistant", "content": "wc -l data.csv"},
]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=900)


def llama_cpp_logits(text: str) -> tuple[list[int], np.ndarray]:
    """llama.cpp's token ids and logits at every position, from the GGUF file itself."""
    from llama_cpp import Llama

    llm = Llama(model_path=str(embedded_gguf()), logits_all=True, verbose=False, n_ctx=256, n_threads=2)
    try:
        ids = llm.tokenize(text.encode(), add_bos=False, special=True)
        llm.eval(ids)
        return ids, np.array(llm.scores[: len(ids)])
    finally:
        llm.close()


def agreement(model, ids: list[int], reference: np.ndarray) -> tuple[float, float]:
    """(the lowest per-position correlation of the two models' logits, the share of positions whose top token agrees)."""
    import torch

    with torch.no_grad():
        got = model(torch.tensor([ids])).logits[0].float().numpy()
    corr = [float(np.corrcoef(a, b)[0, 1]) for a, b in zip(got, reference)]
    return min(corr), float(np.mean(got.argmax(-1) == reference.argmax(-1)))


def rope_permuted(w, heads: int):
    """The row order llama.cpp's GGUF uses for Q/K projections; a converter that forgets to undo it ships broken attention."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


@pytest.mark.slow
@pytest.mark.timeout(900)
@needs_train
def test_checkpoint_computes_what_the_gguf_model_computes(smollm2_checkpoint):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    config = json.loads((smollm2_checkpoint / "config.json").read_text())
    assert "quantization_config" not in config  # plain weights: trainable and saveable
    tok = AutoTokenizer.from_pretrained(str(smollm2_checkpoint), local_files_only=True)
    assert has_generation_markers(tok.chat_template)
    text = tok.apply_chat_template(CONVERSATION, tokenize=False)
    ids, reference = llama_cpp_logits(text)
    assert tok(text, add_special_tokens=False)["input_ids"] == ids  # the same token ids as llama.cpp
    model = AutoModelForCausalLM.from_pretrained(str(smollm2_checkpoint), local_files_only=True).eval()
    assert all(p.dtype == torch.float32 and p.requires_grad for p in model.parameters())
    corr, top1 = agreement(model, ids, reference)
    assert corr > 0.99 and top1 >= 0.9, (corr, top1)
    # the gate can fire: the same weights with the Q/K rows left in GGUF's order
    with torch.no_grad():
        for layer in model.model.layers:
            attn = layer.self_attn
            attn.q_proj.weight.copy_(rope_permuted(attn.q_proj.weight, model.config.num_attention_heads))
            attn.k_proj.weight.copy_(rope_permuted(attn.k_proj.weight, model.config.num_key_value_heads))
    corr, top1 = agreement(model, ids, reference)
    assert not (corr > 0.99 and top1 >= 0.9), (corr, top1)


@pytest.mark.skipif(not HAVE_MODEL, reason="the embedded model is not installed")
def test_gguf_tokenizer_becomes_a_checkpoint_tokenizer_with_a_marked_template(tmp_path):
    r = cli("train", "checkpoint", str(embedded_gguf()), "--out", str(tmp_path / "ckpt"), "--tokenizer-only")
    assert r.returncode == 0, r.stderr
    assert "bundled ChatML template" in r.stderr
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tmp_path / "ckpt"), local_files_only=True)
    assert has_generation_markers(tok.chat_template)
    out = tok.apply_chat_template(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
        tokenize=True,
        return_dict=True,
        return_assistant_tokens_mask=True,
    )
    assert tok.decode([t for t, m in zip(out["input_ids"], out["assistant_masks"]) if m]) == "yo<|im_end|>"
    r = cli("train", "checkpoint", str(tmp_path / "missing.gguf"), "--out", str(tmp_path / "x"), "--tokenizer-only")
    assert r.returncode == 2 and "missing.gguf: not found" in r.stderr


def test_training_without_the_extra_says_what_to_install(tmp_path, monkeypatch):
    """A machine without the extra gets one line naming the missing modules (planted: a module that is not there)."""
    from typer.testing import CliRunner

    from agentmill.rl import training
    from agentmill.rl.cli import app

    monkeypatch.setattr(training, "TRAIN_MODULES", (*training.TRAIN_MODULES, "agentmill_no_such_module"))
    rows = tmp_path / "rows.jsonl"
    rows.write_text("")
    for args in (["sft", str(rows)], ["rl", str(rows), "--tasks", str(tmp_path)]):
        r = CliRunner().invoke(app, [*args, "--model", str(tmp_path), "--out", str(tmp_path / "o")])
        assert r.exit_code == 2, r.output
        assert "pip install 'agentmill[train]'" in r.output and "agentmill_no_such_module" in r.output
    assert not (tmp_path / "o").exists()
