"""What the `rollout`, `status` and `check` verbs do and print; cli.py only declares their options."""

from __future__ import annotations

import asyncio
import difflib
import shlex
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agentmill.errors import TaskError
from agentmill.verify.judge import NEEDS_JUDGE

INTERRUPTED_EXIT = 130  # what a shell reports for a process ended by SIGINT


# -- task selection --------------------------------------------------------------------------------------


def unknown_task_names(root: Path, wanted: list[str]) -> str | None:
    """One error line for --task names that are not task folders in `root`, with the close matches."""
    if not wanted:
        return None
    root = Path(root)
    available = (
        sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.is_dir() else []
    )
    if root.name in wanted:  # a single task folder given as the dataset
        available.append(root.name)
    unknown = [n for n in dict.fromkeys(wanted) if n not in available]
    if not unknown:
        return None
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name, available, n=3, cutoff=0.6)
        parts.append(f"{name} (did you mean: {', '.join(close)}?)" if close else name)
    return f"--task: unknown task name{'s' if len(unknown) > 1 else ''} in {root}: " + "; ".join(parts)


# -- rollout -----------------------------------------------------------------------------------------------


def rollout_tasks(root: Path, names: list[str], agent: str, *, say):
    """The tasks to plan, as a `TaskList` of references spilled to disk (the caller closes it).
    Task folders are loaded one at a time and let go; what cannot run is said and left out: a folder
    that does not load, or a task this agent does not work on. A byte-identical duplicate of an
    earlier task is said and kept (its name is recorded; it shares that task's trials)."""
    from agentmill.agents.registry import split_by_support
    from agentmill.errors import AgentmillError
    from agentmill.rollout.plan import TaskRef
    from agentmill.rollout.task_list import TaskList
    from agentmill.tasks.dataset import iter_dataset

    refs = TaskList()
    try:
        loaded = 0
        for task in iter_dataset(root, names=names or None):
            if isinstance(task, TaskError):
                say(f"[yellow]skipped:[/yellow] {task}")
                continue
            loaded += 1
            for w in task.warnings:
                say(f"[dim]warning: {w}[/dim]")
            _, unsupported = split_by_support(agent, [task])
            if unsupported:
                say(f"[yellow]skipped:[/yellow] {unsupported[0]}")
                continue
            if not refs.add(TaskRef.of(task)):
                say(f"[yellow]skipped:[/yellow] {task.path}: byte-identical to another task (same content hash)")
        if not loaded:
            raise AgentmillError(f"no loadable tasks in {root}")
        if not len(refs):
            raise AgentmillError(f"--agent {agent}: none of the tasks is one it works on")
    except BaseException:
        refs.close()
        raise
    return refs


def resume_command() -> str:
    return shlex.join(["agentmill", *sys.argv[1:]])


def endpoint_probes(config, model_name: str | None) -> list:
    """The rollout's endpoints, as `models.preflight` checks them: the agent's model (none for the
    embedded model: we start it) and, where one is configured, the verifier's judge (it replies JSON)."""
    import os

    from agentmill.agents import agent_class
    from agentmill.models import LOCAL_MODEL
    from agentmill.models.preflight import Probe

    probes = []
    if config.model is not None and model_name != LOCAL_MODEL and config.base_url:
        tools = getattr(agent_class(config.agent), "rendering", None) == "tool_calls"
        probes.append(
            Probe(
                role=f"{config.agent} agent's model",
                base_url=config.base_url,
                model=config.model,
                api_key_env=config.api_key_env,
                key_hint="--api-key-env",
                tools=tools,
            )
        )
    judge_model, judge_url = os.environ.get("AGENTMILL_JUDGE_MODEL"), os.environ.get("AGENTMILL_JUDGE_BASE_URL")
    if judge_model and judge_url:
        probes.append(
            Probe(
                role="verifier's judge (AGENTMILL_JUDGE_MODEL)",
                base_url=judge_url,
                model=judge_model,
                api_key_env=os.environ.get("AGENTMILL_JUDGE_API_KEY_ENV"),
                key_hint="AGENTMILL_JUDGE_API_KEY_ENV",
                json=True,
            )
        )
    return probes


