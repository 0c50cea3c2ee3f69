"""Task filters (recipe stage 4) against a real local chat server, real task folders and the real sandbox."""

import asyncio
import json
import random
import re
import threading
import time

import pytest

from agentmill.errors import AgentmillError
from agentmill.images import ImageBuilder
from agentmill.models.client import ModelClient
from agentmill.recipe.llm_cache import CachedModel
from agentmill.recipe.records import TaskEntry
from agentmill.recipe.stages.task_filters import TASK_FILTERS, FilterContext
from agentmill.recipe.stages.task_filters.askllm import parse_score
from agentmill.tasks import load_task, write_task
from tests.conftest import REWARD_IF, sandbox, scratch_cache, simple_task
from tests.helpers.chat_server import ChatServer, Reply

TEST_SH = REWARD_IF.format(cond="test -f /app/done")


def entry(path, source="s") -> TaskEntry:
    task = load_task(path)
    return TaskEntry(
        name=task.name, path=str(task.path), source=source, content_hash=task.content_hash, instruction=task.instruction
    )


def make_tasks(root, instructions: dict[str, str], **kw) -> list[TaskEntry]:
    return [
        entry(
            write_task(
                root / name,
                instruction=text,
                test_sh=kw.get("test_sh", TEST_SH),
                environment_files=kw.get("files", {}).get(name),
            )
        )
        for name, text in instructions.items()
    ]


def run(kind, tasks, params, ctx):
    return asyncio.run(TASK_FILTERS[kind](tasks, params, ctx))


def by_tag(replies: dict[str, str]):
    """Reply to a prompt by the [tag] in the task's instruction; count the requests per tag."""
    seen: dict[str, int] = {}

    def policy(request):
        text = request["messages"][-1]["content"]
        tag = re.search(r"\[(\w+)\]", text).group(1)
        seen[tag] = seen.get(tag, 0) + 1
        return Reply(replies[tag])

    return policy, seen


def with_model(server, db, fn, **ctx_kw):
    """Run `fn(ctx)` (a coroutine function) with a CachedModel on `server` caching into `db`."""

    async def go():
        client = ModelClient(base_url=server.base_url, model="ref", max_retries=0)
        model = CachedModel(client, db)
        try:
            return await fn(FilterContext(model=model, workdir=db.parent, **ctx_kw))
        finally:
            model.close()
            await client.close()

    return asyncio.run(go())


# --- response_length ------------------------------------------------------------------------------

LENGTHS = {"a": 30, "b": 10, "c": 50, "d": 10, "e": 0}


@pytest.fixture
def length_tasks(tmp_path):
    return make_tasks(tmp_path / "ds", {k: f"Task [{k}]: do the thing number {k}." for k in LENGTHS})


def test_response_length_longest_shortest_weights_and_cache(tmp_path, length_tasks):
    policy, seen = by_tag({k: " ".join(["word"] * n) for k, n in LENGTHS.items()})
    db = tmp_path / "cache" / "answers.db"
    f = TASK_FILTERS["response_length"]
    with ChatServer(policy) as srv:
        kept, rep = with_model(srv, db, lambda ctx: f(length_tasks, {"keep": "longest", "k": 2}, ctx))
        assert [t.name for t in kept] == ["a", "c"]  # input order, not length order
        assert [t.scores["response_length"] for t in kept] == [30.0, 50.0]
        assert (rep.stage, rep.kind, rep.count_in, rep.count_out) == ("response_length", "task_filter", 5, 2)
        assert sorted(d.name for d in rep.dropped) == ["b", "d", "e"]
        assert "response length 10 words" in next(d.reason for d in rep.dropped if d.name == "b")
        assert not any("token" in d.reason for d in rep.dropped)  # it counts words: it must not say tokens
        assert len(srv.requests) == 5 and set(seen.values()) == {1}
        assert any("Task:\n\nTask [a]: do the thing number a." in r["messages"][-1]["content"] for r in srv.requests)

        # a second run, in a fresh process-like model over the same cache, asks the server nothing
        kept, rep = with_model(srv, db, lambda ctx: f(length_tasks, {"keep": "shortest", "k": 2}, ctx))
        assert [t.name for t in kept] == ["b", "e"]  # e (0), then b and d tie at 10: b by name
        kept1, _ = with_model(srv, db, lambda ctx: f(length_tasks, {"keep": "shortest", "k": 1}, ctx))
        assert [t.name for t in kept1] == ["e"]
        kept, rep = with_model(srv, db, lambda ctx: f(length_tasks, {"keep": "weights"}, ctx))
        assert len(srv.requests) == 5

    assert [t.name for t in kept] == list(LENGTHS) and rep.count_out == 5 and not rep.dropped
    weights = {t.name: t.weight for t in kept}
    assert sum(weights.values()) / 5 == pytest.approx(1.0)
    assert min(weights.values()) > 0
    assert weights["c"] / weights["a"] == pytest.approx(50 / 30) and weights["b"] == pytest.approx(weights["d"])
    assert weights["e"] < weights["b"]
    # inputs untouched
    assert all(t.weight == 1.0 and t.scores == {} for t in length_tasks)


