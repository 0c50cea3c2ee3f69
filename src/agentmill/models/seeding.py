"""Per-request sampling seeds: a run with a seed samples the same answers when run again.

One seed for every request would make every attempt of a task the same conversation (pass@k of
one sample). So a request's seed is derived from the run's seed and where the request stands: in a
trial, the trial's identity (which holds the task, the attempt index and the settings) and the
request's number in that trial; outside trials, the request's content. Reruns send the same seeds;
attempts differ. Endpoints that honour `seed` (llama.cpp, vLLM, OpenAI's best effort) then repeat
their answers.
"""

from __future__ import annotations

import hashlib
from typing import Any


def derived_seed(base: int, *parts: object) -> int:
    """A 31-bit seed from the run's seed and a position (positive: some servers reject larger ones)."""
    digest = hashlib.sha256(":".join(map(str, (base, *parts))).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class TrialSeeds:
    """A model client seen from one trial: request k is sent with seed derived(run seed, trial, k).
    Everything else (pools, stats, model name, sampling) is the shared client's."""

    def __init__(self, client: Any, trial_id: str):
        self._client = client
        self._trial = trial_id
        self._requests = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def chat(self, messages: list[dict[str, Any]], **kwargs: Any):
        self._requests += 1
        seed = derived_seed(self._client.sampling.seed, self._trial, self._requests)
        return await self._client.chat(messages, seed=seed, **kwargs)

    def take_back(self) -> None:
        """The request just sent was dropped unseen (a first turn asked ahead on a wrong guess,
        agents/conversation.py): the request that replaces it gets its number, and so its seed."""
        self._requests -= 1


def per_trial(client: Any, trial_id: str) -> Any:
    """The client a trial's agent gets: seeded per request when the run has a seed, else as it is."""
    if client is None or getattr(getattr(client, "sampling", None), "seed", None) is None:
        return client
    return TrialSeeds(client, trial_id)