STORE_NAME = ".trial-store"


def default_store(out: Path) -> Path:
    """The trial store `rollout` shares with its sibling run folders (runs/a, runs/b: runs/.trial-store):
    a new --out beside an earlier one takes its finished trials instead of paying the model again."""
    return Path(out).resolve().parent / STORE_NAME


def execute_rollout(
    config,
    tasks,
    out: Path,
    *,
    model_name: str | None,
    retry_infra: bool,
    console: Console,
    executor=None,
    check_endpoint: bool = True,
    retry_unjudged: bool = False,
    store: Path | None = None,
):
    """Check, start the model if one is needed, run with live progress; on Ctrl-C or SIGTERM say what
    finished, what was lost and how to resume. Returns the RolloutReport, or raises typer-free exit
    codes as SystemExit."""
    from agentmill.models.preflight import run_preflight
    from agentmill.models.session import open_model
    from agentmill.progress import RolloutProgress
    from agentmill.rollout.runner import preflight, run_rollout
    from agentmill.rollout.store import TrialStore
    from agentmill.runtime.signals import sigterm_as_interrupt

    preflight(out, config, tasks)  # before any model server starts: a refusal costs nothing
    if check_endpoint:
        run_preflight(endpoint_probes(config, model_name))  # before anything is written
    holder: dict = {}

    async def go():
        async def run(client):
            local = executor is None or executor.name == "local"  # elsewhere, tokens are counted from results
            # until the plan says how many are left (a TaskList counts its tasks; an iterator cannot)
            total = config.attempts * len(tasks) if hasattr(tasks, "__len__") else 0
            with RolloutProgress(total=total, client=client if local else None, console=console) as progress:
                holder["progress"] = progress
                return await run_rollout(
                    config,
                    tasks,
                    out,
                    client=client,
                    retry_infra=retry_infra,
                    retry_unjudged=retry_unjudged,
                    executor=executor,
                    on_start=progress.started,
                    on_done=progress.finished,
                    on_plan=progress.set_total,
                    store=TrialStore(store) if store is not None else None,
                )

        if config.model is None:
            return await run(None)
        async with open_model(
            model_name,
            base_url=config.base_url,
            api_key_env=config.api_key_env,
            sampling=config.sampling,
            timeout=config.request_timeout,
            max_retries=config.max_retries,
            concurrency=config.model_concurrency,
            prices=config.prices,
            say=console.print,
        ) as client:
            return await run(client)

    with sigterm_as_interrupt() as stop:
        try:
            return asyncio.run(go())
        except KeyboardInterrupt:
            progress = holder.get("progress")
            console.print(interrupted_message(out, progress.done if progress else 0, how=stop.how), highlight=False)
            raise SystemExit(stop.exit_code) from None


def interrupted_message(out: Path, finished_now: int, how: str = "interrupted") -> str:
    return f"{how}: {interrupted_counts(out, finished_now)}\nresume with: {resume_command()}"


def infra_exit(out: Path, console: Console, *, retry_hint: bool = True) -> int:
    """Print the outage summary of a finished rollout; 3 when every finished trial ended in infrastructure failure."""
    from agentmill.exit_codes import INFRA, OK
    from agentmill.rollout.infra import infra_report

    lines, all_infra = infra_report(out, retry_hint=retry_hint)
    for line in lines:
        console.print(line, highlight=False)
    return INFRA if all_infra else OK


def interrupted_counts(out: Path, finished_now: int | None = None) -> str:
    """What an interrupted run folder holds: finished, lost in flight (run again on resume), not started."""
    from agentmill.rollout.ledger import Ledger

    done = lost = planned = 0
    if (out / "ledger.sqlite").exists():
        ledger = Ledger(out / "ledger.sqlite")
        try:
            done, lost = ledger.count("done"), ledger.count("running")
            planned = ledger.planned() or done + lost
        finally:
            ledger.close()
    now = f" ({finished_now} in this session)" if finished_now is not None else ""
    return (
        f"{done} of {planned} trials finished{now}; {lost} in flight were lost and will run again on resume; "
        f"{max(0, planned - done - lost)} not started."
    )


