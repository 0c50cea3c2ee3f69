"""Context handoff: when the next request nears `max_context`, the model summarises its work so far
(a separate request, recorded as a subagent) and goes on in a fresh conversation: the system prompt,
then one user message with the task, the summary and the current screen. Terminus-2's idea.

How the trajectory records it, and how rows render across it: traces/handoff.py.
"""

from __future__ import annotations

from agentmill.agents.base import AgentResult
from agentmill.agents.conversation import Conversation
from agentmill.agents.terminus import prompt
from agentmill.traces.handoff import HANDOFF, handoff_of

SUMMARY_REQUEST = """Stop working on the task for now: this conversation is about to exceed your context
window, and you will continue in a fresh one that sees only the task, what you write now, and the
terminal screen. Answer in plain text, not JSON, with a summary of your work so far:
1. what you have done, command by command where it matters, and what each showed;
2. what you found out: files, their locations and contents, versions, errors and their causes;
3. what is still left to do, and your next step.
Be specific: the fresh conversation has nothing else to go on."""

HANDOFF_TURN = """Task:
{instruction}

You worked on this task in an earlier conversation that grew too long for your context. Your summary of it:
{summary}

Current terminal screen:
{screen}"""


def due(chat: Conversation, at: float | None) -> bool:
    """Whether the next request would pass `at` (a fraction) of max_context."""
    return at is not None and chat.max_context is not None and chat.needed_tokens() > at * chat.max_context


async def hand_off(chat: Conversation, start: int, instruction: str, screen: str, stats: dict) -> int:
    """Summarise the conversation whose steps begin at `start` in `chat.result.steps`, then restart
    `chat` with the summary. Returns where the new conversation's steps begin. The summarisation
    request must fit max_context (else ContextExceededError, as for any request)."""
    tokens = chat.needed_tokens()
    sub_result = AgentResult(steps=[_copy(step) for step in chat.result.steps[start:]])
    for i, step in enumerate(sub_result.steps, 1):
        step.step_id = i
    sub_stats: dict = {"redactions": 0}
    sub = chat.fork(sub_result, sub_stats)
    sub.say("user", SUMMARY_REQUEST)
    turn = await sub.ask()
    n = stats.get("handoffs", 0) + 1
    stats["handoffs"] = n
    stats["redactions"] = stats.get("redactions", 0) + sub_stats["redactions"]
    usage = turn.reply.usage
    stats["summary_tokens"] = stats.get("summary_tokens", 0) + usage.prompt_tokens + usage.completion_tokens
    chat.restart()
    begin = len(chat.result.steps)
    chat.say(
        "system",
        prompt.SYSTEM,
        extra={
            HANDOFF: {
                "handoff": n,
                "tokens_before": tokens,
                "subagent": {"steps": [s.model_dump(mode="json", exclude_none=True) for s in sub_result.steps]},
            }
        },
    )
    chat.say("user", HANDOFF_TURN.format(instruction=instruction, summary=turn.step.message, screen=screen))
    return begin


def _copy(step):
    """A step as the subagent's record of it: an earlier handoff's own subagent is not nested again."""
    copy = step.model_copy(deep=True)
    if handoff_of(copy) is not None:
        extra = {k: v for k, v in copy.extra.items() if k != HANDOFF}
        copy.extra = extra or None
    return copy
