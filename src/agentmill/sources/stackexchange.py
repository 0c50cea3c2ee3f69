"""`stackexchange`: terminal tasks from a StackExchange data dump's Posts.xml (SuperUser, Unix & Linux,
Ask Ubuntu, ...), the paper's top SFT sources.

A task per question that passes the filters (tags, minimum score, an accepted answer): the title
and body (HTML -> Markdown) are the instruction; the environment is a Debian image with the
packages the question names installed (a rule: tags and code words -> Debian packages); the
accepted answer is kept as reference material in solution/reference.md, which only an oracle
would ever see. These tasks are **unverified** (`[verifier] kind = "none"`): they roll out and
export for SFT with reward null; RL exports refuse them.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentmill.errors import AgentmillError
from agentmill.sources import answer_rubric
from agentmill.sources.folders import (
    REPORT,
    SourceReport,
    cached_output,
    heredoc,
    is_done,
    mark_done,
    run_sync,
    slug,
    timed,
)
from agentmill.sources.html_markdown import html_to_markdown
from agentmill.tasks.hashing import hash_file
from agentmill.tasks.io import write_task
from agentmill.tasks.model import AgentSection, EnvironmentSection, TaskConfig, VerifierSection

VERSION = "1"
# The rule: a tag or a command named in the question's code -> the Debian packages that provide it.
# Tools every Debian image has (sed, grep, find, tar, bash, coreutils) need nothing.
PACKAGES = {
    "jq": ["jq"],
    "awk": ["gawk"],
    "gawk": ["gawk"],
    "git": ["git"],
    "curl": ["curl"],
    "wget": ["wget"],
    "rsync": ["rsync"],
    "python": ["python3"],
    "python3": ["python3"],
    "perl": ["perl"],
    "sqlite": ["sqlite3"],
    "sqlite3": ["sqlite3"],
    "tmux": ["tmux"],
    "zip": ["zip", "unzip"],
    "unzip": ["unzip"],
    "make": ["make"],
    "gcc": ["gcc"],
    "vim": ["vim"],
    "imagemagick": ["imagemagick"],
    "convert": ["imagemagick"],
    "ffmpeg": ["ffmpeg"],
    "xmlstarlet": ["xmlstarlet"],
    "csvkit": ["csvkit"],
    "bc": ["bc"],
    "openssl": ["openssl"],
    "ssh": ["openssh-client"],
    "cron": ["cron"],
    "less": ["less"],
    "file": ["file"],
    "tree": ["tree"],
    "xxd": ["xxd"],
    "pandoc": ["pandoc"],
    "gzip": ["gzip"],
    "bzip2": ["bzip2"],
    "xz": ["xz-utils"],
}
CODE = re.compile(r"<code>(.*?)</code>", re.S)


@dataclass
class Question:
    id: str
    title: str
    body: str
    tags: list[str]
    score: int
    accepted: str | None  # the accepted answer's id


def _tags(raw: str) -> list[str]:
    # older dumps: "<bash><sed>"; newer: "|bash|sed|"
    return [t for t in re.split(r"[<>|]", raw or "") if t]


def read_posts(posts: Path) -> tuple[dict[str, Question], dict[str, str]]:
    """Questions by id, and the body of every answer that some question accepted (streamed)."""
    if not posts.is_file():
        raise AgentmillError(f"{posts}: no such file (a StackExchange dump's Posts.xml)")
    questions: dict[str, Question] = {}
    answers: dict[str, str] = {}
    try:
        for _, el in ET.iterparse(posts, events=("end",)):
            if el.tag != "row":
                continue
            a = el.attrib
            if a.get("PostTypeId") == "1":
                questions[a.get("Id", "")] = Question(
                    id=a.get("Id", ""),
                    title=a.get("Title", ""),
                    body=a.get("Body", ""),
                    tags=_tags(a.get("Tags", "")),
                    score=int(a.get("Score", "0") or 0),
                    accepted=a.get("AcceptedAnswerId"),
                )
            elif a.get("PostTypeId") == "2":
                answers[a.get("Id", "")] = a.get("Body", "")
            el.clear()
    except ET.ParseError as e:
        raise AgentmillError(f"{posts}: not a Posts.xml ({e})") from None
    accepted = {q.accepted for q in questions.values() if q.accepted}
    return questions, {k: v for k, v in answers.items() if k in accepted}


def packages_for(q: Question) -> list[str]:
    words = set(q.tags)
    for code in CODE.findall(q.body):
        words |= set(re.findall(r"(?:^|[\s|;&(`$])([a-z][a-z0-9+-]*)", code))
    return sorted({p for w in words for p in PACKAGES.get(w, [])})


def dockerfile(packages: list[str]) -> str:
    install = (
        (
            "RUN apt-get update && apt-get install -y --no-install-recommends "
            + " ".join(packages)
            + " && rm -rf /var/lib/apt/lists/*\n"
        )
        if packages
        else ""
    )
    return f"FROM debian:bookworm-slim\n{install}WORKDIR /app\n"


def task_for(dest: Path, q: Question, answer: str, rubric: dict[str, Any] | None = None) -> Path:
    """An unverified task; with a `rubric` (answer_rubric.py), a judged one: the agent writes its answer
    to /app/answer.md, the test script hands it over, the judge scores it against the rubric."""
    instruction = f"# {html_to_markdown(q.title).strip()}\n\n{html_to_markdown(q.body)}"
    metadata: dict[str, Any] = {"source": "stackexchange", "question": q.id, "tags": q.tags, "score": q.score}
    if rubric is not None:
        instruction += answer_rubric.INSTRUCTION
        metadata["judged"] = True
    config = TaskConfig(
        metadata=metadata,
        agent=AgentSection(timeout_sec=900),
        verifier=VerifierSection(kind="tests" if rubric is not None else "none"),
        environment=EnvironmentSection(memory_mb=1024),
    )
    reference = html_to_markdown(answer)
    root = write_task(
        dest,
        instruction=instruction,
        config=config,
        test_sh=answer_rubric.TEST_SH if rubric is not None else "",
        solve_sh=("#!/bin/bash\n" + heredoc(answer_rubric.ANSWER, reference)) if rubric is not None else None,
        dockerfile=dockerfile(packages_for(q)),
    )
    if rubric is None:
        shutil.rmtree(root / "tests")  # no verifier: nothing to stage
    (root / "solution").mkdir(exist_ok=True)
    (root / "solution" / "reference.md").write_text(reference, encoding="utf-8")
    if rubric is not None:  # only an oracle's sandbox mounts solution/; the judged step reads it on the host
        (root / "solution" / answer_rubric.RUBRIC).write_text(json.dumps(rubric, indent=1) + "\n", encoding="utf-8")
    return root


async def _criteria(
    chosen: list[tuple[str, Question, str]], judge: dict[str, Any], report: SourceReport
) -> dict[str, list[str] | None]:
    """The judge's criteria per task name (None where it gave none: the general criterion stands)."""
    import asyncio

    from agentmill.models.client import EndpointError, ModelClient, SamplingParams

    client = ModelClient.from_env(
        base_url=judge["base_url"],
        model=judge["name"],
        api_key_env=judge.get("api_key_env"),
        sampling=SamplingParams(temperature=0.0),
        max_retries=2,
    )
    gate = asyncio.Semaphore(4)
    fallback: dict[str, str] = {}

    async def one(name: str, q: Question, answer: str) -> list[str] | None:
        question = f"# {html_to_markdown(q.title).strip()}\n\n{html_to_markdown(q.body)}"
        try:
            async with gate:
                return await answer_rubric.write_criteria(question, html_to_markdown(answer), client)
        except (ValueError, EndpointError) as e:
            fallback[name] = str(e)[:300]
            return None

    try:
        found = await asyncio.gather(*(one(*c) for c in chosen))
    finally:
        await client.close()
    if fallback:
        report.extra["rubric_fallback"] = fallback
    return {name: criteria for (name, _, _), criteria in zip(chosen, found)}


