"""What a fresh terminal shows, learnt per sandbox start key (agents/base.py, SandboxStart), so a
terminus trial can ask its first turn while its sandbox still starts: the first request's only
part that needs the sandbox is that screen, and every trial of an image sees the same one.

A guess is only ever a guess. The agent compares it with its own terminal's first screen before
anything is recorded, and drops the request on any difference (agents/terminus/agent.py). A key
whose screen has differed once (a clock, a random name in the prompt) is never guessed again, so
a start that is not repeatable costs at most the requests already in flight, not one per trial.
The screen is read before the agent's first command, so no agent can shape another trial's guess.
"""

from __future__ import annotations

import asyncio


class FirstScreens:
    """Per process: each worker learns its own (a few hundred bytes per image)."""

    def __init__(self):
        self._known: dict[str, str] = {}
        self._unstable: set[str] = set()
        self._waiting: dict[str, list[asyncio.Future]] = {}

    async def guess(self, key: str, ready: asyncio.Future) -> str | None:
        """The screen a fresh terminal of `key` shows: at once if known, else as soon as another
        trial learns it. None when this trial's own sandbox is ready first, or the key is unstable."""
        if key in self._unstable or ready.done():
            return None
        if key in self._known:
            return self._known[key]
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
        """A fresh terminal of `key` showed `screen`, before any command of the agent's."""
        if key in self._unstable:
            return
        known = self._known.get(key)
        if known == screen:
            return
        if known is None:
            self._known[key] = screen
        else:  # not repeatable: stop guessing for it
            del self._known[key]
            self._unstable.add(key)
        for waiter in self._waiting.pop(key, []):
            if not waiter.done():
                waiter.set_result(self._known.get(key))


FIRST_SCREENS = FirstScreens()
