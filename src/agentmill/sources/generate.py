"""`generate`: tasks written whole by a teacher model, from seed topics (the paper's LLM-generated
sources: nl2bash-like shell tasks, IssueTasks-like repository chores).

For each topic the teacher returns one JSON object: an instruction, a Dockerfile, the tests
(`tests/test.sh` and any files it uses) and a solution (`solution/solve.sh`). A task is admitted
only if its environment builds, the oracle passes, the nop fails (`check`, in the sandbox) and it
is not a near-duplicate of a task admitted before it. Every rejection is counted by reason:
bad_reply, does_not_build, vacuous_test, wrong_solution, broken, duplicate.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agentmill.errors import AgentmillError
from agentmill.models.client import ModelClient
from agentmill.sources.folders import (
    SourceReport,
    cached_output,
    fresh_output,
    is_done,
    mark_done,
    run_sync,
    slug,
    timed,
)
from agentmill.tasks.hashing import hash_text
from agentmill.tasks.io import write_task
from agentmill.tasks.model import AgentSection, EnvironmentSection, TaskConfig, VerifierSection

VERSION = "1"
NEAR_DUPLICATE = 0.6  # Jaccard similarity of the instructions' word 3-grams

SYSTEM = """You write one self-contained terminal task for training command-line agents.
Reply with one JSON object and nothing else:
{"name": "short-kebab-name",
 "instruction": "what the user asks, in Markdown; never mention the tests",
 "dockerfile": "FROM debian:bookworm-slim ... (the environment: files the task starts from)",
 "tests": {"test.sh": "#!/bin/bash ... writes 1 or 0 to /logs/verifier/reward.txt", "...": "other test files"},
 "solution": "#!/bin/bash ... a script that solves the task"}
The tests must fail on the untouched environment and pass after the solution runs."""

SCHEMA = {
    "type": "object",
    "required": ["name", "instruction", "dockerfile", "tests", "solution"],
    "properties": {
        "name": {"type": "string"},
        "instruction": {"type": "string"},
        "dockerfile": {"type": "string"},
        "solution": {"type": "string"},
        "tests": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


def parse_reply(text: str) -> dict[str, Any]:
    """The teacher's task, or ValueError saying what is wrong with the reply."""
    match = re.search(r"\{.*\}", text or "", re.S)
    if not match:
        raise ValueError("no JSON object in the reply")
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON: {e.msg}") from None
    for key, kind in (("instruction", str), ("dockerfile", str), ("solution", str), ("tests", dict)):
        if not isinstance(data.get(key), kind) or not data[key]:
            raise ValueError(f"'{key}' missing or empty")
    tests = data["tests"]
    if not isinstance(tests.get("test.sh"), str):
        raise ValueError("'tests' has no test.sh")
    for name, body in tests.items():
        if not isinstance(body, str) or name.startswith(("/", ".")) or ".." in Path(name).parts:
            raise ValueError(f"'tests': bad file {name!r}")
    return data


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {tuple(words[i : i + 3]) for i in range(max(1, len(words) - 2))}


def similarity(a: str, b: str) -> float:
    sa, sb = _shingles(a), _shingles(b)
    return len(sa & sb) / len(sa | sb) if sa and sb else 0.0


def write_candidate(dest: Path, data: dict[str, Any], topic: str) -> Path:
    tests = dict(data["tests"])
    config = TaskConfig(
        metadata={"source": "generate", "topic": topic},
        agent=AgentSection(timeout_sec=600),
        verifier=VerifierSection(timeout_sec=120),
        environment=EnvironmentSection(memory_mb=1024),
    )
    return write_task(
        dest,
        instruction=data["instruction"].strip() + "\n",
        config=config,
        test_sh=tests.pop("test.sh"),
        test_files=tests,
        solve_sh=data["solution"],
        dockerfile=data["dockerfile"],
    )


def _rejection(result) -> str:
    """A check verdict as the funnel's reason."""
    from agentmill.verify.outcome import Outcome

    if result.verdict == "vacuous":
        return "vacuous_test"
    if result.verdict == "unsolvable":
        return "wrong_solution"
    sides = [t for t in (result.oracle, result.nop) if t is not None]
    if any(t.outcome is Outcome.TASK_ERROR for t in sides) or result.verdict == "needs_container":
        return "does_not_build"
    return result.verdict


