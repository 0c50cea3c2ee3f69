"""An independent reckoning of which tokens an SFT row may train: each assistant turn's characters,
found by rendering the conversation up to that turn (the text the turn added after the generation
prompt), mapped to tokens through the tokenizer's offsets. Shared by the label tests and the
training test, which checks what actually reached the model."""

from __future__ import annotations

from agentmill.rl.sft_data import IGNORE, row_conversation, trainable_messages


def render(tok, messages, tools, **kw) -> str:
    return tok.apply_chat_template(messages, tools=tools, tokenize=False, **kw)


def assistant_spans(tok, messages, tools) -> list[tuple[int, int]]:
    """Character spans of what each assistant turn wrote: the text added by rendering the turn after
    the generation prompt, without the newline that follows the end-of-turn token."""
    spans = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        before = render(tok, messages[:i], tools, add_generation_prompt=True)
        upto = render(tok, messages[: i + 1], tools)
        assert upto.startswith(before), "the template must render each turn after the ones before it"
        spans.append((len(before), len(upto.rstrip("\n"))))
    return spans


def expected_labels(tok, row_in) -> tuple[list[int], list[int]]:
    """(input ids, labels) a row must train with: the conversation up to its last assistant turn, every
    token inside an assistant turn labelled with itself, every other token IGNORE."""
    messages, tools = row_conversation(row_in)
    messages, _ = trainable_messages(messages)
    text = render(tok, messages, tools)
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    spans = assistant_spans(tok, messages, tools)
    labels = [
        tid if any(s <= a and b <= e for s, e in spans) else IGNORE
        for tid, (a, b) in zip(enc["input_ids"], enc["offset_mapping"])
    ]
    return list(enc["input_ids"]), labels


def check_labels(tok, row_in, input_ids: list[int], labels: list[int]) -> None:
    """Token by token: the ids are the trimmed conversation's, and exactly the assistant's tokens carry a label."""
    want_ids, want_labels = expected_labels(tok, row_in)
    assert list(input_ids) == want_ids, "the tokens are not the conversation up to its last assistant turn"
    for i, (tid, got, want) in enumerate(zip(input_ids, labels, want_labels)):
        assert got == want, (i, tok.decode([tid]), got, want)
    assert any(x != IGNORE for x in labels), "no token is trained"
