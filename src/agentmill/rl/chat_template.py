"""Chat templates that let a trainer compute the loss on the assistant's tokens only.

Hugging Face tokenizers return an assistant mask only when the chat template wraps the
assistant's text in `{% generation %}` ... `{% endgeneration %}` (TRL's `assistant_only_loss`
needs the same). Many models' templates lack the markers; for ChatML-family models (SmolLM2,
Qwen2.5, ...) agentmill bundles a template with them (templates/chatml_generation.jinja). Any
other family needs its own marked template (`--chat-template FILE`): guessing one would silently
train the model on a prompt format it was never given.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, TypeGuard

from agentmill.errors import AgentmillError

BUNDLED = "chatml_generation.jinja"
CHATML_MARK = "<|im_start|>"


def bundled_template() -> str:
    return (resources.files("agentmill.rl") / "templates" / BUNDLED).read_text(encoding="utf-8")


def has_generation_markers(template: str | None) -> TypeGuard[str]:
    if not template:
        return False
    return "{% generation %}" in template.replace("{%-", "{%").replace("-%}", "%}")


def marked_template(tokenizer: Any, template_file: Path | None = None) -> tuple[str, str]:
    """(the template to train with, where it came from): the file given, the tokenizer's own when it
    has generation markers, else the bundled ChatML one for ChatML tokenizers. Otherwise an error."""
    if template_file is not None:
        try:
            text = Path(template_file).read_text(encoding="utf-8")
        except OSError as e:
            raise AgentmillError(f"--chat-template {template_file}: cannot read it: {e}") from None
        if not has_generation_markers(text):
            raise AgentmillError(
                f"--chat-template {template_file}: has no {{% generation %}} block around the "
                "assistant's text, so no assistant-only loss can be computed"
            )
        return text, str(template_file)
    own = getattr(tokenizer, "chat_template", None)
    if has_generation_markers(own):
        return own, "the tokenizer's own"
    if own and CHATML_MARK in own and CHATML_MARK in tokenizer.get_vocab():
        return (
            bundled_template(),
            f"agentmill's bundled ChatML template ({BUNDLED}): the model's own has no generation markers",
        )
    raise AgentmillError(
        "the tokenizer's chat template has no {% generation %} markers and is not ChatML: give a "
        "template with them (--chat-template FILE) so the loss covers only the assistant's tokens"
    )


def use_marked_template(tokenizer: Any, template_file: Path | None = None) -> str:
    """Set the marked template on the tokenizer (it is saved with the checkpoint); returns its origin."""
    text, origin = marked_template(tokenizer, template_file)
    tokenizer.chat_template = text
    return origin