async def _generate(
    topics: list[str],
    out: Path,
    client: ModelClient,
    report: SourceReport,
    *,
    per_topic: int,
    concurrency: int,
    builder,
) -> None:
    import asyncio
    import shutil

    from agentmill.rollout.check import check_tasks
    from agentmill.tasks import load_task

    async def ask(topic: str, n: int):
        user = f"Topic: {topic}\nWrite task {n + 1} of {per_topic} on this topic."
        try:
            reply = await client.chat(
                [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}], json_schema=SCHEMA
            )
        except Exception as e:  # noqa: BLE001 - the endpoint's failure, reported per topic
            return topic, None, f"endpoint: {e}"
        try:
            return topic, parse_reply(reply.content), ""
        except ValueError as e:
            return topic, None, str(e)

    replies = await asyncio.gather(*(ask(t, n) for t in topics for n in range(per_topic)))
    candidates = []
    for i, (topic, data, problem) in enumerate(replies):
        label = f"{slug(topic, 30)}-{i}"
        if data is None:
            report.drop(label, "bad_reply", problem)
            continue
        name = f"{slug(data.get('name') or topic, 40)}-{hash_text(json.dumps(data, sort_keys=True))[:6]}"
        report.candidates += 1
        try:
            candidates.append((topic, data, load_task(write_candidate(out / "candidates" / name, data, topic))))
        except Exception as e:  # noqa: BLE001 - a task folder that does not load is the reply's fault
            report.drop(name, "broken", str(e))
    results = await check_tasks([c[2] for c in candidates], concurrency=concurrency, builder=builder)
    admitted: list[tuple[str, str]] = []  # (name, instruction)
    for (_topic, _data, task), result in zip(candidates, results):  # in topic order: the first of twins wins
        if result.verdict != "ok":
            report.drop(task.name, _rejection(result), result.reason)
            continue
        twin = next((n for n, text in admitted if similarity(text, task.instruction) >= NEAR_DUPLICATE), None)
        if twin is not None:
            report.drop(task.name, "duplicate", f"a near-duplicate of {twin}")
            continue
        shutil.move(str(task.path), str(out / "tasks" / task.name))
        admitted.append((task.name, task.instruction))
        report.kept.append(task.name)
    shutil.rmtree(out / "candidates", ignore_errors=True)


def generate(
    topics: list[str],
    out: Path,
    *,
    base_url: str,
    model: str,
    api_key_env: str | None = None,
    per_topic: int = 1,
    concurrency: int = 4,
    builder=None,
    temperature: float = 0.7,
) -> SourceReport:
    if not topics:
        raise AgentmillError("generate: no seed topics (give --topic or a topics file)")
    from agentmill.models.client import SamplingParams

    fresh_output(out)
    report = SourceReport(kind="generate")

    async def go():
        client = ModelClient.from_env(
            base_url=base_url,
            model=model,
            api_key_env=api_key_env,
            sampling=SamplingParams(temperature=temperature),
            max_retries=2,
        )
        try:
            await _generate(topics, out, client, report, per_topic=per_topic, concurrency=concurrency, builder=builder)
        finally:
            await client.close()

    with timed(report):
        run_sync(go())
    report.write(out)
    mark_done(out)
    return report


def read_topics(path: Path) -> list[str]:
    if not path.is_file():
        raise AgentmillError(f"{path}: no such topics file (one topic per line)")
    return [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")]


def generate_tasks_dir(path: Path | str | None, params: dict[str, Any] | None = None) -> Path:
    """`[[sources]] kind = "generate"`: `path` a topics file, or params.topics = [...]; params.model =
    { name, base_url, api_key_env }, per_topic. Generated once per (topics, model, options)."""
    params = dict(params or {})
    topics = list(params.pop("topics", [])) + (read_topics(Path(path)) if path else [])
    model = dict(params.pop("model", {}) or {})
    per_topic = int(params.pop("per_topic", 1))
    if params:
        raise AgentmillError(
            f"generate source: unknown option(s) {', '.join(sorted(params))} (known: topics, model, per_topic)"
        )
    if not model.get("name") or not model.get("base_url"):
        raise AgentmillError("generate source: params.model needs name and base_url (the teacher endpoint)")
    identity = json.dumps([topics, model.get("name"), per_topic], sort_keys=True)  # not the URL: it moves
    out = cached_output("generate", VERSION, identity)
    if not is_done(out):
        from agentmill.sources.teacher import check_teacher

        check_teacher(model, key_hint="api_key_env of the generate source's params.model")
        generate(
            topics,
            out,
            base_url=model["base_url"],
            model=model["name"],
            api_key_env=model.get("api_key_env"),
            per_topic=per_topic,
        )
    return out / "tasks"
