"""What a fresh terminal shows, learnt per sandbox start key (agents/base.py, SandboxStart), so a
terminus trial can ask its first turn while its sandbox still starts: the first request's only
part that needs the sandbox is that screen, and every trial of an image sees the same one.

A guess is only ever a guess. The agent compares it with its own terminal's first screen before
anything is recorded, and drops the request on any difference (agents/terminus/agent.py). A key
whose screen has differed once (a clock, a random name in the prompt) is never guessed again, and
a screen is guessed only after two trials showed it, so a start that is not repeatable costs at
most the requests in flight when it first differs, not one per trial.
The screen is read before the agent's first command, so no agent can shape another trial's guess.

AGENTMILL_ASK_AHEAD=0 turns it off (every first turn is asked once the terminal is up).
"""

from __future__ import annotations

import asyncio
import os

from agentmill.errors import AgentmillError

ASK_AHEAD_ENV = "AGENTMILL_ASK_AHEAD"


def ask_ahead_enabled() -> bool:
    raw = os.environ.get(ASK_AHEAD_ENV, "1").strip()
    if raw not in ("0", "1"):
        raise AgentmillError(f"{ASK_AHEAD_ENV}={raw!r}: expected 1 (ask the first turn while the sandbox starts) or 0")
    return raw == "1"


CONFIRMATIONS = 2  # trials that showed the same first screen before it is guessed


class FirstScreens:
    """Per process: each worker learns its own (a few hundred bytes per image)."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, int]] = {}  # key -> (its first screen, trials that showed it)
        self._unstable: set[str] = set()
        self._waiting: dict[str, list[asyncio.Future]] = {}

    def clear(self) -> None:
        """Forget every screen learnt (waiters still waiting keep waiting for their own sandbox)."""
        self._seen.clear()
        self._unstable.clear()

    def known(self, key: str) -> str | None:
        seen = self._seen.get(key)
        return seen[0] if seen is not None and seen[1] >= CONFIRMATIONS else None

    async def guess(self, key: str, ready: asyncio.Future) -> str | None:
        """The screen a fresh terminal of `key` shows: at once if known, else as soon as other
        trials confirm it. None when this trial's own sandbox is ready first, or the key is unstable."""
        if key in self._unstable or ready.done():
            return None
        if self.known(key) is not None:
            return self.known(key)
        learnt = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, []).append(learnt)
        try:
            await asyncio.wait({learnt, ready}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiters = self._waiting.get(key, [])
            if learnt in waiters:
                waiters.remove(learnt)
            if not waiters:
                self._waiting.pop(key, None)
        return learnt.result() if learnt.done() and not learnt.cancelled() else None

    def learn(self, key: str, screen: str) -> None:
        """A fresh terminal of `key` showed `screen`, before any command of the agent's. Two that
        agree make it a guess (one could be a fluke); any that differs ends guessing for the key."""
        if key in self._unstable:
            return
        seen = self._seen.get(key)
        if seen is not None and seen[0] != screen:
            del self._seen[key]
            self._unstable.add(key)
            self._wake(key, None)
            return
        count = 1 if seen is None else seen[1] + 1
        self._seen[key] = (screen, count)
        if count == CONFIRMATIONS:
            self._wake(key, screen)

    def _wake(self, key: str, screen: str | None) -> None:
        for waiter in self._waiting.pop(key, []):
            if not waiter.done():
                waiter.set_result(screen)


FIRST_SCREENS = FirstScreens()
