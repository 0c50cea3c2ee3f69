"""`terminus`: a terminal agent after Harbor's Terminus-2.

The model answers in JSON ({analysis, plan, commands: [{keystrokes, duration}], task_complete});
keystrokes go to a tmux session inside the sandbox; after each command's wait (at most 60 s) the
model sees the new output, cut to 10 KB keeping head and tail. A reply that does not parse goes back
to the model as an error (counted). `task_complete` needs one confirmation turn.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agentmill.agents.base import AgentResult
from agentmill.agents.terminus import prompt
from agentmill.agents.terminus.parse import Reply, ReplyError, parse_reply
from agentmill.models.client import ChatReply, EndpointError, ModelClient
from agentmill.sandbox.protocol import Sandbox
from agentmill.sandbox.tmux import SPECIAL_KEYS, TmuxSession
from agentmill.tasks.model import Task
from agentmill.traces.atif import Metrics, Observation, ObservationResult, Step, ToolCall
from agentmill.traces.text import clean_text, truncate_middle

OUTPUT_LIMIT = 10_000


class TerminusAgent:
    name = "terminus"
    version = "1"
    needs_solution = False
    needs_model = True
    task_kinds = frozenset({"terminal"})
    rendering = "text"  # the JSON protocol lives in the reply text; observations are user turns

    def __init__(self, client: ModelClient, *, max_turns: int = 50, constrained: bool = True):
        self.client = client
        self.max_turns = max_turns
        self.constrained = constrained

    @property
    def model_name(self) -> str:
        return self.client.model

    def identity(self) -> dict[str, Any]:
        return {"agent": self.name, "agent_version": self.version, "max_turns": self.max_turns,
                "model": self.client.model, "sampling": self.client.sampling.model_dump()}

    async def run(self, task: Task, sandbox: Sandbox, result: AgentResult) -> None:
        term = TmuxSession(sandbox, cwd=getattr(getattr(sandbox, "spec", None), "workdir", None))
        await term.start()
        stats = result.metadata.setdefault("terminus", {"parse_errors": 0, "turns": 0, "commands": 0,
                                                         "truncated_observations": 0, "completed": False})
        history = await term.history_text()
        first = prompt.FIRST_TURN.format(instruction=task.instruction.strip(), screen=clean_text(await term.screen()))
        messages: list[dict[str, Any]] = [{"role": "system", "content": prompt.SYSTEM}, {"role": "user", "content": first}]
        result.steps.append(Step(step_id=result.next_id(), source="system", message=prompt.SYSTEM))
        result.steps.append(Step(step_id=result.next_id(), source="user", message=first))
        pending_confirmation = False
        for _turn in range(self.max_turns):
            reply = await self._ask(messages)
            stats["turns"] += 1
            step = Step(step_id=result.next_id(), source="agent", model_name=self.client.model,
                        message=clean_text(reply.content), reasoning_content=clean_text(reply.reasoning) or None,
                        metrics=Metrics(prompt_tokens=reply.usage.prompt_tokens, completion_tokens=reply.usage.completion_tokens,
                                        cached_tokens=reply.usage.cached_tokens or None, cost_usd=reply.cost_usd,
                                        extra={"latency_s": round(reply.latency, 3), "attempts": reply.attempts,
                                               "finish_reason": reply.finish_reason}))
            result.steps.append(step)
            messages.append({"role": "assistant", "content": reply.content})
            try:
                parsed = parse_reply(reply.content)
            except ReplyError as e:
                stats["parse_errors"] += 1
                step.extra = {"parse_error": str(e)}
                feedback = prompt.PARSE_ERROR.format(error=e)
                step.observation = Observation(results=[ObservationResult(content=feedback)])
                messages.append({"role": "user", "content": feedback})
                continue
            if parsed.warnings:
                step.extra = {"warnings": parsed.warnings}
            if parsed.task_complete and not parsed.commands and pending_confirmation:
                stats["completed"] = True
                return
            output, history = await self._execute(term, parsed, step, history, stats)
            if parsed.task_complete:
                if pending_confirmation:
                    stats["completed"] = True
                    return
                pending_confirmation = True
                feedback = prompt.CONFIRM.format(screen=clean_text(await term.screen()))
            else:
                pending_confirmation = False
                feedback = prompt.OBSERVATION.format(output=output)
            if step.observation is None:
                step.observation = Observation(results=[ObservationResult(content=feedback)])
            messages.append({"role": "user", "content": feedback})
        result.metadata["terminus"]["max_turns_reached"] = True

    async def _ask(self, messages: list[dict[str, Any]]) -> ChatReply:
        schema = prompt.REPLY_SCHEMA if self.constrained else None
        return await self.client.chat(messages, json_schema=schema)

    async def _execute(self, term: TmuxSession, reply: Reply, step: Step, history: str, stats: dict) -> tuple[str, str]:
        calls, results = [], []
        for i, cmd in enumerate(reply.commands):
            call_id = f"call_{step.step_id}_{i + 1}"
            calls.append(ToolCall(tool_call_id=call_id, function_name="terminal",
                                  arguments={"keystrokes": cmd.keystrokes, "duration": cmd.duration}))
            keys = cmd.keystrokes
            await term.send_keys([keys] if keys in SPECIAL_KEYS else keys)
            await asyncio.sleep(cmd.duration)
            stats["commands"] += 1
        new_history = await term.history_text()
        output = _new_output(history, new_history) if reply.commands else clean_text(await term.screen())
        output = clean_text(output)
        if len(output) > OUTPUT_LIMIT:
            stats["truncated_observations"] += 1
        output = truncate_middle(output, OUTPUT_LIMIT)
        if calls:
            step.tool_calls = calls
            results = [ObservationResult(source_call_id=calls[-1].tool_call_id, content=output)]
            step.observation = Observation(results=results)
        return output, new_history


def _new_output(before: str, after: str) -> str:
    """What appeared since the last look: the suffix when the scrollback only grew, else the screen."""
    before, after = before.rstrip("\n"), after.rstrip("\n")
    if before and after.startswith(before):
        tail = after[len(before):]
        # keep the prompt line the new output continues, so the model sees the command it typed
        last_line = before.rsplit("\n", 1)[-1]
        return (last_line + tail).strip("\n")
    return after[-OUTPUT_LIMIT * 2:]
