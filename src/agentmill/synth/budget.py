"""The run's token and cost budget (`synth.max_tokens`, `synth.max_cost_usd`): every role's requests,
this run's (the clients' running totals, ballot and diagnosis rollouts included) plus the earlier runs
of the same output folder (the store's `usage`). Once it is spent no new box starts; boxes already
running finish and are recorded, so the run stops cleanly and a rerun with a larger budget resumes."""

from __future__ import annotations

from agentmill.synth.store import SynthStore


class Budget:
    def __init__(self, settings, store: SynthStore, clients: dict):
        self.max_tokens, self.max_cost = settings.max_tokens, settings.max_cost_usd
        before = store.rows(
            "SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) AS t, "
            "COALESCE(SUM(cost_usd), 0) AS c FROM usage"
        )[0]
        self.tokens_before, self.cost_before = before["t"], before["c"]
        self.clients = clients
        self.spent: str | None = None  # why the run stopped, once it did

    def used(self) -> tuple[int, float]:
        tokens = sum(c.stats.usage.prompt_tokens + c.stats.usage.completion_tokens for c in self.clients.values())
        cost = sum(c.stats.cost_usd for c in self.clients.values())
        return self.tokens_before + tokens, self.cost_before + cost

    def exhausted(self) -> bool:
        if self.spent is None:
            tokens, cost = self.used()
            if self.max_tokens is not None and tokens >= self.max_tokens:
                self.spent = f"token budget spent: {tokens} of max_tokens {self.max_tokens}"
            elif self.max_cost is not None and cost >= self.max_cost:
                self.spent = f"cost budget spent: {cost:.4f} of max_cost_usd {self.max_cost:g} USD"
        return self.spent is not None
