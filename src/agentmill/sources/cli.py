"""`agentmill sources ...`: run one generator and write ordinary task folders (out/tasks) and a
report (out/report.json) of what was kept and what was dropped, and why."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from agentmill.errors import AgentmillError
from agentmill.sources.folders import SourceReport

app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Generate task folders from public sources (functions, repo-bugs, ...).",
)
console = Console(stderr=True)
out_console = Console(soft_wrap=True)  # summary lines stay whole (tests and scripts read them)


def _fail(message: str) -> None:
    """Refused before any work (bad input, a dead endpoint): exit 2, as every command (exit_codes.py)."""
    from rich.markup import escape

    from agentmill.exit_codes import REFUSED

    console.print(f"[red]error:[/red] {escape(message)}", highlight=False)
    raise typer.Exit(REFUSED)


def _summary(report: SourceReport, out: Path) -> None:
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(report.reasons.items())) or "none"
    out_console.print(
        f"{report.kind}: {len(report.kept)} tasks kept of {report.candidates} candidates in "
        f"{report.seconds:.0f} s ({report.tasks_per_minute:.1f} tasks/min); dropped: {reasons}",
        highlight=False,
    )
    for p in report.extra.get("projects", []):
        out_console.print(
            f"  {p['project']}: {p['kept']} tasks, {p['tried']} mutants tried, {p['valid']} valid, "
            f"{p['seconds']} s ({p['tasks_per_minute']} tasks/min)",
            highlight=False,
        )
        t = p.get("teacher") or {}
        if t.get("asked"):
            out_console.print(
                f"    teacher: {t['asked']} functions asked, {t['refused']} replies refused, "
                f"{t['tried']} bugs tried, {t['valid']} valid, {t.get('kept', 0)} tasks",
                highlight=False,
            )
    out_console.print(f"tasks: {out / 'tasks'}\nreport: {out / 'report.json'}", highlight=False)


@app.command("functions")
def functions_cmd(
    table: Path = typer.Argument(..., help="A .jsonl or .parquet table: one function contract per row."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (tasks/ and report.json)."),
    column: list[str] = typer.Option(
        [],
        "--column",
        help="FIELD=COLUMN: read a field from another column "
        "(fields: id, statement, signature, tests, solution). Repeatable.",
    ),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N rows."),
    concurrency: int = typer.Option(4, "--concurrency", "-c", min=1, help="Checks run at once."),
) -> None:
    """One task per row (write the function in /app/solution.py), checked oracle 1 / nop 0."""
    from agentmill.sources.functions import generate

    try:
        columns = dict(c.split("=", 1) for c in column)
    except ValueError:
        _fail("--column takes FIELD=COLUMN")
    try:
        report = generate(table, out, columns=columns, limit=limit, concurrency=concurrency)
    except AgentmillError as e:
        _fail(str(e))
    _summary(report, out)


@app.command("repo-bugs")
def repo_bugs_cmd(
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (tasks/ and report.json)."),
    pypi: list[str] = typer.Option([], "--pypi", help="A pinned PyPI project NAME==VERSION (its sdist). Repeatable."),
    repo: list[Path] = typer.Option([], "--repo", help="A local git checkout of a Python project. Repeatable."),
    max_tasks: int = typer.Option(10, "--max", min=1, help="Tasks per project (at most)."),
    seed: int = typer.Option(0, "--seed", help="Which mutations are tried first."),
    tries: int | None = typer.Option(None, "--tries", min=1, help="Mutants run per project (default 12 x --max)."),
    concurrency: int = typer.Option(4, "--concurrency", "-c", min=1, help="Checks run at once."),
    model: str | None = typer.Option(
        None, "--model", help="A teacher that writes bugs and rewrites the issue texts (optional)."
    ),
    base_url: str | None = typer.Option(None, "--base-url", help="The teacher's OpenAI-compatible endpoint."),
    api_key_env: str | None = typer.Option(None, "--api-key-env", help="Environment variable holding the key."),
    teacher_bugs: int | None = typer.Option(
        None, "--teacher-bugs", min=0, help="Functions per project the teacher rewrites with a bug (default --max)."
    ),
    no_preflight: bool = typer.Option(
        False, "--no-preflight", help="Skip the one-token request that checks the teacher before any work."
    ),
) -> None:
    """Issue-resolution tasks: plausible bugs planted in a real project, found by its own tests."""
    from agentmill.sources.repo_bugs import generate
    from agentmill.sources.teacher import check_teacher

    if not pypi and not repo:
        _fail("give --pypi NAME==VERSION or --repo DIR")
    if bool(model) != bool(base_url):
        _fail("--model and --base-url go together (the teacher that writes bugs and issues)")
    if teacher_bugs is not None and not model:
        _fail("--teacher-bugs needs a teacher (--model and --base-url)")
    try:
        teacher = {"name": model, "base_url": base_url, "api_key_env": api_key_env} if model else None
        if not no_preflight:
            check_teacher(teacher)  # before anything is downloaded or written
        report = generate(
            out,
            pypi=pypi,
            repos=repo,
            max_tasks=max_tasks,
            seed=seed,
            max_tries=tries,
            concurrency=concurrency,
            teacher=teacher,
            teacher_bugs=teacher_bugs,
        )
    except AgentmillError as e:
        _fail(str(e))
    _summary(report, out)


@app.command("stackexchange")
def stackexchange_cmd(
    posts: Path = typer.Argument(..., help="A StackExchange data dump's Posts.xml."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (tasks/ and report.json)."),
    tag: list[str] = typer.Option([], "--tag", help="Only questions with this tag (repeatable: any of them)."),
    min_score: int = typer.Option(0, "--min-score", help="Only questions scored at least this."),
    any_answer: bool = typer.Option(False, "--any-question", help="Also questions without an accepted answer."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="At most N tasks."),
    judge_model: str | None = typer.Option(
        None, "--judge-model", help="A judge: tasks judged against a rubric from the accepted answer (optional)."
    ),
    judge_base_url: str | None = typer.Option(None, "--judge-base-url", help="The judge's OpenAI-compatible endpoint."),
    judge_api_key_env: str | None = typer.Option(
        None, "--judge-api-key-env", help="Environment variable holding the judge's key."
    ),
    no_preflight: bool = typer.Option(
        False, "--no-preflight", help="Skip the one-token request that checks the judge before any work."
    ),
) -> None:
    """One task per question: unverified (verifier kind none: SFT data; RL exports refuse them), or,
    with a judge, judged against a rubric from the accepted answer."""
    from agentmill.sources.stackexchange import generate
    from agentmill.sources.teacher import check_teacher

    if bool(judge_model) != bool(judge_base_url):
        _fail("--judge-model and --judge-base-url go together (the judge that writes the rubrics)")
    judge = {"name": judge_model, "base_url": judge_base_url, "api_key_env": judge_api_key_env} if judge_model else None
    try:
        if not no_preflight:
            check_teacher(judge, role="judge", key_hint="--judge-api-key-env")
        report = generate(posts, out, tags=tag, min_score=min_score, accepted=not any_answer, limit=limit, judge=judge)
    except AgentmillError as e:
        _fail(str(e))
    _summary(report, out)


@app.command("generate")
def generate_cmd(
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (tasks/ and report.json)."),
    topic: list[str] = typer.Option([], "--topic", help="A seed topic (repeatable)."),
    topics: Path | None = typer.Option(None, "--topics", help="A file of seed topics, one per line."),
    model: str = typer.Option(..., "--model", help="The teacher's model name at the endpoint."),
    base_url: str = typer.Option(..., "--base-url", help="OpenAI-compatible endpoint, e.g. http://host:8000/v1"),
    api_key_env: str | None = typer.Option(None, "--api-key-env", help="Environment variable holding the key."),
    per_topic: int = typer.Option(1, "--per-topic", min=1, help="Tasks asked for per topic."),
    concurrency: int = typer.Option(4, "--concurrency", "-c", min=1, help="Checks run at once."),
    no_preflight: bool = typer.Option(
        False, "--no-preflight", help="Skip the one-token request that checks the teacher before any work."
    ),
) -> None:
    """Whole tasks written by a teacher; admitted only if they build, oracle passes, nop fails, and new."""
    from agentmill.sources.generate import generate, read_topics
    from agentmill.sources.teacher import check_teacher

    try:
        seeds = list(topic) + (read_topics(topics) if topics else [])
        if not no_preflight:
            check_teacher({"name": model, "base_url": base_url, "api_key_env": api_key_env})
        report = generate(
            seeds,
            out,
            base_url=base_url,
            model=model,
            api_key_env=api_key_env,
            per_topic=per_topic,
            concurrency=concurrency,
        )
    except AgentmillError as e:
        _fail(str(e))
    _summary(report, out)