def report_line(report, out: Path) -> str:
    line = f"{report.ran} trials run, {report.skipped} already done, {report.recovered} recovered"
    if report.reused:
        line += f", {report.reused} reused from earlier runs"
    if report.unrecorded:
        line += f"; {len(report.unrecorded)} could not be recorded and will run again on resume"
    return line + f"; run folder: {out}"


# -- status ------------------------------------------------------------------------------------------------


def status_table(s: dict) -> Table:
    table = Table(title=f"run {s['run_dir']}", show_header=False)
    live = s.get("live_pid")
    running = (
        f"{s['running']} running (pid {live})"
        if live
        else f"{s['running']} unfinished (lost in flight; they run again on resume)"
        if s["running"]
        else "0 running"
    )
    extra = [running] + ([f"{s['not_started']} not started"] if s.get("not_started") else [])
    table.add_row("trials", f"{s['planned']} planned: {s['done']} done, {', '.join(extra)}; over {s['tasks']} tasks")
    table.add_row("outcomes", ", ".join(f"{k}: {v}" for k, v in s["outcomes"].items()) or "-")
    table.add_row(
        "attempted",
        f"{s['attempted']} trials the agent attempted; {s['infra_failures']} infrastructure "
        f"failures counted apart (not in pass@k)",
    )
    if s.get("unjudged"):
        table.add_row(
            "[bold yellow]unjudged[/bold yellow]",
            f"[bold yellow]{s['unjudged']} trials passed every check that ran but their reward {NEEDS_JUDGE}: "
            "no reward, not in pass@k or the mean reward, dropped by export; with a judge set, "
            "`agentmill rollout ... --retry unjudged` runs them again[/bold yellow]",
        )
    table.add_row("mean reward", "-" if s["mean_reward"] is None else f"{s['mean_reward']:.4f}")
    for k, v in s.get("pass_at_k", {}).items():
        table.add_row(f"pass@{k}", f"{v['mean']:.4f} ± {v['se']:.4f}")
    table.add_row("tokens", f"{s['tokens']['prompt']} in / {s['tokens']['completion']} out")
    table.add_row("cost", "-" if s["cost_usd"] is None else f"${s['cost_usd']:.4f}")
    table.add_row("time", f"{s['wall_seconds']:.1f}s wall, {s['trial_seconds']:.1f}s in trials")
    tele = s.get("telemetry") or {}
    if tele:
        table.add_row(
            "behaviour",
            f"{tele['mean_assistant_turns']:.1f} turns, {tele['mean_commands']:.1f} commands per trial; "
            f"command errors {tele['command_error_rate']:.1%}; parse errors {tele['parse_errors']}; "
            f"truncated {tele['truncated_observations']}; self-corrections {tele['self_corrections']}; "
            f"repeated commands {tele['repeated_commands']}; premature completions {tele['premature_completion']}",
        )
        if tele.get("tampered"):
            table.add_row(
                "tamper",
                f"{tele['tampered']} trials with verifier tamper evidence (reward withheld; "
                "dropped by export unless --tamper keep)",
            )
    return table


# -- check -------------------------------------------------------------------------------------------------


def broken_folder_rows(root: Path, errors: list[TaskError]) -> list[dict]:
    """`check --json` rows for task folders that did not load: named after the folder, with the error."""
    rows = []
    for err in errors:
        try:
            name = err.path.resolve().relative_to(Path(root).resolve()).parts[0]
        except (ValueError, IndexError):
            name = err.path.parent.name
        rows.append(
            {"task": name, "task_hash": None, "oracle": None, "nop": None, "verdict": "broken", "reason": str(err)}
        )
    return rows


def check_summary(rows: list[dict]) -> str:
    """'27/30 ok, 3 broken': every task folder counts, loaded or not."""
    from collections import Counter

    counts = Counter(r["verdict"] for r in rows)
    others = [f"{n} {v}" for v, n in sorted(counts.items()) if v != "ok"]
    return f"{counts.get('ok', 0)}/{len(rows)} ok" + (", " + ", ".join(others) if others else "")
