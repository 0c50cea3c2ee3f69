"""A trainable transformers checkpoint from a GGUF file, such as the embedded SmolLM2's.

The tokenizer is rebuilt from the file's metadata with a chat template that has generation markers;
the weights are dequantised by transformers (`gguf_file=`). A quantised file (the embedded model is
Q4_1) gives a lossy checkpoint: fine for smoke runs, not for real training, where you start from
the model's original weights.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentmill.rl.chat_template import use_marked_template
from agentmill.rl.training import require_train_extra


def tokenizer_from_gguf(gguf: Path, out: Path, *, chat_template: Path | None = None) -> str:
    """The GGUF file's tokenizer as a transformers tokenizer folder, with a marked chat template (no torch needed)."""
    from agentmill.traces.tokens import gguf_tokenizer

    require_train_extra(("transformers", "tokenizers", "gguf"))
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # no "PyTorch was not found" banner: not needed here
    tokenizer = gguf_tokenizer(gguf)
    origin = use_marked_template(tokenizer, chat_template)
    tokenizer.save_pretrained(str(out))
    return origin


def checkpoint_from_gguf(gguf: Path, out: Path, *, chat_template: Path | None = None) -> list[str]:
    """A trainable checkpoint (plain float32 weights) plus the marked tokenizer."""
    require_train_extra(("torch", "transformers", "gguf"))
    from transformers import AutoModelForCausalLM, GgufConfig

    # dequantize=True: dense weights; otherwise transformers 5 keeps them in GGUF blocks, which it can neither train nor save
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, local_files_only=True, quantization_config=GgufConfig(dequantize=True)
    )
    model.save_pretrained(str(out))
    origin = tokenizer_from_gguf(gguf, out, chat_template=chat_template)
    return [
        f"weights dequantised from {gguf.name} (a quantised file gives a lossy checkpoint)",
        f"chat template: {origin}",
    ]
