"""The `agentmill` command line: one verb per stage."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any, Literal, NoReturn, cast

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from agentmill import __version__, defaults
from agentmill.errors import AgentmillError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,  # "[filters]" in help stays text
    help="Verified, reproducible training data for agent models.",
)
sandbox_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Run commands in the embedded sandbox.")
app.add_typer(sandbox_app, name="sandbox")


@app.callback()
def _everything(
    verbose: int = typer.Option(
        0, "--verbose", "-v", count=True, help="More detail on stderr: -v what each step does, -vv debug."
    ),
) -> None:
    from agentmill.logs import configure

    configure(verbose)


def _ground_app() -> typer.Typer:  # grounded synthesis: its commands live in agentmill.grounded.cli
    from agentmill.grounded.cli import app as ground

    return ground


app.add_typer(_ground_app(), name="ground")


def _train_app() -> typer.Typer:  # SFT and GRPO through TRL (the 'train' extra): commands live in agentmill.rl.cli
    from agentmill.rl.cli import app as train

    return train


app.add_typer(_train_app(), name="train")


def _synth_app() -> typer.Typer:  # failure-driven synthesis: its commands live in agentmill.synth.cli
    from agentmill.synth.cli import app as synth

    return synth


app.add_typer(_synth_app(), name="synth")


def _sources_app() -> typer.Typer:  # task-source generators: their commands live in agentmill.sources.cli
    from agentmill.sources.cli import app as sources

    return sources


app.add_typer(_sources_app(), name="sources")


def _tools_apps() -> tuple[typer.Typer, typer.Typer]:  # tool-use tasks' gyms: commands live in agentmill.tools.cli
    from agentmill.tools.cli import import_app, tools_app

    return tools_app, import_app


app.add_typer(_tools_apps()[0], name="tools")
app.add_typer(_tools_apps()[0], name="env", hidden=True)  # the old name of `tools`: users' scripts keep working
app.add_typer(_tools_apps()[1], name="import")


def _import_harbor() -> (
    None
):  # `agentmill import harbor` sits beside `import eog`; its logic lives in agentmill.interop
    from agentmill.interop.cli import import_harbor_cmd

    _tools_apps()[1].command("harbor")(import_harbor_cmd)


_import_harbor()
images_app = typer.Typer(
    invoke_without_command=True,
    rich_markup_mode=None,
    help="Cached images and Debian layers: list them; `prune` frees space.",
)
app.add_typer(images_app, name="images")
console = Console(stderr=True, soft_wrap=True)  # one error, one line: never wrapped
out = out_stdout = Console()


NETWORK_HELP = (  # rollout/network.py
    "'task': the agent's sandbox gets the internet (public addresses only, never the host or private "
    "ranges) when its task.toml says allow_internet = true; 'none': no trial gets a network; 'all': every "
    "agent gets the internet whatever its task says (tasks written for Docker's network-on default). The verifier never has one."
)


def _network(value: str):
    """`--network`, checked (rollout/network.py)."""
    from agentmill.rollout.network import check_mode

    try:
        return check_mode(value)
    except ValueError as e:
        _fail(str(e))


def _fail(message: str, code: int = 2) -> NoReturn:
    console.print(f"[red]error:[/red] {escape(message)}", highlight=False)  # "[roles.judge]" is text, not markup
    raise typer.Exit(code)


def _dataset_root(dataset: Path | None, sample: bool, names: list[str] | None, sample_tools: bool = False) -> Path:
    """The dataset folder the options name, its --task names checked (none of its tasks loaded)."""
    from agentmill.errors import TaskError
    from agentmill.rollout.commands import unknown_task_names
    from agentmill.tasks import sample_dataset_path, sample_tools_path

    if sample + sample_tools + (dataset is not None) != 1:
        _fail("give a DATASET folder, --sample or --sample-tools (one of them)")
    root = (sample_dataset_path() if sample else sample_tools_path() if sample_tools else Path(str(dataset))).resolve()
    if not root.is_dir():
        _fail(str(TaskError(root, "dataset folder not found")))
    unknown = unknown_task_names(root, names or [])
    if unknown:
        _fail(unknown)
    return root


def _load(dataset: Path | None, sample: bool, names: list[str] | None, sample_tools: bool = False):
    from agentmill.tasks import load_dataset

    root = _dataset_root(dataset, sample, names, sample_tools)
    try:
        ds = load_dataset(root, names=names or None)
    except AgentmillError as e:
        _fail(str(e))
    for err in ds.errors:
        console.print(f"[yellow]skipped:[/yellow] {err}", highlight=False)
    for w in ds.warnings:
        console.print(f"[dim]warning: {w}[/dim]", highlight=False)
    if not ds.tasks:
        _fail(f"no loadable tasks in {ds.root}")
    return ds


@app.command()
def version() -> None:
    """Print the agentmill version."""
    out.print(__version__)


@app.command()
def check(
    dataset: Path | None = typer.Argument(None, help="A folder of task folders (or one task folder)."),
    sample: bool = typer.Option(False, "--sample", help="Check the bundled terminal tasks."),
    sample_tools: bool = typer.Option(
        False, "--sample-tools", help="Check the bundled tool tasks (gyms, SQL verifiers)."
    ),
    task: list[str] = typer.Option([], "--task", "-t", help="Only these task names (repeatable)."),
    concurrency: int = typer.Option(defaults.CONCURRENCY, "--concurrency", "-c", min=1, help="Trials run at once."),
    json_path: Path | None = typer.Option(None, "--json", help="Write per-task results as JSON here."),
    trials: Path | None = typer.Option(
        None,
        "--trials",
        help="Keep each trial's record (result.json, the "
        "verifier's output) here; default: a new folder in the temp folder.",
    ),
    network: str = typer.Option("task", "--network", help=NETWORK_HELP),
) -> None:
    """Oracle must reach reward 1 and nop must not, for every task."""
    from agentmill.progress import TrialProgress
    from agentmill.rollout.check import CHECK_PASSES, check_tasks
    from agentmill.rollout.commands import broken_folder_rows, check_summary

    network = _network(network)
    ds = _load(dataset, sample, task, sample_tools)
    if trials is None:
        import tempfile

        trials = Path(tempfile.mkdtemp(prefix="agentmill-check-"))
    with TrialProgress(total=len(ds.tasks), what="tasks", console=console) as progress:
        try:
            results = asyncio.run(
                check_tasks(
                    ds.tasks,
                    concurrency=concurrency,
                    keep=trials,
                    network=network,
                    on_done=lambda r: progress.advance(ok=r.verdict in CHECK_PASSES),
                )
            )
        except AgentmillError as e:
            _fail(str(e))
    table = Table(title=f"agentmill check: {ds.root}")
    for col in ("task", "oracle", "nop", "verdict", "reason"):
        table.add_column(col, overflow="fold")
    for r in sorted(results, key=lambda r: r.task.name):

        def cell(t):
            return "-" if t is None else f"{t.reward if t.reward is not None else '-'} ({t.outcome.value})"

        color = {"ok": "green", "needs_judge": "yellow", "no_verifier": "yellow"}.get(r.verdict, "red")
        table.add_row(
            r.task.name,
            cell(r.oracle),
            cell(r.nop),
            f"[{color}]{r.verdict}[/{color}]",
            Text("" if r.verdict == "ok" else r.reason[:200]),
        )  # Text: brackets in errors are not markup
    rows = [r.to_json() for r in results] + broken_folder_rows(ds.root, ds.errors)
    for row in rows[len(results) :]:
        table.add_row(row["task"], "-", "-", "[red]broken[/red]", Text(row["reason"][:200]))
    out.print(table)
    out.print(check_summary(rows), highlight=False)
    out.print(f"trial records (result.json, verifier/stdout.txt): {trials}/<task>/<agent>", highlight=False)
    if json_path:
        _write_json(json_path, sorted(rows, key=lambda r: r["task"]))
    # needs_judge and no_verifier are no failure of the task: what can be audited was audited
    raise typer.Exit(0 if all(r["verdict"] in CHECK_PASSES for r in rows) else 1)


def _rollout_executor(name: str, address: str | None, concurrency: int, model: str | None, workers: int | None = None):
    """The executor for `rollout --executor`: the local one, worker processes, or Ray (imported only when chosen)."""
    from agentmill.models import LOCAL_MODEL
    from agentmill.rollout.executor import make_executor

    if address and name != "ray":
        _fail("--address: only with --executor ray")
    if workers is not None and name != "processes":
        _fail("--workers: only with --executor processes")
    if name == "ray" and model == LOCAL_MODEL:
        console.print(
            "[yellow]note:[/yellow] the embedded model listens on this machine's loopback: only Ray nodes "
            "on this machine reach it (give other nodes --base-url of a served model)",
            highlight=False,
        )
    options: dict[str, Any] = (
        {"address": address, "say": lambda line: console.print(line, highlight=False)} if name == "ray" else {}
    )
    if name == "processes":
        options = {"workers": workers}
    try:
        return make_executor(name, concurrency=concurrency, **options)
    except ValueError as e:
        _fail(f"--executor: {e}")
    except AgentmillError as e:
        _fail(str(e))


@app.command()
def rollout(
    dataset: Path | None = typer.Argument(None, help="A folder of task folders (or one task folder)."),
    sample: bool = typer.Option(False, "--sample", help="Use the bundled terminal tasks."),
    sample_tools: bool = typer.Option(False, "--sample-tools", help="Use the bundled tool tasks."),
    out: Path = typer.Option(..., "--out", "-o", help="Run folder: created, or resumed if it exists."),
    agent: str = typer.Option(
        "terminus", "--agent", help="An agent name from the registry: terminus, tools, oracle, nop, ..."
    ),
    model: str | None = typer.Option(
        None, "--model", help="Model name at the endpoint, or 'local' for the embedded SmolLM2."
    ),
    base_url: str | None = typer.Option(
        None, "--base-url", help="OpenAI-compatible endpoint, e.g. http://host:8000/v1"
    ),
    api_key_env: str | None = typer.Option(None, "--api-key-env", help="Environment variable that holds the API key."),
    attempts: int = typer.Option(defaults.ATTEMPTS, "--attempts", "-k", min=1, help="Attempts per task (for pass@k)."),
    concurrency: int = typer.Option(
        defaults.CONCURRENCY, "--concurrency", "-c", min=1, help="Sandboxes (trials) at once."
    ),
    model_concurrency: int = typer.Option(
        defaults.MODEL_CONCURRENCY, "--model-concurrency", min=1, help="Model requests in flight at once."
    ),
    temperature: float = typer.Option(
        defaults.TEMPERATURE, "--temperature", help="Sampling temperature (part of the trials' identity)."
    ),
    top_p: float = typer.Option(
        defaults.TOP_P, "--top-p", help="Nucleus sampling top-p (part of the trials' identity)."
    ),
    max_tokens: int = typer.Option(
        defaults.MAX_TOKENS, "--max-tokens", help="Completion tokens per model reply (part of the trials' identity)."
    ),
    seed: int | None = typer.Option(None, "--seed", help="Sampling seed sent to the endpoint (default: none)."),
    max_turns: int = typer.Option(
        defaults.MAX_TURNS, "--max-turns", min=1, help="Agent turns per trial (part of the trials' identity)."
    ),
    max_context: int | None = typer.Option(
        None,
        "--max-context",
        min=1,
        help="Stop an agent whose next request would exceed this many tokens (outcome context_exceeded; part of the trials' identity). Default: only the endpoint's own limit.",
    ),
    request_timeout: float = typer.Option(
        defaults.REQUEST_TIMEOUT, "--request-timeout", help="Seconds per model request before it is retried."
    ),
    max_retries: int = typer.Option(
        defaults.MAX_RETRIES,
        "--max-retries",
        min=0,
        help="Retries per model request (429, 5xx, timeouts) before the trial ends as infra_error.",
    ),
    price_in: float | None = typer.Option(None, "--price-in", help="USD per million prompt tokens."),
    price_out: float | None = typer.Option(None, "--price-out", help="USD per million completion tokens."),
    retry: str | None = typer.Option(
        None,
        "--retry",
        help="'infra': rerun trials that ended in endpoint or sandbox errors; 'unjudged': rerun trials that ended unjudged (set the judge first).",
    ),
    task: list[str] = typer.Option([], "--task", "-t", help="Only these task names (repeatable)."),
    executor: str = typer.Option(
        "local",
        "--executor",
        help="Where trials run: 'local' (this process's event loop), 'processes' (worker processes on this machine, --concurrency shared among them) or 'ray' (a Ray cluster, --concurrency per node; needs the 'ray' extra).",
    ),
    workers: int | None = typer.Option(
        None, "--workers", min=1, help="With --executor processes: how many worker processes (default: one per core)."
    ),
    address: str | None = typer.Option(
        None,
        "--address",
        help="With --executor ray: the cluster's address (host:6379). Default: $RAY_ADDRESS, else a cluster `ray start` began on this machine, else a Ray just for this run.",
    ),
    no_preflight: bool = typer.Option(
        False,
        "--no-preflight",
        help="Skip the one-token request that checks the endpoint before any work (for endpoints that charge per request).",
    ),
    store: Path | None = typer.Option(
        None,
        "--store",
        help="Trial store shared across run folders: finished trials with the same identity are taken from it, not run again. Default: .trial-store beside --out.",
    ),
    no_store: bool = typer.Option(
        False, "--no-store", help="Run every trial here, taking none from the trial store and keeping none in it."
    ),
    network: str = typer.Option("task", "--network", help=NETWORK_HELP + " Part of the trials' identity."),
) -> None:
    """Run an agent on every task (k attempts each), verify, and keep every trajectory. Resumable."""
    from agentmill.agents import agent_class, agent_names
    from agentmill.models import LOCAL_MODEL, Prices, SamplingParams
    from agentmill.models.session import served_name
    from agentmill.rollout.commands import default_store, execute_rollout, infra_exit, report_line, rollout_tasks
    from agentmill.rollout.config import RolloutConfig

    if agent not in agent_names():
        _fail(f"--agent: unknown agent '{agent}' (known: {', '.join(agent_names())})")
    network = _network(network)
    if retry not in (None, "infra", "unjudged"):
        _fail("--retry: use 'infra' or 'unjudged'")
    if retry == "unjudged" and not (
        os.environ.get("AGENTMILL_JUDGE_MODEL") and os.environ.get("AGENTMILL_JUDGE_BASE_URL")
    ):
        _fail(
            "--retry unjudged: set AGENTMILL_JUDGE_MODEL and AGENTMILL_JUDGE_BASE_URL first (they would end unjudged again)"
        )
    needs_model = agent_class(agent).needs_model
    if needs_model and not model:
        _fail(f"--model: the {agent} agent needs a model (a name at --base-url, or 'local')")
    if needs_model and model != LOCAL_MODEL and not base_url:
        _fail("--base-url: give the endpoint of --model (or use --model local)")
    root = _dataset_root(dataset, sample, task, sample_tools)
    served = served_name(model) if model else None
    prices = Prices(input=price_in or 0.0, output=price_out or 0.0) if (price_in or price_out) else None
    try:
        config = RolloutConfig(
            dataset=str(root),
            agent=agent,
            agent_version=agent_class(agent).version,
            model=served if needs_model else None,
            sampling=SamplingParams(temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed),
            max_turns=max_turns,
            max_context=max_context,
            attempts=attempts,
            network=network,
            base_url=base_url,
            api_key_env=api_key_env,
            concurrency=concurrency,
            model_concurrency=model_concurrency,
            request_timeout=request_timeout,
            max_retries=max_retries,
            prices=prices,
        )
    except ValueError as e:
        _fail(f"invalid option: {str(e).splitlines()[-1]}")
    try:  # one task at a time, references spilled to disk: the driver's memory stays flat in the dataset's size
        refs = rollout_tasks(root, task, agent, say=lambda m: console.print(m, highlight=False))
    except AgentmillError as e:
        _fail(str(e))
    try:
        runner = _rollout_executor(executor, address, concurrency, model if needs_model else None, workers)
        report = execute_rollout(
            config,
            refs,
            out,
            model_name=model if needs_model else None,
            retry_infra=retry == "infra",
            retry_unjudged=retry == "unjudged",
            console=console,
            executor=runner,
            check_endpoint=not no_preflight,
            store=None if no_store else (store or default_store(out)),
        )
    except AgentmillError as e:
        _fail(str(e))
    except SystemExit as e:  # interrupted: the summary and the resume command are printed
        raise typer.Exit(cast(int, e.code)) from None  # the run exits with its exit code (exit_codes.py)
    finally:
        refs.close()
    console.print(report_line(report, out), highlight=False)
    _print_status(out, as_json=False)
    raise typer.Exit(infra_exit(out, console))


@app.command()
def status(
    run_dir: Path = typer.Argument(
        ..., help="A rollout folder (agentmill rollout --out) or a recipe run folder (agentmill run --out)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON, with every trial listed."),
) -> None:
    """Summarise a run: trials by outcome, mean reward, pass@1 / pass@k with standard error, tokens, cost, time."""
    _print_status(run_dir, as_json=as_json)


def _print_status(run_dir: Path, *, as_json: bool) -> None:
    from agentmill.rollout.commands import status_table
    from agentmill.rollout.status import summarize

    try:
        s = summarize(run_dir, trials=as_json)  # the table needs no list of every trial
    except AgentmillError as e:
        _fail(str(e))
    if as_json:
        print(json.dumps(s, indent=2))
        return
    out.print(status_table(s))


@app.command()
def export(
    run_dir: Path = typer.Argument(..., help="A rollout folder, or a recipe run folder (its rollout is exported)."),
    fmt: str = typer.Option(
        ..., "--format", "-f", help="trl | sharegpt | harbor | rl | harbor-job (a Harbor job folder)"
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Output file: .jsonl or .parquet (harbor-job: a new folder)"),
    reasoning: str = typer.Option(
        "think", "--reasoning", help="think: <think>...</think> before the answer; drop: no reasoning"
    ),
    tokenizer: Path | None = typer.Option(
        None, "--tokenizer", help="tokenizer.json, HF tokenizer folder or .gguf, for --max-tokens"
    ),
    filters_file: Path | None = typer.Option(None, "--filters", help="TOML file with a [filters] table"),
    min_turns: int | None = typer.Option(
        None,
        "--min-turns",
        help="Minimum assistant turns (default 5, and 2 for a tool-calling model agent's traces; 0 disables).",
    ),
    drop_outcome: list[str] = typer.Option(
        [], "--drop-outcome", help="Drop this outcome (repeatable; replaces the default set)."
    ),
    keep_all_outcomes: bool = typer.Option(False, "--keep-all-outcomes", help="Drop no outcome."),
    reward: str | None = typer.Option(
        None,
        "--reward",
        help="success | failure | any (default: any: failed traces are exported too; success keeps only passed ones)",
    ),
    min_reward: float | None = typer.Option(
        None, "--min-reward", help="Keep traces whose reward is at least this (default: no threshold)."
    ),
    completion: str | None = typer.Option(None, "--completion", help="claimed | unclaimed | any (default: any)"),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", help="Drop traces longer than this under the chat template."
    ),
    max_repeated_commands: int | None = typer.Option(
        None, "--max-repeated-commands", help="Drop traces with more repeated commands than this."
    ),
    max_error_rate: float | None = typer.Option(
        None, "--max-error-rate", help="Drop traces whose share of failing commands is above this (0-1)."
    ),
    max_truncated: int | None = typer.Option(
        None, "--max-truncated", help="Drop traces with more truncated observations than this."
    ),
    subagents: str | None = typer.Option(None, "--subagents", help="drop (default) | keep: subagent traces"),
    tamper: str | None = typer.Option(
        None, "--tamper", help="drop (default) | keep: trials with verifier tamper evidence"
    ),
    allow_empty: bool = typer.Option(
        False,
        "--allow-empty",
        help="Write an empty file when the filters keep nothing (default: exit 2 naming the rule).",
    ),
    workers: int | None = typer.Option(
        None,
        "--workers",
        help="Processes for trl/sharegpt/harbor rows (default: one per core from 400 trials; the rows are the same).",
    ),
) -> None:
    """Filter a run's trajectories and export them for SFT (trl, sharegpt, harbor) or RL (rl)."""
    from agentmill.traces.export import export_run
    from agentmill.traces.filters import FilterSpec

    if reasoning not in ("think", "drop"):
        _fail("--reasoning: use think or drop")
    kept_reasoning: Literal["think", "drop"] = "think" if reasoning == "think" else "drop"
    try:
        spec = FilterSpec.from_toml(filters_file) if filters_file else FilterSpec()
        spec = spec.merged(
            min_turns=min_turns,
            drop_outcomes=[] if keep_all_outcomes else (drop_outcome or None),
            reward=reward,
            min_reward=min_reward,
            completion=completion,
            max_tokens=max_tokens,
            max_repeated_commands=max_repeated_commands,
            max_error_rate=max_error_rate,
            max_truncated=max_truncated,
            subagents=subagents,
            tamper=tamper,
        )
        report = export_run(
            run_dir,
            fmt,
            out,
            spec=spec,
            reasoning=kept_reasoning,
            tokenizer=tokenizer,
            allow_empty=allow_empty,
            workers=workers,
        )
    except ValueError as e:
        _fail(f"invalid filter: {str(e).splitlines()[-1].strip()}")
    except AgentmillError as e:
        _fail(str(e))
    for line in report.skipped:
        console.print(f"[yellow]skipped:[/yellow] {line}", highlight=False)
    table = Table(title=f"filter funnel ({report.tokens})")
    for col in ("filter", "rule", "kept", "dropped"):
        table.add_column(col)
    for step in report.funnel:
        table.add_row(step.name, step.description, str(step.kept), str(step.dropped))
    console.print(table)
    console.print(
        f"{report.rows} rows -> {report.path}"
        + (f" (+ {', '.join(map(str, report.extra_files))})" if report.extra_files else "")
        + (f"; {report.redactions} secrets redacted" if report.redactions else ""),
        highlight=False,
    )


