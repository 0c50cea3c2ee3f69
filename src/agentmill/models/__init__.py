"""Models: the OpenAI-compatible client, reasoning separation, and the embedded local model."""

from agentmill.models.client import ChatReply, EndpointError, ModelClient, Prices, SamplingParams, Usage
from agentmill.models.local import LOCAL_MODEL, LocalModelServer

__all__ = ["LOCAL_MODEL", "ChatReply", "EndpointError", "LocalModelServer", "ModelClient", "Prices", "SamplingParams", "Usage"]