def generate(
    posts: Path,
    out: Path,
    *,
    tags: Sequence[str] = (),
    min_score: int = 0,
    accepted: bool = True,
    limit: int | None = None,
    judge: dict[str, Any] | None = None,
) -> SourceReport:
    """One task per question passing the filters, into out/tasks; counts per reason. Unverified, or
    with `judge` ({name, base_url, api_key_env}) judged against a rubric from the accepted answer."""
    questions, answers = read_posts(posts)
    if out.exists() and any(out.iterdir()) and not (out / REPORT).is_file():
        raise AgentmillError(f"{out}: exists and is not a sources output folder; choose an empty or new --out")
    shutil.rmtree(out, ignore_errors=True)
    (out / "tasks").mkdir(parents=True)
    report = SourceReport(kind="stackexchange")
    want = {t.lower() for t in tags}
    with timed(report):
        chosen: list[tuple[str, Question, str]] = []
        for q in sorted(questions.values(), key=lambda q: int(q.id) if q.id.isdigit() else 0):
            label = f"question {q.id}"
            if want and not want & {t.lower() for t in q.tags}:
                report.drop(label, "tag_mismatch")
            elif q.score < min_score:
                report.drop(label, "low_score", f"score {q.score} < {min_score}")
            elif accepted and (not q.accepted or q.accepted not in answers):
                report.drop(label, "no_accepted_answer")
            elif not q.title.strip() or not q.body.strip():
                report.drop(label, "empty_question")
            elif limit is not None and len(chosen) >= limit:
                report.drop(label, "over_limit")
            elif judge and not answers.get(q.accepted or ""):
                report.drop(label, "no_reference", "a judged task needs the accepted answer for its rubric")
            else:
                chosen.append((f"se-{q.id}-{slug(q.title, 40)}", q, answers.get(q.accepted or "", "")))
        criteria = run_sync(_criteria(chosen, judge, report)) if judge and chosen else {}
        for name, q, answer in chosen:
            report.candidates += 1
            rubric = None
            if judge:
                question = f"# {html_to_markdown(q.title).strip()}\n\n{html_to_markdown(q.body)}"
                rubric = answer_rubric.rubric(question, html_to_markdown(answer), criteria.get(name))
            task_for(out / "tasks" / name, q, answer, rubric)
            report.kept.append(name)
    report.write(out)
    mark_done(out)
    return report