@app.command("run")
def run_recipe(
    recipe_path: Path = typer.Argument(..., help="A recipe file (TOML)."),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Run folder (default: runs/<recipe name> beside the recipe)."
    ),
    cache: Path | None = typer.Option(
        None, "--cache", help="Stage cache folder (default: <run folder>/stages); share it across runs to reuse stages."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and which stages are cached; run nothing."),
    no_preflight: bool = typer.Option(
        False, "--no-preflight", help="Skip the one-token request per endpoint that checks the models before any work."
    ),
) -> None:
    """Run a recipe: sources -> augment -> task filters -> mix -> rollouts -> trace filters -> export. Cached and resumable."""
    from agentmill.recipe.pipeline import Pipeline
    from agentmill.recipe.schema import load_recipe

    try:
        recipe, raw = load_recipe(recipe_path)
        run_dir = out or recipe_path.resolve().parent / "runs" / recipe.recipe.name
        pipeline = Pipeline(
            recipe,
            raw,
            run_dir,
            cache_dir=cache,
            say=lambda m: console.print(m, highlight=False),
            where=str(recipe_path),
        )
        plan = pipeline.plan()
    except AgentmillError as e:
        _fail(str(e))
    table = Table(title=f"recipe {recipe.recipe.name} -> {run_dir}")
    for col in ("stage", "key", "status", "what"):
        table.add_column(col)
    for step in plan:
        table.add_row(
            step.stage, step.key, "[green]cached[/green]" if step.cached else "[yellow]to run[/yellow]", step.what
        )
    (out_stdout if dry_run else console).print(table)
    if dry_run:
        return
    if not no_preflight:
        from agentmill.models.preflight import run_preflight
        from agentmill.recipe.preflight import recipe_probes

        try:
            run_preflight(recipe_probes(plan, where=str(recipe_path)))  # before the run folder is written
        except AgentmillError as e:
            _fail(str(e))
    from agentmill.progress import RolloutProgress
    from agentmill.runtime.signals import sigterm_as_interrupt

    def progress(total):
        p = RolloutProgress(total=total, console=console)
        p.__enter__()
        p.close = lambda: p.__exit__(None, None, None)
        return p

    from agentmill.errors import InfraStopError
    from agentmill.exit_codes import INFRA

    with sigterm_as_interrupt() as stop:
        try:
            reports = asyncio.run(pipeline.run(progress=progress))
        except InfraStopError as e:
            _fail(str(e), INFRA)
        except AgentmillError as e:
            _fail(str(e))
        except KeyboardInterrupt:
            from agentmill.rollout.commands import resume_command

            console.print(
                f"{stop.how}: finished stages stay cached and finished trials stay kept; only work in flight "
                f"is lost.\nresume with: {resume_command()}",
                highlight=False,
            )
            raise typer.Exit(stop.exit_code) from None
    funnel = Table(title="funnel")
    for col in ("stage", "in", "out", "dropped (top reasons)"):
        funnel.add_column(col, overflow="fold")
    for rep in reports:
        reasons = sorted(rep.reasons().items(), key=lambda kv: -kv[1])[:3]
        funnel.add_row(rep.stage, str(rep.count_in), str(rep.count_out), "; ".join(f"{n} x {r}" for r, n in reasons))
    out_stdout.print(funnel)
    console.print(f"run folder: {run_dir}", highlight=False)


