"""Row builders for each export format. One trace record in, one row (dict) out.

- trl: conversational `messages` + `tools`, for TRL's SFTTrainer (and any HF chat-template user).
- sharegpt: LLaMA-Factory's ShareGPT rows (`conversations` with from/value, `system`, `tools` as a
  JSON string); `dataset_info_entry` gives the matching dataset_info.json entry.
- harbor: rows as Harbor's `traces export` writes them.
- rl: prompt-only rows, one per task (verl / SkyRL style); the reward comes from the environment.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentmill import __version__
from agentmill.errors import AgentmillError
from agentmill.traces.records import TraceRecord
from agentmill.traces.render import Reasoning, Rendered, render, sent_tools

FORMATS = ("trl", "sharegpt", "harbor", "rl")


def provenance(rec: TraceRecord) -> dict[str, Any]:
    t = rec.trial
    return {
        "trial_id": rec.trial_id,
        "task": t.get("task"),
        "task_hash": t.get("task_hash"),
        "task_source": t.get("task_source"),
        "verifier_hash": t.get("verifier_hash"),
        "teacher_model": t.get("model"),
        "agent": f"{t.get('agent')}@{t.get('agent_version')}",
        "sampling": json.dumps(t.get("sampling"), sort_keys=True) if t.get("sampling") else None,
        "attempt": t.get("attempt"),
        "reward": rec.reward,
        "outcome": rec.outcome,
        "filters": list(rec.passed_filters),
        "agentmill_version": __version__,
    }


def trl_row(rec: TraceRecord, rendered: Rendered) -> dict[str, Any]:
    """`tools` is the JSON text of the tool list sent ("[]" when none): JSON schemas of different
    tools cannot share one Arrow type (Parquet and `datasets` would refuse or null-fill them), so, as
    with tool-call arguments, the text is kept; pass `json.loads(row["tools"])` to a chat template."""
    return {
        "messages": rendered.messages,
        "tools": json.dumps(rendered.tools, ensure_ascii=False),
        "provenance": provenance(rec),
    }


_SHAREGPT_ROLE = {"user": "human", "assistant": "gpt", "tool": "observation"}


def sharegpt_row(rec: TraceRecord, rendered: Rendered) -> dict[str, Any]:
    """LLaMA-Factory's layout of the same messages. A tool-call turn is a `function_call` whose value
    is an optional `<think>` block then the JSON of the call (a list for parallel calls), arguments as
    objects, which is all LLaMA-Factory's function formatter reads: text the model wrote beside its
    calls has no place there (the `trl` rows keep it). Results of parallel calls share one
    `observation`, one per line."""
    system = "\n\n".join(m["content"] for m in rendered.messages if m["role"] == "system")
    conv: list[dict[str, str]] = []
    for m in rendered.messages:
        if m["role"] == "system":
            continue
        if m["role"] == "assistant" and m.get("tool_calls"):
            conv.append({"from": "function_call", "value": function_call_value(m)})
        elif m["role"] == "tool":
            if conv and conv[-1]["from"] == "observation":  # several results answer one call turn
                conv[-1]["value"] += "\n" + m["content"]
            else:
                conv.append({"from": "observation", "value": m["content"]})
        else:
            conv.append({"from": _SHAREGPT_ROLE[m["role"]], "value": m["content"]})
    while conv and conv[-1]["from"] in ("human", "observation"):  # must end on the model's turn
        conv.pop()
    return {
        "conversations": conv,
        "system": system,
        "tools": json.dumps(rendered.tools, ensure_ascii=False) if rendered.tools else "",
        "provenance": provenance(rec),
    }


def function_call_value(message: dict[str, Any]) -> str:
    calls = [
        {"name": c["function"]["name"], "arguments": _arguments_object(c["function"]["arguments"])}
        for c in message["tool_calls"]
    ]
    content = message.get("content") or ""
    think = (
        content[: content.index("</think>") + len("</think>")]
        if content.startswith("<think>") and "</think>" in content
        else ""
    )
    return think + json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)


def _arguments_object(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text  # not JSON: kept as the model wrote it


def dataset_info_entry(name: str, file_name: str) -> dict[str, Any]:
    return {
        name: {
            "file_name": file_name,
            "formatting": "sharegpt",
            "columns": {"messages": "conversations", "system": "system", "tools": "tools"},
            "tags": {
                "role_tag": "from",
                "content_tag": "value",
                "user_tag": "human",
                "assistant_tag": "gpt",
                "observation_tag": "observation",
                "function_tag": "function_call",
                "system_tag": "system",
            },
        }
    }


def harbor_row(rec: TraceRecord, rendered: Rendered) -> dict[str, Any]:
    conversations = [
        {"role": m["role"] if m["role"] != "tool" else "user", "content": m["content"]} for m in rendered.messages
    ]
    started = rec.trajectory.steps[0].timestamp if rec.trajectory.steps else None
    return {
        "conversations": conversations,
        "agent": rec.trial.get("agent"),
        "model": rec.trial.get("model"),
        "model_provider": "openai-compatible" if rec.trial.get("model") else None,
        "date": started or datetime.now(UTC).isoformat(),
        "task": rec.trial.get("task"),
        "episode": f"episode-{rec.trial.get('attempt', 0)}",
        "run_id": rec.trial.get("task_source"),
        "trial_name": rec.trial_id,
        "result": rec.outcome,
        "reward": rec.reward,
        "provenance": provenance(rec),
    }


ROW_BUILDERS = {"trl": trl_row, "sharegpt": sharegpt_row, "harbor": harbor_row}  # one row per trace


def rl_rows(records: list[TraceRecord]) -> list[dict[str, Any]]:
    """One prompt per task; the teacher's pass rate is kept as a difficulty signal.

    Rows are portable: a task is named by its content hash (`reward_model.ground_truth` and
    `extra_info.task_hash`), never by a local path; the trainer resolves it from a dataset folder
    given at training time (agentmill.rl). The prompt is the opening the agent sends (its system
    prompt, then the task), so the policy starts where the agent's conversation starts."""
    unverified = sorted({r.trial.get("task") or r.trial["task_hash"] for r in records if r.outcome == "unverified"})
    if unverified:  # an RL reward comes from the task's verifier: these have none
        raise AgentmillError(
            f'rl export: {len(unverified)} task(s) have no verifier (task.toml: verifier kind "none"), so '
            f"no reward to train on: {', '.join(unverified[:5])}{' ...' if len(unverified) > 5 else ''}. "
            'Leave them out with the trace filter drop_outcomes = ["unverified"], or export them '
            "for SFT (trl, sharegpt) instead."
        )
    by_task: dict[str, list[TraceRecord]] = {}
    for r in records:
        if r.telemetry.is_subagent:  # a summary request inside a trial (--subagents keep) is no attempt at the task
            continue
        by_task.setdefault(r.trial["task_hash"], []).append(r)
    rows = []
    for index, (task_hash, recs) in enumerate(by_task.items()):
        t = recs[0].trial
        instruction = t.get("instruction") or next(
            (s.message for s in recs[0].trajectory.steps if s.source == "user"), ""
        )
        passed = sum(r.outcome == "passed" for r in recs)
        with_tools = next((r for r in recs if sent_tools(r.trajectory) is not None), None)
        tools = sent_tools(with_tools.trajectory) if with_tools else None
        agent = "tools" if with_tools is not None else "terminus"
        prompt = opening(with_tools or recs[0]) or default_opening(agent, instruction)
        rows.append(
            {
                "data_source": f"agentmill/{Path(t.get('task_source') or 'tasks').name}",
                "prompt": prompt,
                "ability": "agentic/tools" if tools is not None else "agentic/terminal",
                "reward_model": {"style": "environment", "ground_truth": task_hash},
                "extra_info": {
                    "index": index,
                    "task": t.get("task"),
                    "task_hash": task_hash,
                    "agent": agent,
                    "verifier_hash": t.get("verifier_hash"),
                    "teacher_pass_rate": passed / len(recs),
                    "teacher_attempts": len(recs),
                    "agentmill_version": __version__,
                    "tools": json.dumps(tools, ensure_ascii=False) if tools is not None else "",
                    "interaction_kwargs": {"name": "agentmill", "task_hash": task_hash},
                },
            }
        )
    return rows