def stackexchange_tasks_dir(path: Path | str, params: dict[str, Any] | None = None) -> Path:
    """`[[sources]] kind = "stackexchange"`: `path` is Posts.xml; params tags, min_score, accepted, limit,
    judge ({ name, base_url, api_key_env }: judged tasks, a rubric from the accepted answer)."""
    from agentmill.sources.teacher import check_teacher, teacher_spec

    params = dict(params or {})
    opts = {
        "tags": list(params.pop("tags", [])),
        "min_score": int(params.pop("min_score", 0)),
        "accepted": bool(params.pop("accepted", True)),
        "limit": params.pop("limit", None),
    }
    judge = teacher_spec(params.pop("judge", None), "stackexchange source (params.judge)")
    if params:
        raise AgentmillError(
            f"stackexchange source: unknown option(s) {', '.join(sorted(params))} "
            "(known: tags, min_score, accepted, limit, judge)"
        )
    posts = Path(path)
    if not posts.is_file():
        raise AgentmillError(f"{posts}: no such file (a StackExchange dump's Posts.xml)")
    identity = [hash_file(posts), json.dumps(opts, sort_keys=True)] + ([judge["name"]] if judge else [])
    out = cached_output("stackexchange", VERSION, *identity)  # the judge by name, not by its URL (it moves)
    if not is_done(out):
        check_teacher(judge, role="judge", key_hint="api_key_env of the stackexchange source's params.judge")
        generate(posts, out, **opts, judge=judge)
    return out / "tasks"