@app.command()
def view(
    run_dir: Path = typer.Argument(
        ...,
        help="A rollout folder (agentmill rollout --out), a recipe run folder (agentmill run --out) "
        "or a synthesis store (agentmill synth run --out).",
    ),
    port: int = typer.Option(8765, "--port", "-p", help="Port on 127.0.0.1 (0: any free port)."),
    filters_file: Path | None = typer.Option(
        None,
        "--filters",
        help="Export filters (TOML [filters]) whose verdicts "
        "the list shows (default: the recipe's [trace_filters], else export's defaults).",
    ),
) -> None:
    """Browse a run's trials in a local web page (loopback only): filters, trajectories, verifier output, attempts side by side."""
    from agentmill.view.command import run_view

    try:
        run_view(run_dir, port, filters_file, console)
    except AgentmillError as e:
        _fail(str(e))


@app.command()
def report(
    run_dir: Path = typer.Argument(..., help="A recipe run folder made by `agentmill run`, or a rollout folder."),
    html: Path | None = typer.Option(None, "--out", "-o", help="HTML file (default: RUN/report.html)."),
) -> None:
    """Write a self-contained HTML report of a recipe run: funnel, source mix, turns, tokens, rewards."""
    from agentmill.recipe.report import write_report

    try:
        path = write_report(run_dir, html or run_dir / "report.html")
    except AgentmillError as e:
        _fail(str(e))
    console.print(f"report: {path}", highlight=False)


