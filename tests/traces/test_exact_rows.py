"""SFT rows are exactly the conversation the teacher had.

Real rollouts through the CLI against a recording chat server (a real local HTTP server), then real
exports: for every trial, the `trl` and `sharegpt` rows equal the last request the server answered
plus the final reply, message for message, character for character (reasoning per --reasoning).
The scripts include a parse error, a completion confirmation, a long truncated output, a reply
with lone surrogates and control characters, secrets in terminal output, a context overflow (the
row ends with the last answered request), and a trial that runs out of turns (its last observation
was never sent, so it is not in the row).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentmill.agents.terminus.agent import observation_text
from agentmill.tasks import sample_dataset_path
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer, Reply, terminus_json

CLI = [sys.executable, "-m", "agentmill.cli"]
AWS = "AKIAIOSFODNN7EXAMPLE"
URL_PASSWORD = "hunter22"


@dataclass
class Say:
    """One scripted reply: what goes on the wire, and what the agent must send back as its answer."""

    answer: str = ""
    reasoning: str | None = None
    inline: bool = False  # reasoning inside <think> in the content, not in reasoning_content
    wire: str | None = None  # content sent instead of the answer (dirty text); `answer` is then its clean form
    status: int = 200
    error: str | None = None

    def reply(self) -> Reply:
        if self.status != 200:
            return Reply(status=self.status, error=self.error)
        content = self.wire if self.wire is not None else self.answer
        if self.inline and self.reasoning:
            return Reply(f"<think>{self.reasoning}</think>\n{content}")
        return Reply(content, reasoning=self.reasoning)


def j(commands=(), complete=False):
    return terminus_json(list(commands), complete=complete)


# the secrets appear whole only in the terminal's output, never in the reply that printed them
SECRETS_CMD = (
    'echo "AKIA""IOSFODNN7EXAMPLE"; printf "%s://admin:%s@db/x\\n" postgres hunt""er22; printf \'\\001\\002ctl\\n\'\n'
)
SCRIPTS: dict[str, list[Say]] = {
    # parse error, reasoning in both wire forms, a completion claim with commands, then the confirmation
    "extract-email-addresses": [
        Say("I will look around first.", reasoning="Let me think."),
        Say(j([("ls /app\n", 0.2)]), reasoning="Now list the files.", inline=True),
        Say(j([("echo done\n", 0.1)], complete=True)),
        Say(j(complete=True), reasoning="All done."),
    ],
    # a long output cut to 10 KB, then secrets and control bytes in the terminal output
    "ini-to-env-file": [
        Say(j([("python3 -c \"print('A'*30000 + 'END')\"\n", 1.0)])),
        Say(j([(SECRETS_CMD, 0.3)])),
        Say(j(complete=True)),
        Say(j(complete=True)),
    ],
    # a reply with lone surrogates, control characters and escape sequences (reasoning too)
    "csv-revenue-by-region": [
        Say("oops \ufffd red", wire="oops \ud800 \x07\x1b[31mred\x1b[0m", reasoning="half \ufffd"),
        Say(j(complete=True)),
        Say(j(complete=True)),
    ],
    # the endpoint says the conversation no longer fits: the row ends with the last answered request
    "markdown-table-of-contents": [
        Say(j([("ls /app/docs\n", 0.1)]), reasoning="Look first."),
        Say(
            status=400, error="This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."
        ),
    ],
    # never finishes: runs out of turns after executing its last commands
    "top-word-frequencies": [Say(j([("true\n", 0.05)]))],
}
SURROGATE_REASONING_WIRE = "half \ud83d"  # sent as the reasoning of csv-revenue-by-region's first reply
MAX_TURNS = 4


def instruction_of(task: str) -> str:
    return (sample_dataset_path() / task / "instruction.md").read_text().strip()[:60]


def policy(request):
    first_user = request["messages"][1]["content"]
    task = next(t for t in SCRIPTS if instruction_of(t) in first_user)
    turn = sum(m["role"] == "assistant" for m in request["messages"])
    script = SCRIPTS[task]
    say = script[min(turn, len(script) - 1)]
    reply = say.reply()
    if task == "csv-revenue-by-region" and turn == 0:
        reply.reasoning = SURROGATE_REASONING_WIRE
    return reply


def agentmill(*args, timeout=600):
    r = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


@pytest.fixture(scope="module")
def rollout(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exact")
    run = tmp / "run"
    with ChatServer(policy) as server:
        tasks = [a for t in SCRIPTS for a in ("--task", t)]
        agentmill(
            "rollout",
            "--sample",
            *tasks,
            "--agent",
            "terminus",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--out",
            str(run),
            "--max-turns",
            str(MAX_TURNS),
            "--temperature",
            "0",
            "-c",
            "4",
            "--max-retries",
            "0",
        )
    return run, server.exchanges, tmp


def export(run: Path, tmp: Path, fmt: str, reasoning: str) -> list[dict]:
    out = tmp / f"{fmt}-{reasoning}.jsonl"
    agentmill(
        "export",
        str(run),
        "--format",
        fmt,
        "--out",
        str(out),
        "--reasoning",
        reasoning,
        "--min-turns",
        "0",
        "--keep-all-outcomes",
    )
    return [json.loads(line) for line in out.read_text().splitlines()]


def task_of(first_user: str) -> str:
    return next(t for t in SCRIPTS if instruction_of(t) in first_user)


def expected_messages(exchanges, first_user: str, reasoning: str) -> list[dict]:
    """The last request the server answered for this trial, plus its reply, as the row must hold it."""
    mine = [e for e in exchanges if e.request["messages"][1]["content"] == first_user]
    assert mine, "no request of this trial reached the server with this exact first user message"
    answered = [e for e in mine if e.status == 200]
    script = SCRIPTS[task_of(first_user)]
    last = answered[-1]
    messages = [dict(m) for m in last.request["messages"]]
    turns = sum(m["role"] == "assistant" for m in messages)
    messages.append({"role": "assistant", "content": script[min(turns, len(script) - 1)].answer})
    i = 0
    for m in messages:
        if m["role"] != "assistant":
            continue
        say = script[min(i, len(script) - 1)]
        # the history carries each answer as the agent sent it back: clean, without its reasoning
        assert m["content"] == say.answer, (i, m["content"][:200])
        if reasoning == "think" and say.reasoning:
            m["content"] = f"<think>\n{say.reasoning}\n</think>\n\n{m['content']}"
        i += 1
    return messages


def sharegpt_of(messages: list[dict]) -> tuple[str, list[dict]]:
    assert messages[0]["role"] == "system"
    role = {"user": "human", "assistant": "gpt"}
    return messages[0]["content"], [{"from": role[m["role"]], "value": m["content"]} for m in messages[1:]]


@sandbox
@pytest.mark.parametrize("reasoning", ["think", "drop"])
def test_rows_are_the_last_request_plus_the_final_reply(rollout, reasoning):
    run, exchanges, tmp = rollout
    trl = export(run, tmp, "trl", reasoning)
    sharegpt = export(run, tmp, "sharegpt", reasoning)
    assert sorted(r["provenance"]["task"] for r in trl) == sorted(SCRIPTS)
    for row in trl:
        expected = expected_messages(exchanges, row["messages"][1]["content"], reasoning)
        assert len(row["messages"]) == len(expected), row["provenance"]["task"]
        for got, want in zip(row["messages"], expected):
            assert got == want, (row["provenance"]["task"], got["content"][:300], want["content"][:300])
        assert row["tools"] == "[]"  # terminus sends no tools
    for row in sharegpt:
        first_user = row["conversations"][0]["value"]
        system, conv = sharegpt_of(expected_messages(exchanges, first_user, reasoning))
        assert row["system"] == system and row["conversations"] == conv, row["provenance"]["task"]


@sandbox
def test_what_the_model_was_sent(rollout):
    run, exchanges, _ = rollout
    sent = json.dumps([e.request for e in exchanges], ensure_ascii=False)
    stored = "".join(p.read_text() for p in run.glob("trials/*/trajectory.json"))
    for text in (sent, stored):
        assert AWS not in text and URL_PASSWORD not in text and "\\u0001" not in text
        assert "\ud800" not in text and "\\ud800" not in text and "\x1b" not in text and "\\u001b" not in text
        assert "[REDACTED:aws_access_key]" in text and "[REDACTED:url_password]" in text
    results = {json.loads(p.read_text())["task"]: json.loads(p.read_text()) for p in run.glob("trials/*/result.json")}
    assert results["csv-revenue-by-region"]["outcome"] != "infra_error"  # the dirty reply never broke a request
    assert results["top-word-frequencies"]["agent_metadata"]["terminus"]["max_turns_reached"]
    assert results["markdown-table-of-contents"]["outcome"] == "context_exceeded"
    assert results["markdown-table-of-contents"]["reward"] is not None  # verified all the same
    # the wrapper, the confirmation prompt and the parse-error feedback are what the model read
    users = [m["content"] for e in exchanges for m in e.request["messages"] if m["role"] == "user"]
    assert any(u.startswith("New terminal output:\n") and "characters omitted" in u and "END\n" in u for u in users)
    assert any("You marked the task as complete" in u for u in users)
    assert any(u.startswith("Your previous answer could not be used") for u in users)
    # screens shown to the model carry no trailing blank rows
    assert not any(u.endswith("\n") or u.endswith("\n ") for u in users)


def test_secrets_are_redacted_before_the_cut():
    for start in range(4950, 5000):  # some of these put the 10 KB cut inside the key
        text, redactions, truncated = observation_text("x" * start + f"\n{AWS}\n" + "y" * 20_000)
        assert truncated and redactions == 1 and "AKIA" not in text, start
    pem = (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "\n".join(["MIIEowIBAAKCAQEA7" * 4] * 20)
        + "\n-----END RSA PRIVATE KEY-----\n"
    )
    text, redactions, _ = observation_text("a" * 4900 + pem + "b" * 20_000)
    assert redactions == 1 and "MIIEow" not in text


# --- the tool-calling agent ------------------------------------------------------------------------

TOOL_TASKS = Path(__file__).parents[2] / "src" / "agentmill" / "tasks" / "sample_tools"
GH_TOKEN = "ghp_" + "a1B2c3D4" * 5


@dataclass
class TCall:
    id: str
    name: str
    args: dict | str  # on the wire (a dict is sent as its JSON text)
    sent: str | None = None  # the arguments text the agent must send back (redacted), if not the wire text

    def wire(self) -> dict:
        return {"id": self.id, "name": self.name, "arguments": self.args}

    def history(self) -> dict:
        text = self.sent or (self.args if isinstance(self.args, str) else json.dumps(self.args))
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": text}}


@dataclass
class TSay:
    answer: str = ""
    reasoning: str | None = None
    inline: bool = False
    calls: tuple = ()
    status: int = 200
    error: str | None = None

    def reply(self) -> Reply:
        if self.status != 200:
            return Reply(status=self.status, error=self.error)
        content = f"<think>{self.reasoning}</think>{self.answer}" if self.inline else self.answer
        return Reply(
            content or None,
            reasoning=None if self.inline else self.reasoning,
            tool_calls=[c.wire() for c in self.calls] or None,
        )

    def history(self) -> dict:
        message = {"role": "assistant", "content": self.answer}
        if self.calls:
            message["tool_calls"] = [c.history() for c in self.calls]
        return message


TOOL_SCRIPTS: dict[str, list[TSay]] = {
    # parallel calls beside text, an unknown tool, unparseable arguments, inline reasoning, a plain answer
    "itsm-close-duplicate-incident": [
        TSay(
            "Looking at both.",
            reasoning="Compare them.",
            calls=(
                TCall("a1", "get_incident", {"number": "INC0020026"}),
                TCall("a2", "get_incident", {"number": "INC0020025"}),
            ),
        ),
        TSay(calls=(TCall("a3", "frobnicate", {}), TCall("a4", "link_records", '{"source": "INC00'))),
        TSay(
            reasoning="Link, then resolve.",
            inline=True,
            calls=(
                TCall(
                    "a5", "link_records", {"source": "INC0020026", "target": "INC0020025", "relation": "duplicate_of"}
                ),
            ),
        ),
        TSay(
            calls=(
                TCall(
                    "a6",
                    "resolve_incident",
                    {
                        "number": "INC0020026",
                        "resolution_code": "duplicate",
                        "resolution_notes": "Duplicate of INC0020025.",
                    },
                ),
            )
        ),
        TSay("Done: INC0020026 is resolved as a duplicate of INC0020025.", reasoning="All checks out."),
    ],
    # a secret in the model's arguments and in a tool's result; then it runs out of turns
    "itsm-hold-for-vendor": [
        TSay(
            calls=(
                TCall(
                    "b1",
                    "add_work_note",
                    {"record": "INC0020005", "body": f"vendor portal token {GH_TOKEN}"},
                    sent='{"record": "INC0020005", "body": "vendor portal token [REDACTED:github_token]"}',
                ),
            )
        ),
        TSay(calls=(TCall("b2", "get_incident", {"number": "INC0020005"}),)),
    ],
    # the endpoint says the context is full on the second request
    "itsm-raise-incident-impact": [
        TSay(calls=(TCall("c1", "get_incident", {"number": "INC0020004"}),)),
        TSay(status=400, error="the request exceeds the available context size, try increasing it"),
    ],
}
TOOL_MAX_TURNS = 5


def tool_task_of(request) -> str:
    users = [m["content"] for m in request["messages"] if m["role"] == "user"]
    return next(t for t in TOOL_SCRIPTS if (TOOL_TASKS / t / "instruction.md").read_text().strip() in users)


def tool_policy(request):
    script = TOOL_SCRIPTS[tool_task_of(request)]
    turn = sum(m["role"] == "assistant" for m in request["messages"])
    return script[min(turn, len(script) - 1)].reply()


@pytest.fixture(scope="module")
def tool_rollout(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exact-tools")
    run = tmp / "run"
    with ChatServer(tool_policy) as server:
        agentmill(
            "rollout",
            str(TOOL_TASKS),
            *[a for t in TOOL_SCRIPTS for a in ("--task", t)],
            "--agent",
            "tools",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--out",
            str(run),
            "--max-turns",
            str(TOOL_MAX_TURNS),
            "--max-retries",
            "0",
            "-c",
            "3",
        )
    return run, server.exchanges, tmp


def expected_tool_messages(exchanges, task: str, reasoning: str) -> tuple[list[dict], list[dict]]:
    """(messages, tools) of the last request the server answered for this task, plus its reply."""
    answered = [e for e in exchanges if e.status == 200 and tool_task_of(e.request) == task]
    last = answered[-1]
    script = TOOL_SCRIPTS[task]
    messages = [json.loads(json.dumps(m)) for m in last.request["messages"]]
    turns = sum(m["role"] == "assistant" for m in messages)
    messages.append(script[min(turns, len(script) - 1)].history())
    i = 0
    for m in messages:
        if m["role"] != "assistant":
            continue
        say = script[min(i, len(script) - 1)]
        assert m == say.history(), (task, i, m)  # what the agent sent back: clean, redacted, no reasoning
        if reasoning == "think" and say.reasoning:
            m["content"] = f"<think>\n{say.reasoning}\n</think>\n\n{m['content']}"
        i += 1
    return messages, last.request["tools"]


def llamafactory_of(messages: list[dict]) -> tuple[str, list[dict]]:
    """LLaMA-Factory's sharegpt layout of OpenAI messages (its documented function_call/observation tags)."""
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    conv: list[dict] = []
    for m in messages[1 if system else 0 :]:
        if m["role"] == "user":
            conv.append({"from": "human", "value": m["content"]})
        elif m["role"] == "tool":
            if conv[-1]["from"] == "observation":
                conv[-1]["value"] += "\n" + m["content"]
            else:
                conv.append({"from": "observation", "value": m["content"]})
        elif m.get("tool_calls"):
            think = m["content"][: m["content"].index("</think>") + 8] if m["content"].startswith("<think>") else ""
            calls = []
            for c in m["tool_calls"]:
                try:
                    arguments = json.loads(c["function"]["arguments"])
                except ValueError:
                    arguments = c["function"]["arguments"]
                calls.append({"name": c["function"]["name"], "arguments": arguments})
            conv.append(
                {
                    "from": "function_call",
                    "value": think + json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False),
                }
            )
        else:
            conv.append({"from": "gpt", "value": m["content"]})
    return system, conv