def test_response_length_ties_by_name_and_prompt_override(tmp_path, length_tasks):
    policy, _ = by_tag({k: " ".join(["word"] * n) for k, n in LENGTHS.items()})
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "response_length.md").write_text("CUSTOM PROMPT\n{instruction}\n")
    tied = [t for t in length_tasks if t.name in ("d", "b")]  # both answer 10 tokens; input order d, b
    tied = tied[::-1]
    with ChatServer(policy) as srv:
        kept, rep = with_model(
            srv,
            tmp_path / "c.db",
            lambda ctx: TASK_FILTERS["response_length"](tied, {"keep": "longest", "k": 1}, ctx),
            prompts_dir=prompts,
        )
        assert srv.requests[0]["messages"][-1]["content"].startswith("CUSTOM PROMPT\nTask [")
    assert [t.name for t in kept] == ["b"] and [d.name for d in rep.dropped] == ["d"]
    (prompts / "askllm.md").write_text("Rate this task.\n")
    with ChatServer(policy) as srv, pytest.raises(AgentmillError, match="lacks the {instruction} placeholder"):
        with_model(srv, tmp_path / "c.db", lambda ctx: TASK_FILTERS["askllm"](tied, {"k": 1}, ctx), prompts_dir=prompts)


def test_model_calls_are_bounded_by_concurrency(tmp_path, length_tasks):
    lock, state = threading.Lock(), {"now": 0, "max": 0}

    def policy(request):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.2)
        with lock:
            state["now"] -= 1
        return Reply("a few words")

    with ChatServer(policy) as srv:
        kept, _ = with_model(
            srv,
            tmp_path / "c.db",
            lambda ctx: TASK_FILTERS["response_length"](length_tasks, {"keep": "weights"}, ctx),
            concurrency=2,
        )
    assert state["max"] == 2 and len(kept) == 5


@pytest.mark.parametrize(
    "params,key",
    [
        ({"keep": "longest"}, "k"),
        ({"keep": "weights", "k": 3}, "k"),
        ({"keep": "biggest", "k": 3}, "keep"),
        ({"keep": "longest", "k": 0}, "k"),
        ({"keep": "longest", "k": 2, "temperature": 1}, "temperature"),
    ],
)
def test_response_length_bad_params_name_the_key(tmp_path, params, key):
    ctx = FilterContext(workdir=tmp_path)
    with pytest.raises(AgentmillError, match=f"task filter 'response_length': param '{key}'"):
        run("response_length", [], params, ctx)


def test_model_filters_need_a_model(tmp_path, length_tasks):
    with pytest.raises(AgentmillError, match="needs a model"):
        run("response_length", length_tasks, {"keep": "weights"}, FilterContext(workdir=tmp_path))
    with pytest.raises(AgentmillError, match="needs a model"):
        run("askllm", length_tasks, {"k": 1}, FilterContext(workdir=tmp_path))


# --- askllm ----------------------------------------------------------------------------------------

