"""`repo_bugs`: issue-resolution tasks from real Python projects (SWE-Smith's idea).

    project (PyPI sdist | git checkout) -> its suite run once in the sandbox -> passing tests
    -> AST mutations (mutations.py), each run against the suite in the sandbox:
       kept when >= 1 passing test fails (fail-to-pass) and the rest still pass (pass-to-pass)
    -> one task per distinct patch: /app holds the buggy project, /tests the pristine suite,
       the solution is the reverse patch -> `check` (oracle 1, nop 0) admits it

The instruction reads like an issue report: the symptom (the failing tests' names and assertion
text), never the file, line or fix.
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentmill.errors import AgentmillError
from agentmill.models.client import EndpointError, ModelClient
from agentmill.runtime.paths import scratch_temp
from agentmill.sources.folders import (
    SourceReport,
    admit,
    cached_output,
    fresh_output,
    is_done,
    mark_done,
    run_sync,
    slug,
)
from agentmill.sources.mutations import Mutation, mutations, still_parses
from agentmill.sources.probe import SuiteRun, run_suite
from agentmill.sources.projects import Project, from_pypi, from_repo
from agentmill.sources.teacher_bugs import (
    OPERATOR,
    FunctionSite,
    TeacherBugError,
    bug_messages,
    function_sites,
    parse_bug,
)
from agentmill.tasks.hashing import hash_tree
from agentmill.tasks.io import write_task
from agentmill.tasks.model import AgentSection, EnvironmentSection, TaskConfig, VerifierSection

VERSION = "2"  # 2: teacher-written bugs, the origin in task.toml
FILES = Path(__file__).with_name("verifier_files")
MAX_BROKEN = 0.5  # a mutant failing more than this share of the passing tests is a crash, not a bug report


def _suite_folder(project: Project, dest: Path) -> Path:
    """The task's tests/ folder: the pristine suite under suite/, the recorder, the grader, the runner."""
    for rel in project.tests:
        src, target = project.root / rel, dest / "suite" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, target, symlinks=False, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, target)
    for name in ("conftest.py", "grade.py", "test.sh"):
        shutil.copy2(FILES / name, dest / name)
    (dest / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # the project's own ini never steers the run
    return dest


def _deps_folder(project: Project, work: Path) -> Path | None:
    """Dependencies as wheels only (no project code runs on the host), for the probe's PYTHONPATH."""
    if not project.dependencies:
        return None
    target = work / "deps"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--only-binary",
            ":all:",
            "--target",
            str(target),
            *project.dependencies,
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise AgentmillError(
            f"{project.label}: its dependencies {project.dependencies} did not install from the "
            f"registry as wheels: {(proc.stderr or proc.stdout).strip()[-300:]}"
        )
    return target


def _ordered(candidates: list[tuple[Path, Mutation]], seed: int) -> list[tuple[Path, Mutation]]:
    """Shuffled, then dealt round-robin by operator so every kind of slip gets its turn."""
    rng = random.Random(seed)
    rng.shuffle(candidates)
    by_op: dict[str, list] = {}
    for c in candidates:
        by_op.setdefault(c[1].operator, []).append(c)
    out, queues = [], list(by_op.values())
    while queues:
        for q in list(queues):
            out.append(q.pop(0))
            if not q:
                queues.remove(q)
    return out


def _mixed(teacher: list[tuple[Path, Mutation]], ast_sites: list[tuple[Path, Mutation]]):
    """Teacher candidates and AST mutants dealt in turn (teacher first): both origins get tried."""
    for i in range(max(len(teacher), len(ast_sites))):
        yield from teacher[i : i + 1]
        yield from ast_sites[i : i + 1]


async def _teacher_candidates(
    project: Project, client: ModelClient | None, count: int, seed: int, report: SourceReport, stats: dict[str, Any]
) -> list[tuple[Path, Mutation]]:
    """Ask the teacher to rewrite `count` functions (chosen by `seed`) with a bug; the replies that
    parse into a small change are candidates, the others are dropped with their reason."""
    stats["teacher"] = {"asked": 0, "refused": 0, "tried": 0, "valid": 0}
    if client is None or count <= 0:
        return []
    sources = {rel: (project.root / rel).read_text(encoding="utf-8", errors="replace") for rel in project.sources}
    sites = [(rel, site) for rel, text in sources.items() for site in function_sites(text)]
    chosen = random.Random(seed).sample(sites, min(count, len(sites)))
    stats["teacher"]["asked"] = len(chosen)
    gate = asyncio.Semaphore(4)

    async def ask(rel: Path, site: FunctionSite) -> tuple[Path, Mutation] | None:
        label = f"{slug(project.label, 30)}-teacher-{site.qualname}"
        try:
            async with gate:
                reply = await client.chat(bug_messages(site, project.label))
            return rel, parse_bug(reply.content or "", site, sources[rel])
        except TeacherBugError as e:
            code, _, detail = str(e).partition(": ")
            report.drop(label, code, f"{rel}: {site.qualname}: {detail}")
        except EndpointError as e:  # the endpoint's failure costs this candidate, not the run
            report.drop(label, "endpoint", f"{rel}: {site.qualname}: {e}")
        stats["teacher"]["refused"] += 1
        return None

    found = await asyncio.gather(*(ask(rel, site) for rel, site in chosen))
    return [c for c in found if c is not None]


def _symptom(message: str, hidden: list[str]) -> str:
    """The assertion text of a failure, without paths, line numbers or the library's file names."""
    lines = [ln[1:].strip() for ln in message.splitlines() if ln.startswith("E ")]
    if not lines:
        lines = [message.strip().splitlines()[-1]] if message.strip() else []
    keep = [ln for ln in lines if ".py:" not in ln and 'File "' not in ln and not any(h in ln for h in hidden)]
    return "\n".join(keep[:12]) or "(the test fails)"


def instruction(project: Project, failing: list[str], messages: dict[str, str], source_file: Path) -> str:
    hidden = [str(source_file), source_file.name]
    shown = [t.removeprefix("suite/") for t in failing[:3]]
    first = shown[0].split("::")[-1].split("[")[0]
    parts = [
        f"# `{first}` fails\n",
        f"Something is broken in `{project.label}`. The project is in `/app`; its test suite has started to "
        f"fail. {len(failing)} test{'s' if len(failing) != 1 else ''} fail{'s' if len(failing) == 1 else ''}, "
        "for example:\n",
    ]
    for full, short in zip(failing[:3], shown):
        parts.append(f"`{short}`:\n\n```\n{_symptom(messages.get(full, ''), hidden)}\n```\n")
    parts.append(
        "Find the cause in the project's code and fix it so that the whole test suite passes again. "
        "Do not change the tests.\n"
    )
    return "\n".join(parts)


def _task_folder(
    dest: Path,
    project: Project,
    rel: Path,
    buggy: str,
    original: str,
    run: SuiteRun,
    f2p: list[str],
    p2p: list[str],
    mutation: Mutation,
    tests_dir: Path,
    origin: str,
) -> Path:
    patch = "".join(difflib.unified_diff(buggy.splitlines(True), original.splitlines(True), f"a/{rel}", f"b/{rel}"))
    deps = (
        f"RUN pip install --no-cache-dir {' '.join(repr(d) for d in project.dependencies)}\n"
        if project.dependencies
        else ""
    )
    config = TaskConfig(
        metadata={
            "source": "repo_bugs",
            "project": project.label,
            "operator": mutation.operator,
            "origin": origin,  # "ast:<operator>" or "teacher"
            "function": mutation.function,
            "fail_to_pass": len(f2p),
            "pass_to_pass": len(p2p),
        },
        agent=AgentSection(timeout_sec=900),
        verifier=VerifierSection(timeout_sec=300),
        environment=EnvironmentSection(memory_mb=2048),
    )
    write_task(
        dest,
        instruction=instruction(project, f2p, run.messages, rel),
        config=config,
        test_sh=(FILES / "test.sh").read_text(encoding="utf-8"),
        solve_sh="#!/bin/bash\nset -euo pipefail\ncd /app\npatch -p1 --no-backup-if-mismatch < /solution/fix.patch\n",
        dockerfile=f"FROM python:3.11-slim\nWORKDIR /app\n{deps}COPY project/ /app/\nENV PYTHONPATH=/app/src:/app\n",
    )
    shutil.copytree(
        project.root,
        dest / "environment" / "project",
        symlinks=False,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    (dest / "environment" / "project" / rel).write_text(buggy, encoding="utf-8")
    shutil.rmtree(dest / "tests")
    shutil.copytree(tests_dir, dest / "tests")
    (dest / "tests" / "test.sh").chmod(0o755)
    (dest / "tests" / "f2p.json").write_text(json.dumps(f2p, indent=0) + "\n", encoding="utf-8")
    (dest / "tests" / "p2p.json").write_text(json.dumps(p2p, indent=0) + "\n", encoding="utf-8")
    (dest / "solution" / "fix.patch").write_text(patch, encoding="utf-8")
    return dest


async def mine(
    project: Project,
    out: Path,
    report: SourceReport,
    *,
    max_tasks: int,
    seed: int,
    max_tries: int | None = None,
    teacher: ModelClient | None = None,
    teacher_bugs: int = 0,
) -> dict[str, Any]:
    """Find up to `max_tasks` distinct valid bugs in `project`, written as candidates under out/candidates.
    With a `teacher`, `teacher_bugs` functions are also rewritten by it with a bug, and those candidates
    are dealt in turn with the AST mutants through the same keep rule."""
    t0 = time.monotonic()
    work = scratch_temp("repo-bugs")
    stats: dict[str, Any] = {"project": project.label, "tried": 0, "valid": 0, "reasons": {}}
    try:
        tests_dir = _suite_folder(project, work / "tests")
        deps = _deps_folder(project, work)
        mounts, pypath = ({"/deps": deps}, ["/deps"]) if deps else ({}, [])
        app = work / "app"
        shutil.copytree(project.root, app, symlinks=False, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        baseline = await run_suite(app, tests_dir, pythonpath=pypath, extra_mounts=mounts)
        passing = sorted(baseline.passed)
        stats |= {"passing_tests": len(passing), "suite_seconds": round(baseline.seconds, 2)}
        if not passing:
            raise AgentmillError(
                f"{project.label}: no test of its suite passes in the sandbox; output:\n{baseline.output[-1500:]}"
            )
        timeout = max(30.0, 4 * baseline.seconds + 10)
        sites = [
            (rel, m)
            for rel in project.sources
            for m in mutations((project.root / rel).read_text(encoding="utf-8", errors="replace"))
        ]
        stats["sites"] = len(sites)
        teacher_sites = await _teacher_candidates(project, teacher, teacher_bugs, seed, report, stats)
        seen: set[str] = set()
        budget = max_tries or max_tasks * 12
        for rel, m in _mixed(teacher_sites, _ordered(sites, seed)):
            if stats["valid"] >= max_tasks or stats["tried"] >= budget:
                break
            original = (project.root / rel).read_text(encoding="utf-8", errors="replace")
            buggy = m.apply(original)
            key = hashlib.sha256(f"{rel}\0{buggy}".encode()).hexdigest()
            if key in seen or not still_parses(buggy):  # the same patch as an earlier mutant: not run again
                skip = "duplicate" if key in seen else "does_not_parse"
                stats["reasons"][skip] = stats["reasons"].get(skip, 0) + 1
                if m.operator == OPERATOR:
                    report.drop(f"{slug(project.label, 30)}-teacher-{m.function}", skip, f"{rel}: {m.function}")
                continue
            seen.add(key)
            stats["tried"] += 1
            origin = "teacher" if m.operator == OPERATOR else f"ast:{m.operator}"
            (app / rel).write_text(buggy, encoding="utf-8")
            try:
                run = await run_suite(app, tests_dir, pythonpath=pypath, extra_mounts=mounts, timeout=timeout)
            finally:
                (app / rel).write_text(original, encoding="utf-8")
            f2p = sorted(set(passing) - run.passed)
            why = (
                "timeout"
                if run.timed_out
                else "no_outcomes"
                if not run.outcomes
                else "no_test_fails"
                if not f2p
                else "too_broad"
                if len(f2p) > MAX_BROKEN * len(passing)
                else None
            )
            if m.operator == OPERATOR:  # each teacher bug is listed with its reason (AST mutants are counted)
                stats["teacher"]["tried"] += 1
                if why:
                    report.drop(f"{slug(project.label, 30)}-teacher-{m.function}", why, f"{rel}: {m.function}")
                else:
                    stats["teacher"]["valid"] += 1
            if why:
                stats["reasons"][why] = stats["reasons"].get(why, 0) + 1
                continue
            stats["valid"] += 1
            p2p = sorted(set(passing) - set(f2p))
            name = f"{slug(project.label, 30)}-{m.operator.replace('_', '-')}-{key[:8]}"
            report.candidates += 1
            _task_folder(out / "candidates" / name, project, rel, buggy, original, run, f2p, p2p, m, tests_dir, origin)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    stats["mining_seconds"] = round(time.monotonic() - t0, 1)
    return stats


def generate(
    out: Path,
    *,
    pypi: Sequence[str] = (),
    repos: Sequence[Path] = (),
    max_tasks: int = 10,
    seed: int = 0,
    max_tries: int | None = None,
    concurrency: int = 4,
    builder=None,
    teacher: dict[str, Any] | None = None,
    teacher_bugs: int | None = None,
) -> SourceReport:
    """Mine every project, then admit the candidates with `check`; per-project throughput in the report.
    `teacher` ({name, base_url, api_key_env}): that model also writes bugs (`teacher_bugs` functions per
    project rewritten, default `max_tasks`; teacher_bugs.py) and rewrites the issue texts (issue_writer.py)."""
    if not pypi and not repos:
        raise AgentmillError("repo_bugs: give --pypi NAME==VERSION or --repo DIR")
    asked = (max_tasks if teacher_bugs is None else teacher_bugs) if teacher else 0
    fresh_output(out)
    report = SourceReport(kind="repo_bugs")
    t0 = time.monotonic()
    projects: list[dict[str, Any]] = []
    for where, pin in [("pypi", p) for p in pypi] + [("repo", r) for r in repos]:
        with tempfile.TemporaryDirectory(prefix="repo-bugs-src-") as tmp:
            project = from_pypi(str(pin), Path(tmp)) if where == "pypi" else from_repo(Path(pin), Path(tmp))
            projects.append(
                run_sync(
                    _with_teacher(
                        teacher,
                        lambda client, project=project: mine(
                            project,
                            out,
                            report,
                            max_tasks=max_tasks,
                            seed=seed,
                            max_tries=max_tries,
                            teacher=client,
                            teacher_bugs=asked,
                        ),
                    )
                )
            )
    if teacher:
        report.extra["template_kept"] = run_sync(_with_teacher(teacher, lambda client: _teacher_issues(out, client)))
    t_check = time.monotonic()
    run_sync(
        admit(
            out,
            report,
            concurrency=concurrency,
            builder=builder,
            why={"unsolvable": "revert_fails", "vacuous": "bug_not_seen"},
        )
    )
    check_seconds = time.monotonic() - t_check
    report.seconds = time.monotonic() - t0
    for p in projects:  # checking time shared by each project's number of candidates
        label = slug(p["project"], 30)
        kept = sum(name.startswith(label + "-") for name in report.kept)
        share = check_seconds * p["valid"] / max(1, report.candidates)
        p |= {"kept": kept, "seconds": round(p["mining_seconds"] + share, 1)}
        p["teacher"]["kept"] = sum(name.startswith(f"{label}-{OPERATOR}-") for name in report.kept)
        p["tasks_per_minute"] = round(60 * kept / p["seconds"], 2) if p["seconds"] else 0.0
    report.extra["projects"] = projects
    report.write(out)
    mark_done(out)
    return report


async def _with_teacher(teacher: dict[str, Any] | None, work):
    """`work(client)` with the teacher's client open (None without a teacher), closed after."""
    if not teacher:
        return await work(None)
    client = ModelClient.from_env(
        base_url=teacher["base_url"], model=teacher["name"], api_key_env=teacher.get("api_key_env"), max_retries=2
    )
    try:
        return await work(client)
    finally:
        await client.close()


async def _teacher_issues(out: Path, client: ModelClient) -> dict[str, str]:
    from agentmill.sources.issue_writer import rewrite_issues

    return await rewrite_issues(sorted((out / "candidates").iterdir()), client)


def repo_bugs_tasks_dir(path: Path | str | None, params: dict[str, Any] | None = None) -> Path:
    """`[[sources]] kind = "repo_bugs"`: `path` a git checkout, or params.pypi = "NAME==VERSION" (or a
    list); params max (tasks per project, default 10), seed, model ({ name, base_url, api_key_env }: the
    teacher that writes bugs and issues), teacher_bugs (functions it rewrites per project, default max).
    Generated once into the agentmill cache."""
    from agentmill.sources.teacher import check_teacher, teacher_spec

    params = dict(params or {})
    pypi = params.pop("pypi", [])
    pypi = [pypi] if isinstance(pypi, str) else list(pypi)
    max_tasks, seed = int(params.pop("max", 10)), int(params.pop("seed", 0))
    teacher = teacher_spec(params.pop("model", None), "repo_bugs source")
    teacher_bugs = params.pop("teacher_bugs", None)
    if params:
        raise AgentmillError(
            f"repo_bugs source: unknown option(s) {', '.join(sorted(params))} "
            "(known: pypi, max, seed, model, teacher_bugs)"
        )
    if teacher_bugs is not None and (not isinstance(teacher_bugs, int) or teacher_bugs < 0 or not teacher):
        raise AgentmillError("repo_bugs source: params.teacher_bugs is a count (>= 0) and needs params.model")
    repos = [Path(path)] if path else []
    identity = [VERSION, json.dumps([sorted(pypi), max_tasks, seed, teacher and teacher["name"], teacher_bugs])] + [
        hash_tree(r) for r in repos
    ]  # the teacher by name, not by its URL (it moves)
    out = cached_output("repo_bugs", *identity)
    if not is_done(out):
        check_teacher(teacher, key_hint="api_key_env of the repo_bugs source's params.model")
        generate(
            out, pypi=pypi, repos=repos, max_tasks=max_tasks, seed=seed, teacher=teacher, teacher_bugs=teacher_bugs
        )
    return out / "tasks"