@sandbox
@pytest.mark.parametrize("reasoning", ["think", "drop"])
def test_tool_agent_rows_are_the_last_request_plus_the_final_reply(tool_rollout, reasoning):
    run, exchanges, tmp = tool_rollout
    trl = export(run, tmp, "trl", reasoning)
    sharegpt = export(run, tmp, "sharegpt", reasoning)
    assert sorted(r["provenance"]["task"] for r in trl) == sorted(TOOL_SCRIPTS)
    for row in trl:
        messages, tools = expected_tool_messages(exchanges, row["provenance"]["task"], reasoning)
        assert json.loads(row["tools"]) == tools and len(row["messages"]) == len(messages), row["provenance"]["task"]
        for got, want in zip(row["messages"], messages):
            assert got == want, (row["provenance"]["task"], got, want)
    for row in sharegpt:
        messages, tools = expected_tool_messages(exchanges, row["provenance"]["task"], reasoning)
        system, conv = llamafactory_of(messages)
        assert (row["system"], row["conversations"]) == (system, conv), row["provenance"]["task"]
        assert json.loads(row["tools"]) == tools
    # the secret of the hold-for-vendor trial reached neither the model nor the stored trajectory
    sent = json.dumps([e.request for e in exchanges])
    stored = "".join(p.read_text() for p in run.glob("trials/*/trajectory.json"))
    assert GH_TOKEN not in sent and GH_TOKEN not in stored and "[REDACTED:github_token]" in sent
    outcomes = {
        json.loads(p.read_text())["task"]: json.loads(p.read_text())["outcome"]
        for p in run.glob("trials/*/result.json")
    }
    assert outcomes == {
        "itsm-close-duplicate-incident": "passed",
        "itsm-hold-for-vendor": "failed",
        "itsm-raise-incident-impact": "context_exceeded",
    }
