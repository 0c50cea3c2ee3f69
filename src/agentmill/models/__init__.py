"""Models: the OpenAI-compatible client, reasoning separation, and the embedded local model."""

from agentmill.models.client import (
    ChatReply,
    ContextExceededError,
    EndpointError,
    ModelClient,
    Prices,
    SamplingParams,
    ToolCallRequest,
    Usage,
)
from agentmill.models.local import LOCAL_MODEL, LocalModelServer

__all__ = [
    "LOCAL_MODEL",
    "ChatReply",
    "ContextExceededError",
    "EndpointError",
    "ToolCallRequest",
    "LocalModelServer",
    "ModelClient",
    "Prices",
    "SamplingParams",
    "Usage",
]
