"""agentmill: verified, diverse, reproducible training data for agent models."""

__version__ = "0.1.0"