ASK_REPLIES = {
    "a": json.dumps({"score": 90, "reason": "multi-step and checkable"}),
    "b": "I would rate this task 40 out of 100.",
    "c": "This task is hard to judge.",
    "d": '```json\n{"score": 90, "reason": "tie with a"}\n```',
    "e": json.dumps({"score": 12, "reason": "trivial"}),
}


def test_askllm_top_k_with_unparseable_reply(tmp_path):
    tasks = make_tasks(tmp_path / "ds", {k: f"Task [{k}]: configure service {k}." for k in ASK_REPLIES})
    policy, _ = by_tag(ASK_REPLIES)
    f = TASK_FILTERS["askllm"]
    db = tmp_path / "c.db"
    with ChatServer(policy) as srv:
        kept, rep = with_model(srv, db, lambda ctx: f(tasks, {"k": 3}, ctx))
        body = srv.requests[0]
        assert body["response_format"]["type"] == "json_schema"
        assert "score" in json.dumps(body["response_format"])
        assert "Task [" in body["messages"][-1]["content"] and "{instruction}" not in body["messages"][-1]["content"]
        kept2, rep2 = with_model(srv, db, lambda ctx: f(tasks, {"min_score": 40}, ctx))
        assert len(srv.requests) == 5

    assert [t.name for t in kept] == ["a", "b", "d"]
    assert {t.name: t.scores["askllm"] for t in kept} == {"a": 90.0, "b": 40.0, "d": 90.0}
    reasons = {d.name: d.reason for d in rep.dropped}
    assert set(reasons) == {"c", "e"}
    assert "score 0 (unparseable reply)" in reasons["c"] and "top 3" in reasons["c"]
    assert "askllm score 12" in reasons["e"]
    assert any(n.startswith("c: unparseable askllm reply") for n in rep.notes)
    assert [t.name for t in kept2] == ["a", "b", "d"] and {d.name for d in rep2.dropped} == {"c", "e"}
    assert "below min_score 40" in next(d.reason for d in rep2.dropped if d.name == "e")

    # top-1 of a tie at 90 goes to the name first in order
    with ChatServer(policy) as srv:
        kept, _ = with_model(srv, db, lambda ctx: f(tasks[::-1], {"k": 1}, ctx))
        assert srv.requests == []
    assert [t.name for t in kept] == ["a"]


def test_askllm_params_and_score_parsing(tmp_path):
    for params in ({}, {"k": 2, "min_score": 10}):
        with pytest.raises(AgentmillError, match="task filter 'askllm': param 'k'"):
            run("askllm", [], params, FilterContext(workdir=tmp_path))
    with pytest.raises(AgentmillError, match="param 'min_score'"):
        run("askllm", [], {"min_score": 150}, FilterContext(workdir=tmp_path))
    assert parse_score('{"score": 73, "reason": "ok"}') == 73
    assert parse_score('{"score": "55"}') == 55
    assert parse_score('{"score": 400}') == 100
    assert parse_score("Score 3.5, call it 70") == 70  # a decimal is not an integer score
    assert parse_score("I give it 250, no, 64.") == 64
    assert parse_score("no number here") is None


# --- decontaminate ---------------------------------------------------------------------------------

BENCH_WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
    "november oscar papa quebec romeo sierra tango"
).split()
DATA = "id,value\n" + "".join(f"{i},{i * i}\n" for i in range(40))