def opening(rec: TraceRecord) -> list[dict[str, str]] | None:
    """The messages a model agent sent before its first reply (system prompt, then the task), exactly
    as sent; None when the trace has no system prompt (scripted agents: oracle, nop)."""
    head = []
    for s in rec.trajectory.steps:
        if s.source not in ("system", "user"):
            break
        head.append({"role": s.source, "content": s.message})
        if s.source == "user":
            break
    return head if head and head[0]["role"] == "system" and head[-1]["role"] == "user" else None


def default_opening(agent: str, instruction: str) -> list[dict[str, str]]:
    """The agent's opening built from its prompt, for tasks whose traces carry none (oracle runs).
    Terminal tasks: the terminus system prompt and first turn, with an empty screen."""
    if agent != "terminus":
        return [{"role": "user", "content": instruction}]
    from agentmill.agents.terminus import prompt  # at call time: traces sit below agents

    return [
        {"role": "system", "content": prompt.SYSTEM},
        {"role": "user", "content": prompt.FIRST_TURN.format(instruction=instruction.strip(), screen="")},
    ]


def build_rows(fmt: str, records: list[TraceRecord], reasoning: Reasoning) -> tuple[list[dict], int]:
    """(rows, secrets redacted)."""
    if fmt == "rl":
        return rl_rows(records), 0
    builder = ROW_BUILDERS[fmt]
    rows, redactions = [], 0
    for rec in records:
        rendered = render(rec.trajectory, reasoning=reasoning)
        redactions += rendered.redactions
        rows.append(builder(rec, rendered))
    return rows, redactions
