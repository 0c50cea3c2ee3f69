"""`terminus`: a terminal agent after Harbor's Terminus-2.

The model answers in JSON ({analysis, plan, commands: [{keystrokes, duration}], task_complete});
keystrokes go to a tmux session inside the sandbox; after each command's wait (at most 60 s) the
model sees the new output, secrets redacted, then cut to 10 KB keeping head and tail. A reply that
does not parse goes back to the model as an error (counted). `task_complete` needs one
confirmation turn. Every message is recorded exactly as sent (agents/conversation.py). With
`max_context` set, a conversation that nears it (`handoff_at` of it) is summarised and handed off to a
fresh one (handoff.py).
"""

from __future__ import annotations

import asyncio

from agentmill.agents.base import AgentResult, ModelAgentBase, SandboxStart
from agentmill.agents.conversation import Ahead, Conversation, Turn
from agentmill.agents.terminus import handoff, prompt
from agentmill.agents.terminus.first_screen import FIRST_SCREENS, ask_ahead_enabled
from agentmill.agents.terminus.parse import Reply, ReplyError, parse_reply
from agentmill.models.client import ModelClient
from agentmill.sandbox.protocol import Sandbox
from agentmill.sandbox.tmux import SPECIAL_KEYS, TmuxSession, last_line
from agentmill.tasks.model import Task
from agentmill.traces.atif import Step, ToolCall
from agentmill.traces.redact import redact, scrub
from agentmill.traces.text import clean_text, drop_trailing_blank_lines, truncate_middle

OUTPUT_LIMIT = 10_000
# A one-line command typed with duration 0 ("do not wait") is still read once its prompt is back, if
# that takes no longer than this: a quick command's output is then whole, and read at the same point
# in every run, without the settled look's quiet period (20 ms or more, every turn).
PROMPT_FLOOR = 0.05


