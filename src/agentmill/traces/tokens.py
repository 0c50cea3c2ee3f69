"""Token counts under a real tokenizer and its chat template, or a labelled estimate.

A tokenizer comes from a `tokenizer.json`, a Hugging Face tokenizer folder, or the tokenizer inside a
GGUF file (such as the embedded SmolLM2's): its vocabulary, merges, special tokens and chat template
are read from the GGUF metadata and built into a `tokenizers` BPE tokenizer, so no weights framework
is needed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agentmill.errors import AgentmillError

CHARS_PER_TOKEN = 4.0  # the estimate used when no tokenizer is given


class TokenCounter:
    """`count(messages)` -> tokens of the conversation as the model would see it."""

    def __init__(self, tokenizer=None, *, source: str = "estimate"):
        self.tokenizer = tokenizer
        self.source = source

    @property
    def exact(self) -> bool:
        return self.tokenizer is not None

    @property
    def label(self) -> str:
        return f"tokenizer {self.source}" if self.exact else f"estimate ({CHARS_PER_TOKEN:g} characters per token)"

    @classmethod
    def load(cls, path: str | Path | None) -> TokenCounter:
        if path is None:
            return cls()
        return cls(load_tokenizer(Path(path)), source=str(path))

    def count(self, messages: list[dict[str, Any]], tools: list[dict] | None = None) -> int:
        if self.tokenizer is None:
            chars = sum(len(str(m.get("content") or "")) + len(json.dumps(m.get("tool_calls") or "")) for m in messages)
            return int(chars / CHARS_PER_TOKEN) + 4 * len(messages)
        if getattr(self.tokenizer, "chat_template", None):
            ids = self.tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=True)
            if isinstance(ids, dict) or hasattr(ids, "keys"):  # BatchEncoding in newer transformers
                ids = ids["input_ids"]
            return len(ids)
        text = "\n".join(str(m.get("content") or "") for m in messages)
        return len(self.tokenizer.encode(text))


def load_tokenizer(path: Path):
    """A transformers fast tokenizer from tokenizer.json, an HF folder, or a .gguf file."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # no "PyTorch was not found" banner
    if not path.exists():
        raise AgentmillError(f"--tokenizer {path}: not found")
    try:
        from transformers import AutoTokenizer, PreTrainedTokenizerFast
    except ImportError:
        raise AgentmillError(
            "token counting with a tokenizer needs transformers and tokenizers (scripts/setup.sh installs them)"
        ) from None
    if path.suffix == ".gguf":
        return gguf_tokenizer(path)
    if path.is_file() and path.name.endswith(".json"):
        return PreTrainedTokenizerFast(tokenizer_file=str(path))
    if path.is_dir():
        return AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    raise AgentmillError(f"--tokenizer {path}: expected a tokenizer.json, a tokenizer folder or a .gguf file")


def gguf_tokenizer(path: Path):
    from gguf import GGUFReader
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    reader = GGUFReader(str(path))

    def field(name: str):
        f = reader.fields.get(name)
        if f is None:
            return None
        if len(f.data) == 1 and f.types and f.types[0].name != "ARRAY":
            part = f.parts[f.data[0]]
            return bytes(part).decode("utf-8") if f.types[0].name == "STRING" else part.tolist()[0]
        if f.types[-1].name == "STRING":
            return [bytes(f.parts[i]).decode("utf-8", "replace") for i in f.data]
        return [f.parts[i].tolist()[0] for i in f.data]

    kind = field("tokenizer.ggml.model")
    if kind != "gpt2":
        raise AgentmillError(f"{path}: GGUF tokenizer type '{kind}' is not supported (byte-level BPE 'gpt2' is)")
    tokens = field("tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in field("tokenizer.ggml.merges")]
    types = field("tokenizer.ggml.token_type") or [1] * len(tokens)
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges, fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, ty in zip(tokens, types) if ty == 3])

    def special(name: str) -> str | None:
        idx = field(f"tokenizer.ggml.{name}_token_id")
        return tokens[idx] if isinstance(idx, int) and 0 <= idx < len(tokens) else None

    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=special("bos"),
        eos_token=special("eos"),
        unk_token=special("unknown"),
        pad_token=special("padding"),
        chat_template=field("tokenizer.chat_template"),
    )