@app.command("diff")
def diff_cmd(
    a: Path = typer.Argument(..., help="An output folder: a recipe run, a rollout, an export folder."),
    b: Path = typer.Argument(..., help="The folder to compare it with."),
    ignore: list[str] = typer.Option([], "--ignore", help="A file or folder name to leave out (repeatable)."),
    alias: list[str] = typer.Option(
        [],
        "--alias",
        help="A_PATH=B_PATH: another folder of A's that B's stands for "
        "(their caches), masked like the run folders (repeatable).",
    ),
) -> None:
    """Compare two output folders value by value, apart from clocks, pids, hosts and their own paths.
    Exit 0 when they hold the same data, 1 when they differ (each difference listed)."""
    from agentmill.rundiff import compare

    for folder in (a, b):
        if not folder.is_dir():
            _fail(f"{folder}: not a folder")
    pairs = []
    for item in alias:
        if "=" not in item:
            _fail(f"--alias {item!r}: expected A_PATH=B_PATH")
        x, y = item.split("=", 1)
        pairs.append((str(Path(x).resolve()), str(Path(y).resolve())))
    result = compare(a, b, ignore=tuple(ignore), aliases=tuple(pairs))
    for d in result.differences:
        print(d.line())
    print(
        f"{result.files} files compared: "
        + (
            "same data"
            if result.same
            else f"{len(result.differences)} difference" + "s" * (len(result.differences) > 1)
        )
    )
    raise typer.Exit(0 if result.same else 1)