class TerminusAgent(ModelAgentBase):
    name = "terminus"
    # 5: a conversation nearing max_context is handed off (handoff.py); 4: a one-line command with
    # duration 0 is also read when its prompt is back (PROMPT_FLOOR); 3: keystrokes sent whole (a trailing
    # ";" kept), a command's wait ends when the prompt returns; 2: messages recorded as sent
    version = "5"
    task_kinds = frozenset({"terminal"})
    rendering = "text"  # the JSON protocol lives in the reply text; observations are user turns

    def __init__(
        self,
        client: ModelClient,
        *,
        max_turns: int = 50,
        max_context: int | None = None,
        constrained: bool = True,
        handoff_at: float | None = 0.8,
    ):
        super().__init__(client, max_turns=max_turns, max_context=max_context)
        self.constrained = constrained
        if handoff_at is not None and not 0 < handoff_at <= 1:
            raise ValueError(f"handoff_at must be a fraction of max_context in (0, 1], got {handoff_at}")
        self.handoff_at = handoff_at  # None: never hand off (the trial ends context_exceeded instead)
        # not part of the identity: a first turn asked ahead is kept only if it is the one asked after
        self.asks_ahead = ask_ahead_enabled() and getattr(client, "independent_requests", False)

    def identity(self) -> dict:
        ident = super().identity()
        if self.max_context is not None:  # handoffs happen only under a known context
            ident["handoff_at"] = self.handoff_at
        return ident

    async def run(self, task: Task, sandbox: Sandbox, result: AgentResult) -> None:
        await self._work(task, sandbox, None, result)

    async def run_early(self, task: Task, sandbox: Sandbox, start: SandboxStart, result: AgentResult) -> None:
        """The same work, begun while the sandbox starts: the first turn is asked meanwhile when the
        terminal's first screen can be guessed (first_screen.py), and kept only if it was right."""
        await self._work(task, sandbox, start, result)

    async def _work(self, task: Task, sandbox: Sandbox, start: SandboxStart | None, result: AgentResult) -> None:
        stats = result.metadata.setdefault(
            "terminus", {"parse_errors": 0, "turns": 0, "commands": 0, "truncated_observations": 0, "completed": False}
        )
        chat = Conversation(self.client, result, stats, max_context=self.max_context)
        chat.say("system", prompt.SYSTEM)
        schema = prompt.REPLY_SCHEMA if self.constrained else None
        ahead = await self._ask_ahead(task, chat, start, schema)
        try:
            if start is not None:
                await start.wait()
            term = TmuxSession(sandbox, cwd=getattr(getattr(sandbox, "spec", None), "workdir", None))
            await term.start()
            history = await term.history_text()
            screen = await _screen(term)
        except BaseException:  # no sandbox, no terminal, or cancelled: the early request is nobody's
            if ahead is not None:
                ahead.drop()
            raise
        if start is not None:
            FIRST_SCREENS.learn(start.key, screen)
        first = await _first_turn(chat, _first_message(task, screen), ahead, stats)
        pending_confirmation = False
        segment = 0  # where the current conversation's steps begin
        for _turn in range(self.max_turns):
            # at most one handoff per turn: a fresh conversation that is still too long ends the trial
            if first is None and len(chat.result.steps) > segment + 2 and handoff.due(chat, self.handoff_at):
                segment = await handoff.hand_off(chat, segment, task.instruction.strip(), await _screen(term), stats)
                pending_confirmation = False
            turn, first = first or await chat.ask(json_schema=schema), None
            step = turn.step
            stats["turns"] += 1
            try:
                # the commands run as the model wrote them (cleaned only); the history holds them redacted
                parsed = parse_reply(clean_text(turn.reply.content))
            except ReplyError as e:
                stats["parse_errors"] += 1
                step.extra = {"parse_error": str(e)}
                chat.tell(step, prompt.PARSE_ERROR.format(error=e))
                continue
            if parsed.warnings:
                step.extra = {"warnings": parsed.warnings}
            if parsed.task_complete and not parsed.commands and pending_confirmation:
                stats["completed"] = True
                return
            output, history = await self._execute(term, parsed, step, history, stats)
            last_call = step.tool_calls[-1].tool_call_id if step.tool_calls else None
            if parsed.task_complete:
                if pending_confirmation:
                    stats["completed"] = True
                    return
                pending_confirmation = True
                chat.tell(step, prompt.CONFIRM.format(screen=await _screen(term)), call_id=last_call)
            else:
                pending_confirmation = False
                chat.tell(step, prompt.OBSERVATION.format(output=output), call_id=last_call)
        stats["max_turns_reached"] = True

    async def _ask_ahead(
        self, task: Task, chat: Conversation, start: SandboxStart | None, schema: dict | None
    ) -> Ahead | None:
        """The first turn, sent with the guessed screen while the sandbox starts; None when there is
        no guess, or the client's answers depend on earlier requests (a policy being trained)."""
        if start is None or not self.asks_ahead:
            return None
        guess = await FIRST_SCREENS.guess(start.key, start.ready)
        return None if guess is None else chat.ask_ahead("user", _first_message(task, guess), json_schema=schema)

    async def _execute(self, term: TmuxSession, reply: Reply, step: Step, history: str, stats: dict) -> tuple[str, str]:
        """Type the commands, wait, and return (what the model should see, the new scrollback)."""
        calls = []
        screen: str | None = history  # the scrollback as it is now, while known without another look
        for i, cmd in enumerate(reply.commands):
            keys = cmd.keystrokes
            # the trajectory's record of the call is redacted like everything stored
            calls.append(
                ToolCall(
                    tool_call_id=f"call_{step.step_id}_{i + 1}",
                    function_name="terminal",
                    arguments={"keystrokes": redact(keys)[0], "duration": cmd.duration},
                )
            )
            await term.send_keys([keys] if keys in SPECIAL_KEYS else keys)
            if screen is not None and keys.endswith("\n") and keys.count("\n") == 1:
                # the duration is an upper bound: a one-line command is done when its prompt is back
                screen = await term.wait_for_prompt(last_line(screen), screen, max(cmd.duration, PROMPT_FLOOR))
            else:
                await asyncio.sleep(cmd.duration)
                screen = None
            stats["commands"] += 1
        # a fresh look waits until the screen stops changing: typed keys echo, and completions
        # print, after send-keys returns, and half of them would differ from run to run
        new_history = screen if reply.commands and screen is not None else await term.settled_history()
        output = _new_output(history, new_history) if reply.commands else await term.screen()
        output, redactions, truncated = observation_text(output)
        stats["redactions"] = stats.get("redactions", 0) + redactions
        stats["truncated_observations"] += truncated
        if calls:
            step.tool_calls = calls
        return output, new_history


def observation_text(output: str, limit: int = OUTPUT_LIMIT) -> tuple[str, int, bool]:
    """Terminal output as the model may see it: (text, secrets redacted, whether it was cut).
    Redaction comes before the cut, so a key that straddles the cut is still caught whole."""
    output, redactions = redact(drop_trailing_blank_lines(clean_text(output)))
    return truncate_middle(output, limit), redactions, len(output) > limit


def _first_message(task: Task, screen: str) -> str:
    return prompt.FIRST_TURN.format(instruction=task.instruction.strip(), screen=screen)


async def _first_turn(chat: Conversation, message: str, ahead: Ahead | None, stats: dict) -> Turn | None:
    """The first turn asked ahead, if its message is the one the terminal gives (recorded then as
    if asked now); else the message said, for the loop to ask, and the early request dropped."""
    stats["first_turn_ahead"] = "not asked"  # always present: run diffs mask it as scheduling luck
    if ahead is not None:
        hit = scrub(message)[0] == ahead.text
        stats["first_turn_ahead"] = "hit" if hit else "miss"
        if hit:
            return await ahead.commit()
        ahead.drop()
    chat.say("user", message)
    return None


async def _screen(term: TmuxSession) -> str:
    return drop_trailing_blank_lines(clean_text(await term.screen()))


def _new_output(before: str, after: str) -> str:
    """What appeared since the last look: the suffix when the scrollback only grew, else the screen."""
    before, after = before.rstrip("\n"), after.rstrip("\n")
    if before and after.startswith(before):
        tail = after[len(before) :]
        # keep the prompt line the new output continues, so the model sees the command it typed
        last_line = before.rsplit("\n", 1)[-1]
        return (last_line + tail).strip("\n")
    return after[-OUTPUT_LIMIT * 2 :]
