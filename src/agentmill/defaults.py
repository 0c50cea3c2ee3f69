"""One source of defaults for rollouts: the CLI's options and the recipe schema both read these.

Sampling values are part of a trial's identity, so a default that differed between `agentmill
rollout` and a recipe would make the same intent two different sets of trials.
"""

from __future__ import annotations

TEMPERATURE = 0.7
TOP_P = 1.0
MAX_TOKENS = 4096  # completion tokens per model reply
MAX_TURNS = 50  # agent turns per trial
ATTEMPTS = 1  # attempts per task
CONCURRENCY = 4  # sandboxes (trials) at once
MODEL_CONCURRENCY = 64  # model requests in flight at once
REQUEST_TIMEOUT = 600.0  # seconds per model request
MAX_RETRIES = 6  # retries per model request (429/5xx/timeouts)
PROGRESS_INTERVAL = 30.0  # seconds between plain progress lines when the console is not a terminal