@app.command()
def ablate(
    matrix: Path = typer.Argument(..., help="An ablation matrix (TOML): base recipe, variants or grid, eval command."),
    out_dir: Path = typer.Option(..., "--out", "-o", help="Folder for every variant's run and the results."),
    cache: Path | None = typer.Option(
        None,
        "--cache",
        help="Stage cache to share, e.g. an earlier `agentmill run --cache DIR` (default: OUT/cache): stages a variant shares with it are reused.",
    ),
) -> None:
    """Build every variant's dataset, run the evaluation command per variant, and print the table."""
    from agentmill.recipe.ablate import run_ablation
    from agentmill.recipe.pipeline import Pipeline, build_stages
    from agentmill.recipe.schema import parse_recipe
    from agentmill.recipe.table import compute_table, render_table

    def parse(name: str, data: dict):
        where = f"{matrix} variant '{name}'"
        recipe = parse_recipe(data, where=where, base_dir=matrix.resolve().parent)
        build_stages(recipe, where=where)  # unknown stages and bad filter params, before anything is built
        return recipe

    def build(name: str, data: dict, variant_dir: Path) -> Path:
        pipeline = Pipeline(
            parse(name, data),
            data,
            variant_dir,
            cache_dir=cache or out_dir / "cache",
            say=lambda m: console.print(f"[{name}] {m}", highlight=False),
            where=f"{matrix} variant '{name}'",
        )
        asyncio.run(pipeline.run())
        return variant_dir / "exports"

    try:
        results = run_ablation(matrix, out_dir, build, validate=parse)
    except AgentmillError as e:
        _fail(str(e))
    out.print(render_table(compute_table(results)))
    failures = out_dir / "failures.json"
    if failures.exists():
        left = json.loads(failures.read_text())
        _fail(f"{len(left)} variant(s) left out: {', '.join(left)} (reasons in {failures})", 1)