def test_decontaminate_by_ngram_and_identical_file(tmp_path):
    bench = tmp_path / "bench"
    write_task(
        bench / "bt1",
        instruction=" ".join(BENCH_WORDS) + ".",
        test_sh=REWARD_IF.format(cond="true"),
        environment_files={"data.csv": DATA},
    )
    (bench / "broken").mkdir()
    (bench / "broken" / "instruction.md").write_text("no task.toml here")
    single = write_task(
        tmp_path / "solo",
        instruction="Count the lines of every log file below /var/log and write the total to /tmp/total.txt now.",
        test_sh=REWARD_IF.format(cond="true"),
    )

    w = BENCH_WORDS
    tasks = make_tasks(
        tmp_path / "ds",
        {
            # 13 consecutive benchmark words, case and punctuation changed, inside other text
            "copy13": "First of all: " + ", ".join(x.upper() for x in w[2:15]) + " -- then stop.",
            "copy12": "First of all: " + " ".join(w[2:14]) + " then stop.",
            "filecopy": "Summarise the numbers in data.csv into a report.",
            "clean": "Write a shell script that rotates logs.",
            "solo_copy": "Please count the lines of every log file below /var/log and write the total to /tmp/total.txt.",
        },
        files={"filecopy": {"data.csv": DATA}},
    )
    params = {"benchmarks": [str(bench), str(single)], "ngram": 13}
    kept, rep = run("decontaminate", tasks, params, FilterContext(workdir=tmp_path))
    assert [t.name for t in kept] == ["copy12", "clean"]
    reasons = {d.name: d.reason for d in rep.dropped}
    assert reasons["copy13"].startswith("n-gram match with benchmark task bench/bt1: 1 shared 13-word")
    assert reasons["filecopy"] == (
        "file match with benchmark task bench/bt1: environment/data.csv is identical to its environment/data.csv"
    )
    assert reasons["solo_copy"].startswith("n-gram match with benchmark task solo")
    assert any("broken" in n for n in rep.notes)
    assert (rep.count_in, rep.count_out) == (5, 2)

    # shorter n-grams catch the 12-word copy; a higher min_overlap lets the 13-word one through
    kept, _ = run("decontaminate", tasks, {**params, "ngram": 12}, FilterContext(workdir=tmp_path))
    assert "copy12" not in [t.name for t in kept]
    kept, rep = run("decontaminate", tasks, {**params, "ngram": 12, "min_overlap": 2}, FilterContext(workdir=tmp_path))
    assert [t.name for t in kept] == ["copy12", "clean"]
    assert "2 shared 12-word n-grams" in next(d.reason for d in rep.dropped if d.name == "copy13")
    # boilerplate (task.toml, the Dockerfile, tiny files) is left out of the file check unless asked for
    kept, rep = run(
        "decontaminate", tasks, {**params, "ignore_files": [], "min_file_bytes": 0}, FilterContext(workdir=tmp_path)
    )
    assert kept == [] and "task.toml is identical to its task.toml" in next(
        d.reason for d in rep.dropped if d.name == "clean"
    )


def test_decontaminate_bad_params(tmp_path):
    with pytest.raises(AgentmillError, match="task filter 'decontaminate': param 'benchmarks'"):
        run("decontaminate", [], {"benchmarks": [str(tmp_path / "nope")]}, FilterContext(workdir=tmp_path))
    with pytest.raises(AgentmillError, match="param 'benchmarks'"):
        run("decontaminate", [], {}, FilterContext(workdir=tmp_path))
    with pytest.raises(AgentmillError, match="param 'ngram'"):
        run("decontaminate", [], {"benchmarks": [str(tmp_path)], "ngram": 0}, FilterContext(workdir=tmp_path))


# --- starts ----------------------------------------------------------------------------------------


@sandbox
def test_starts_drops_tasks_that_do_not_build_load_or_verify(tmp_path):
    root = tmp_path / "ds"
    good = simple_task(root, "good")
    alpine = simple_task(root, "alpine", dockerfile="FROM alpine:3.19\nWORKDIR /app\n")
    noreward = simple_task(root, "noreward", test_sh="#!/bin/bash\necho checked but wrote nothing\n")
    tasks = [entry(p) for p in (good, alpine, noreward)]
    broken = simple_task(root, "broken")
    tasks.insert(1, entry(broken))
    (broken / "task.toml").write_text("this is [not toml")
    ctx = FilterContext(builder=ImageBuilder(cache=scratch_cache(tmp_path)), workdir=tmp_path, concurrency=2)
    kept, rep = run("starts", tasks, {}, ctx)
    assert [t.name for t in kept] == ["good"]
    reasons = {d.name: d.reason for d in rep.dropped}
    assert reasons["alpine"].startswith("sandbox_error: ") and "alpine" in reasons["alpine"]
    assert reasons["noreward"].startswith("verifier_error: ") and "reward" in reasons["noreward"]
    assert reasons["broken"].startswith("does not load: ") and "task.toml" in reasons["broken"]
    assert all("\n" not in r for r in reasons.values())
    assert (rep.stage, rep.count_in, rep.count_out) == ("starts", 4, 1)


