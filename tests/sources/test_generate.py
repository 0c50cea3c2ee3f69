"""`generate`: a scripted teacher (a real local HTTP chat server) writes whole tasks; only the ones that
build, whose oracle passes and nop fails, and that are not near-duplicates are admitted; each bad
one is rejected with its reason."""

import json

import pytest

from agentmill.errors import AgentmillError
from agentmill.rollout.check import check_tasks
from agentmill.sources.generate import generate, parse_reply, similarity
from agentmill.tasks import load_dataset
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer, Reply

REWARD_IF = (
    "#!/bin/bash\nif {cond}; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
)
DEBIAN = "FROM debian:bookworm-slim\nWORKDIR /app\n"


def task(name, instruction, test_cond, solution, dockerfile=DEBIAN):
    return json.dumps(
        {
            "name": name,
            "instruction": instruction,
            "dockerfile": dockerfile,
            "tests": {"test.sh": REWARD_IF.format(cond=test_cond)},
            "solution": "#!/bin/bash\n" + solution,
        }
    )


GREETING = "Create the file /app/greeting.txt whose only line is the text hello world, in lower case."
TASKS = {
    "greeting": task(
        "greeting-file",
        GREETING,
        "grep -qx 'hello world' /app/greeting.txt",
        "echo 'hello world' > /app/greeting.txt\n",
    ),
    "line count": task(
        "count-lines",
        "Write the number of lines of /app/data.txt into /app/count.txt.",
        "grep -qx 3 /app/count.txt",
        "wc -l < /app/data.txt > /app/count.txt\n",
        dockerfile=DEBIAN + "RUN printf 'a\\nb\\nc\\n' > /app/data.txt\n",
    ),
    "greeting again": task(
        "greeting-two",
        GREETING.replace("only line", "single line"),
        "grep -qx 'hello world' /app/greeting.txt",
        "echo 'hello world' > /app/greeting.txt\n",
    ),
    "broken build": task(
        "no-build",
        "Print the date into /app/date.txt.",
        "test -s /app/date.txt",
        "date > /app/date.txt\n",
        dockerfile=DEBIAN + "RUN exit 3\n",
    ),
    "vacuous": task("vacuous", "Make a folder /app/out.", "true", "mkdir -p /app/out\n"),
    "wrong solution": task(
        "wrong", "Write 42 into /app/answer.txt.", "grep -qx 42 /app/answer.txt", "echo 41 > /app/answer.txt\n"
    ),
    "chatty": "Sure! Here is a great task about shells, I hope you like it.",
}


def teacher(request):
    topic = request["messages"][1]["content"].split("\n")[0].removeprefix("Topic: ")
    return Reply(content=TASKS[topic])


@sandbox
def test_only_tasks_that_build_pass_and_fail_right_and_are_new_are_admitted(tmp_path, builder):
    with ChatServer(teacher) as server:
        report = generate(list(TASKS), tmp_path / "out", base_url=server.base_url, model="teacher", builder=builder)
    # what crossed the wire: one request per topic, each with the task-writing system prompt and its topic
    assert sorted(r["messages"][1]["content"].split("\n")[0] for r in server.requests) == sorted(
        f"Topic: {t}" for t in TASKS
    )
    assert all("one self-contained terminal task" in r["messages"][0]["content"] for r in server.requests)

    assert [k.rsplit("-", 1)[0] for k in sorted(report.kept)] == ["count-lines", "greeting-file"]
    reasons = {d.name.rsplit("-", 1)[0] if d.reason != "bad_reply" else "chatty": d.reason for d in report.dropped}
    assert reasons == {
        "greeting-two": "duplicate",
        "no-build": "does_not_build",
        "vacuous": "vacuous_test",
        "wrong": "wrong_solution",
        "chatty": "bad_reply",
    }
    assert report.reasons == {
        "duplicate": 1,
        "does_not_build": 1,
        "vacuous_test": 1,
        "wrong_solution": 1,
        "bad_reply": 1,
    }
    dup = next(d for d in report.dropped if d.reason == "duplicate")
    assert "greeting-file" in dup.detail

    ds = load_dataset(tmp_path / "out" / "tasks")  # ordinary task folders that check again from scratch
    results = __import__("asyncio").run(check_tasks(ds.tasks, builder=builder))
    assert sorted(r.verdict for r in results) == ["ok", "ok"]


def test_replies_are_parsed_strictly():
    good = json.loads(TASKS["greeting"])
    assert parse_reply("Here it is:\n" + TASKS["greeting"] + "\nthanks")["name"] == "greeting-file"
    for broken, why in [
        ({**good, "tests": {"run.sh": "x"}}, "no test.sh"),
        ({**good, "instruction": ""}, "'instruction'"),
        ({**good, "tests": {"../escape.sh": "x", "test.sh": "y"}}, "bad file"),
    ]:
        with pytest.raises(ValueError, match=why):
            parse_reply(json.dumps(broken))
    assert similarity(GREETING, GREETING.replace("only line", "single line")) >= 0.6
    assert similarity(GREETING, "Write 42 into /app/answer.txt.") < 0.1


def test_no_topics_is_one_clear_error(tmp_path):
    with pytest.raises(AgentmillError, match="no seed topics"):
        generate([], tmp_path / "o", base_url="http://127.0.0.1:9/v1", model="m")


@sandbox
def test_the_cli_and_a_recipe_source_use_the_same_teacher(tmp_path, monkeypatch, declared_source_kinds):
    import subprocess
    import sys

    from agentmill.recipe.schema import load_recipe
    from agentmill.recipe.stages.sources import load_sources
    from tests.conftest import scratch_cache

    topics = tmp_path / "topics.txt"
    topics.write_text("# seeds\ngreeting\nwrong solution\n")
    with ChatServer(teacher) as server:
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "agentmill.cli",
                "sources",
                "generate",
                "--topics",
                str(topics),
                "--out",
                str(tmp_path / "cli"),
                "--model",
                "teacher",
                "--base-url",
                server.base_url,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr
        assert "1 tasks kept of 2 candidates" in r.stdout and "wrong_solution 1" in r.stdout

        monkeypatch.setenv("AGENTMILL_CACHE", str(scratch_cache(tmp_path)))
        recipe = tmp_path / "r.toml"
        recipe.write_text(
            '[[sources]]\nname = "gen"\nkind = "generate"\npath = "topics.txt"\n'
            f'params = {{ model = {{ name = "teacher", base_url = "{server.base_url}" }} }}\n'
        )
        tasks, _ = load_sources(load_recipe(recipe)[0])
    assert [t.name.rsplit("-", 1)[0] for t in tasks] == ["gen/greeting-file"]


def test_a_dead_teacher_is_one_clear_error_before_any_work(tmp_path):
    import socket
    import subprocess
    import sys

    with socket.socket() as s:  # a port nobody listens on once this closes
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    out = tmp_path / "out"
    r = subprocess.run(
        [sys.executable, "-m", "agentmill.cli", "sources", "generate", "--topic", "jq", "--model", "t",
         "--base-url", dead, "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2 and "preflight: teacher endpoint" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()