@app.command("table")
def table_cmd(results: Path = typer.Argument(..., help="results.json: {variant: {benchmark: [scores]}}")) -> None:
    """Print the paper's ablation table: per-benchmark mean ± SE, raw average, normalised score, ranked."""
    from agentmill.recipe.table import compute_table, load_results, render_table

    try:
        data = load_results(results)  # every malformed value is one error naming the file and the key
    except AgentmillError as e:
        _fail(str(e))
    out.print(render_table(compute_table(data)))
    from agentmill.rl.eval import behaviour_table, telemetry_beside  # `agentmill eval` folders: behaviour too

    try:
        telemetry = telemetry_beside(results)
    except AgentmillError as e:
        _fail(str(e))
    if telemetry:
        out.print(behaviour_table(telemetry))


@app.command("eval")
def eval_cmd(
    dataset: Path | None = typer.Argument(None, help="A folder of task folders (or one task folder)."),
    sample: bool = typer.Option(False, "--sample", help="Use the bundled terminal tasks."),
    sample_tools: bool = typer.Option(False, "--sample-tools", help="Use the bundled tool tasks."),
    out_dir: Path = typer.Option(
        ..., "--out", "-o", help="Eval folder shared by every checkpoint: runs/, results.json, telemetry.json."
    ),
    label: str = typer.Option(
        ..., "--label", help="The checkpoint's name: its row in `agentmill table OUT/results.json`."
    ),
    benchmark: str | None = typer.Option(
        None, "--benchmark", help="The task set's column name. Default: the dataset folder's name."
    ),
    agent: str = typer.Option(
        "terminus", "--agent", help="The agent the checkpoint drives: terminus (terminal tasks) or tools (tool tasks)."
    ),
    model: str | None = typer.Option(
        None, "--model", help="The checkpoint's name at the endpoint, or 'local' for the embedded model."
    ),
    base_url: str | None = typer.Option(
        None, "--base-url", help="The OpenAI-compatible endpoint serving the checkpoint."
    ),
    api_key_env: str | None = typer.Option(None, "--api-key-env", help="Environment variable that holds the API key."),
    attempts: int = typer.Option(
        defaults.ATTEMPTS, "--attempts", "-k", min=1, help="Attempts per task: pass@1 and pass@k."
    ),
    concurrency: int = typer.Option(
        defaults.CONCURRENCY, "--concurrency", "-c", min=1, help="Sandboxes (trials) at once."
    ),
    temperature: float = typer.Option(defaults.TEMPERATURE, "--temperature", help="Sampling temperature."),
    max_tokens: int = typer.Option(defaults.MAX_TOKENS, "--max-tokens", help="Completion tokens per model reply."),
    seed: int | None = typer.Option(None, "--seed", help="Sampling seed sent to the endpoint (default: none)."),
    max_turns: int = typer.Option(defaults.MAX_TURNS, "--max-turns", min=1, help="Agent turns per trial."),
    task: list[str] = typer.Option([], "--task", "-t", help="Only these task names (repeatable)."),
    scores: Path | None = typer.Option(
        None, "--scores", help="Also write this checkpoint's {benchmark: [scores]} here (an `ablate` eval's {results})."
    ),
    no_preflight: bool = typer.Option(
        False, "--no-preflight", help="Skip the one-token request that checks the endpoint before any work."
    ),
    network: str = typer.Option("task", "--network", help=NETWORK_HELP),
) -> None:
    """Measure a served checkpoint on a task set: pass@k and behaviour, merged into OUT/results.json for `agentmill table`."""
    from pydantic import ValidationError

    from agentmill.models import SamplingParams
    from agentmill.rl.eval import EvalSpec, run_eval

    network = _network(network)
    ds = _load(dataset, sample, task, sample_tools)
    try:
        spec = EvalSpec(
            label=label,
            benchmark=benchmark or ds.root.name,
            agent=agent,
            model=model,
            base_url=base_url,
            api_key_env=api_key_env,
            attempts=attempts,
            concurrency=concurrency,
            sampling=SamplingParams(temperature=temperature, max_tokens=max_tokens, seed=seed),
            max_turns=max_turns,
            network=network,
        )
    except ValidationError as e:
        first = e.errors()[0]
        _fail(f"invalid option: {'.'.join(map(str, first['loc'])) or 'value'}: {first['msg']}")
    try:
        record = run_eval(spec, ds.tasks, ds.root, out_dir, console=console, check_endpoint=not no_preflight)
    except AgentmillError as e:
        _fail(str(e))
    except SystemExit as e:  # interrupted: the summary and the resume command are printed
        raise typer.Exit(cast(int, e.code)) from None  # the run exits with its exit code (exit_codes.py)
    if scores is not None:
        from agentmill.runtime.atomic import write_json_atomic

        write_json_atomic(scores, record.scores)
    _print_status(record.run_dir, as_json=False)
    console.print(
        f"recorded {label!r} in {out_dir / 'results.json'}; compare with: agentmill table {out_dir / 'results.json'}",
        highlight=False,
    )
    from agentmill.rollout.commands import infra_exit

    raise typer.Exit(infra_exit(record.run_dir, console, retry_hint=False))