def test_starts_needs_a_builder(tmp_path):
    with pytest.raises(AgentmillError, match="needs an image builder"):
        run("starts", [], {}, FilterContext(workdir=tmp_path))
    with pytest.raises(AgentmillError, match="param 'agent'"):
        run("starts", [], {"agent": "oracle"}, FilterContext(workdir=tmp_path))  # params are checked first


# --- dedupe ----------------------------------------------------------------------------------------

BASE = (
    "Write a Python script that reads the access log in /var/log/nginx, counts requests per client "
    "address, and prints the ten busiest clients with their counts sorted from most to least"
)


def fake_entries(instructions: list[str]) -> list[TaskEntry]:
    return [
        TaskEntry(name=f"t{i:05d}", path=f"/nonexistent/t{i}", source="s", content_hash=str(i), instruction=text)
        for i, text in enumerate(instructions)
    ]


def test_dedupe_near_duplicates_vs_distinct(tmp_path):
    other = "Set up a cron job that backs up the postgres database every night and keeps the last seven dumps"
    tasks = fake_entries(
        [
            BASE,
            other,
            BASE.replace("least", "fewest"),  # one word changed at the end
            other.upper() + "!!!",  # same words, different case and punctuation
            "Create" + BASE[5:].replace("least", "fewest"),  # first and last word changed: Jaccard 0.875
            "Write a Python script that reads the error log in /var/log/apache2 and reports every distinct error "
            "message with the first time it occurred",  # shares an opening only
        ]
    )
    kept, rep = run("dedupe", tasks, {}, FilterContext(workdir=tmp_path))
    assert [t.name for t in kept] == ["t00000", "t00001", "t00005"]
    reasons = {d.name: d.reason for d in rep.dropped}
    assert reasons["t00002"].startswith("near-duplicate of t00000 (estimated Jaccard")
    assert reasons["t00003"].startswith("near-duplicate of t00001 (estimated Jaccard 1.00")
    assert reasons["t00004"].startswith("near-duplicate of t00000")
    # a stricter threshold keeps the looser paraphrase
    kept, _ = run("dedupe", tasks, {"threshold": 0.95}, FilterContext(workdir=tmp_path))
    assert "t00004" in [t.name for t in kept] and "t00003" not in [t.name for t in kept]
    with pytest.raises(AgentmillError, match="task filter 'dedupe': param 'threshold'"):
        run("dedupe", tasks, {"threshold": 1.5}, FilterContext(workdir=tmp_path))


def test_dedupe_ten_thousand_is_deterministic(tmp_path):
    rng = random.Random(7)
    vocab = [f"{rng.choice('bcdfgklmnprst')}{rng.choice('aeiou')}{rng.choice('bcdfgklmnprst')}{i}" for i in range(3000)]
    texts, expected = [], {}
    for i in range(10_000):
        if i % 97 == 96:  # a near copy of an earlier instruction: one word added, case changed
            src = rng.randrange(i - 90, i - 1)
            while f"t{src:05d}" in expected:
                src -= 1
            texts.append(texts[src].upper() + " please.")
            expected[f"t{i:05d}"] = f"t{src:05d}"
        else:
            texts.append(" ".join(rng.choice(vocab) for _ in range(rng.randint(12, 20))))
    tasks = fake_entries(texts)
    kept, rep = run("dedupe", tasks, {"threshold": 0.8}, FilterContext(workdir=tmp_path))
    got = {d.name: d.reason.split()[2] for d in rep.dropped}
    assert got == expected
    assert rep.count_out == 10_000 - len(expected) == len(kept)
    again, rep2 = run("dedupe", tasks, {"threshold": 0.8}, FilterContext(workdir=tmp_path))
    assert [t.name for t in again] == [t.name for t in kept] and rep2.dropped == rep.dropped