@app.command()
def toolkit() -> None:
    """Build (once) the offline verifier toolkit: pytest, uv/uvx/curl/apt-get shims for test scripts."""
    from agentmill.verify.toolkit import ensure_toolkit

    path = ensure_toolkit(build=True)
    if path is None:
        _fail(
            "could not build the verifier toolkit (pip install of pytest failed: is the package registry reachable?)", 1
        )
    out.print(str(path))


@images_app.callback()
def images(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="JSON lines instead of a table.")
) -> None:
    """List cached images and layers with sizes and last use."""
    if ctx.invoked_subcommand is not None:
        return
    from agentmill.images.inventory import list_entries, render_table

    entries = list_entries()
    if as_json:
        for e in entries:
            out.print(e.model_dump_json(), highlight=False, soft_wrap=True)
    else:
        out.print(render_table(entries))


@images_app.command("prune")
def images_prune(
    older_than: float = typer.Option(7.0, "--older-than", min=0, help="Days without use before an entry goes."),
    everything: bool = typer.Option(False, "--all", help="Remove every cached image and layer."),
) -> None:
    """Remove images and layers unused for --older-than days (all with --all)."""
    from agentmill.images.inventory import prune

    removed = prune(older_than_days=older_than, everything=everything)
    freed = sum(e.size_bytes for e in removed)
    out.print(f"removed {len(removed)} entries, freed {freed / (1 << 20):.1f} MiB", highlight=False)


def _write_json(path: Path, data) -> None:
    from agentmill.runtime.atomic import write_json_atomic

    write_json_atomic(path, data)


@sandbox_app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def sandbox_run(
    ctx: typer.Context,
    workspace: Path | None = typer.Option(
        None, "--workspace", "-w", help="Host folder mounted writable at the same path; the command runs there."
    ),
    timeout: float = typer.Option(60.0, "--timeout", help="Wall-clock limit in seconds."),
    memory_mb: int = typer.Option(2048, "--memory-mb", help="Memory limit."),
) -> None:
    """Run one command in the default sandbox; print its output and exit code: `agentmill sandbox run -- CMD...`"""
    from agentmill.sandbox.oneshot import run_once

    command = list(ctx.args)
    if not command:
        _fail("give the command after --, e.g. agentmill sandbox run -- ls /")
    try:
        result = asyncio.run(run_once(command, workspace=workspace, timeout=timeout, memory_mb=memory_mb))
    except AgentmillError as e:
        _fail(str(e))
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    code = 124 if result.timed_out else (result.returncode if result.returncode >= 0 else 128 - result.returncode)
    note = (
        " (timed out)"
        if result.timed_out
        else (f" (killed by signal {-result.returncode})" if result.returncode < 0 else "")
    )
    console.print(f"exit code: {code}{note}", highlight=False)
    raise typer.Exit(code)


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
