"""`agentmill ground ...`: the grounded-synthesis commands (a typer sub-app; cli.py adds it)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agentmill.errors import AgentmillError

app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Grounded synthesis (GraphForge): tasks built on real files, judged admission.",
)
err = Console(stderr=True, soft_wrap=True)
out = Console()


def _fail(message: str) -> NoReturn:
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False)  # "[roles.judge]" is text, not markup
    raise typer.Exit(2)


@app.command("seeds")
def seeds_cmd(
    k: int = typer.Option(20, "--k", help="Seeds to select (greedy by coverage gain)."),
    pattern: list[str] | None = typer.Option(None, "--pattern", help="Only this execution pattern (repeatable)."),
    json_out: Path | None = typer.Option(None, "--json", help="Write the selected seeds as JSON lines."),
) -> None:
    """Select seeds from the bundled O*NET 30.0 tables and print them."""
    from agentmill.grounded.patterns import PATTERN_NAMES
    from agentmill.grounded.seeds import candidate_seeds, select_seeds

    bad = [p for p in pattern or [] if p not in PATTERN_NAMES]
    if bad:
        _fail(f"--pattern: unknown {bad} (known: {', '.join(PATTERN_NAMES)})")
    stats: dict = {}
    pool = [s for s in candidate_seeds(stats=stats) if not pattern or s.pattern in pattern]
    chosen = select_seeds(pool, k)
    table = Table("seed", "occupation", "task type", "pattern", "files")
    for s in chosen:
        table.add_row(s.seed_id, s.occupation, s.task_type, s.pattern, s.file_family)
    out.print(table)
    err.print(
        f"O*NET rows {stats['rows']}: not digital {stats['not_digital']}, no pattern {stats['no_pattern']}, "
        f"unsupported {stats['unsupported']}; candidates {len(pool)}; selected {len(chosen)}",
        highlight=False,
    )
    if json_out:
        json_out.write_text("".join(s.model_dump_json() + "\n" for s in chosen))


@app.command("corpus")
def corpus_cmd(
    out_dir: Path | None = typer.Option(None, "--out", help="Folder (default: the agentmill cache)."),
    stats: bool = typer.Option(
        False,
        "--stats",
        help="Print files per family, sources, licences, seed "
        "coverage and a retrieval hit rate (built corpus only; nothing rebuilt).",
    ),
    sample: int = typer.Option(100, "--sample", min=1, help="--stats: seeds sampled for the hit rate."),
    json_out: Path | None = typer.Option(None, "--json", help="--stats: also write them as JSON."),
) -> None:
    """Build the offline corpus of real public files from the installed data packages."""
    from agentmill.grounded.corpus import STATS_NAME, build_corpus, default_corpus_dir

    if stats:
        from agentmill.grounded.corpus_report import corpus_report
        from agentmill.grounded.seeds import candidate_seeds

        path = out_dir or default_corpus_dir()
        if not (path / STATS_NAME).exists():
            _fail(f"{path}: no built corpus (run `agentmill ground corpus` first)")
        built = json.loads((path / STATS_NAME).read_text())
        report = {**built, **corpus_report(path, candidate_seeds(), sample=sample)}
        table = Table("family", "corpus files", "seeds expecting it")
        for fam in sorted(set(report["files_by_family"]) | set(report["seeds_by_family"])):
            table.add_row(fam, str(report["files_by_family"].get(fam, 0)), str(report["seeds_by_family"].get(fam, 0)))
        out.print(table)
        out.print(f"formats: {report['by_format']}\nsources: {report['by_package']}", highlight=False)
        for lic, n in report["by_licence"].items():
            out.print(f"  {n:5d}  {lic}", highlight=False)
        r = report["retrieval"]
        out.print(
            f"retrieval over {r['sample']} sampled seeds (top {r['k']}): family hit rate {r['family_hit_rate']:.1%}, "
            f"topical hit rate {r['topical_hit_rate']:.1%}",
            highlight=False,
        )
        if json_out:
            json_out.write_text(json.dumps(report, indent=1))
        return
    try:
        path = build_corpus(out_dir)
    except AgentmillError as e:
        _fail(str(e))
    n = len(json.loads((path / "MANIFEST.json").read_text()))
    out.print(f"{n} files in {path}")


@app.command("run")
def run_cmd(
    config: Path = typer.Argument(..., help="ground TOML: [roles.*] endpoints, seeds, [settings]."),
    store: Path = typer.Option(..., "--out", help="Store folder (resumable)."),
    files: list[Path] | None = typer.Option(None, "--files", help="A folder of your own real files (repeatable)."),
    seeds: int | None = typer.Option(None, "--seeds", help="Override the number of seeds."),
    seeds_file: Path | None = typer.Option(
        None, "--seeds-file", help="Your own seeds: `ground seeds --json` output, edited."
    ),
    no_preflight: bool = typer.Option(
        False, "--no-preflight", help="Skip the one-token request per role's endpoint that checks them before any work."
    ),
) -> None:
    """seeds -> workspaces -> evidence graphs -> specs -> teacher runs -> revision -> admission."""
    from agentmill.exit_codes import INFRA
    from agentmill.grounded.report import write_report
    from agentmill.grounded.roles import role_probes
    from agentmill.grounded.run import GroundConfig, choose_seeds, infra_failed, run_ground, used_roles
    from agentmill.models.outages import outage_lines
    from agentmill.models.preflight import run_preflight
    from agentmill.rollout.commands import resume_command
    from agentmill.runtime.signals import sigterm_as_interrupt

    try:
        cfg = GroundConfig.load(config)
        update: dict[str, object] = {}
        if files:
            update["files"] = [*cfg.files, *map(str, files)]
        if seeds:
            update["seeds"] = seeds
        if seeds_file:
            update["seeds_file"] = str(seeds_file.resolve())
        cfg = cfg.model_copy(update=update)
        chosen = choose_seeds(cfg)  # a bad seeds file stops here, before anything runs
        if not no_preflight:
            run_preflight(role_probes(cfg.roles, used_roles(cfg), str(config)))  # before the store is written

        from agentmill.progress import TrialProgress

        with (
            TrialProgress(len(chosen), what="seeds (ok = admitted)", console=err) as bar,
            sigterm_as_interrupt() as stop,
        ):

            def stage(seed_id, what):
                err.print(f"seed {seed_id}: {what}", highlight=False)

            def done(o):
                status = (
                    f"admitted -> {o.task}" if o.task else (o.error or ", ".join(a.admission.gate for a in o.attempts))
                )
                err.print(f"seed {o.seed_id}: {o.stage}: {status}", highlight=False)
                bar.advance(o.task is not None)

            try:
                outcomes = asyncio.run(run_ground(cfg, store, seeds=chosen, on_done=done, on_stage=stage))
            except KeyboardInterrupt:
                finished = len(list((store / "results").glob("*.json"))) if (store / "results").is_dir() else 0
                err.print(
                    f"{stop.how}: {finished} seeds finished and kept; seeds in flight run again.\n"
                    f"resume with: {resume_command()}",
                    highlight=False,
                )
                raise typer.Exit(stop.exit_code) from None
    except AgentmillError as e:
        _fail(str(e))
    try:
        report = write_report(store)
    except AgentmillError as e:
        _fail(str(e))
    admitted = sum(1 for o in outcomes if o.task)
    out.print(f"{admitted} of {len(outcomes)} seeds admitted; report: {report}")
    failed = [o for o in outcomes if infra_failed(o)]
    if failed:
        err.print(
            f"{len(failed)} seeds stopped by endpoint or harness failures (not kept: the same command runs them "
            "again):",
            highlight=False,
        )
        for line in outage_lines(o.error for o in failed):
            err.print(f"  {line}", highlight=False)
        if admitted == 0:
            raise typer.Exit(INFRA)


@app.command("report")
def report_cmd(
    store: Path = typer.Argument(...),
    out_file: Path | None = typer.Option(None, "--out", help="HTML file (default: STORE/report.html)."),
) -> None:
    """Write the store's HTML report (coverage, admission funnel, score distribution)."""
    from agentmill.grounded.report import write_report

    if not (store / "seeds.jsonl").exists():
        _fail(f"{store}: not a ground store (no seeds.jsonl)")
    try:
        out.print(str(write_report(store, out_file)))
    except AgentmillError as e:
        _fail(str(e))


@app.command("ratings")
def ratings_cmd(
    comparisons: Path = typer.Argument(..., help="JSON lines {a, b, winner: A|B|tie}."),
    anchor: str = typer.Option(..., "--anchor", help="The system held fixed."),
    anchor_rating: float = typer.Option(1667.0, "--anchor-rating", help="The anchor's fixed rating (Elo scale)."),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Bootstrap resamples for the 95% intervals."),
) -> None:
    """Bradley-Terry ratings on the Elo scale with bootstrap 95% intervals."""
    from agentmill.grounded.pairwise import ratings

    try:
        rows = [json.loads(line) for line in comparisons.read_text().splitlines() if line.strip()]
        outcomes = [(r["a"], r["b"], r["winner"]) for r in rows]
    except (OSError, ValueError, KeyError, TypeError) as e:
        _fail(f"{comparisons}: {type(e).__name__}: {e}")
    systems = sorted({s for a, b, _ in outcomes for s in (a, b)})
    if anchor not in systems:
        _fail(f"--anchor: '{anchor}' is not among the systems ({', '.join(systems)})")
    try:
        result = ratings(outcomes, systems, anchor=anchor, anchor_rating=anchor_rating, bootstrap=bootstrap)
    except ValueError as e:
        _fail(str(e))
    table = Table("system", "rating", "95% CI", "comparisons")
    for r in sorted(result, key=lambda r: -r.rating):
        table.add_row(r.system, f"{r.rating:.1f}", f"[{r.low:.1f}, {r.high:.1f}]", str(r.comparisons))
    out.print(table)


@app.command("decontaminate")
def decontaminate_cmd(
    store: Path = typer.Argument(...),
    benchmark: list[Path] = typer.Option(..., "--benchmark", help="Benchmark dataset folder (repeatable)."),
    rank: int = typer.Option(0, "--rank", min=0, help="Also list the N most similar pairs by 13-grams (paper: 20)."),
    comparisons: Path | None = typer.Option(
        None, "--comparisons", help="`ground compare --out` file over the benchmark's tasks."
    ),
    system: str | None = typer.Option(
        None, "--system", help="With --comparisons: the system whose win rate is split by occupation coverage."
    ),
    json_out: Path | None = typer.Option(None, "--json", help="Write the analyses as JSON."),
) -> None:
    """File-hash and 13-gram checks of admitted tasks (workspaces included) against benchmarks;
    optionally the closest pairs, occupation overlap and win rate by coverage."""
    from agentmill.grounded.contamination import check
    from agentmill.grounded.overlap import occupation_overlap, rank_similar, win_rate_by_coverage
    from agentmill.grounded.source import load_grounded_tasks

    if comparisons and not system:
        _fail("--comparisons needs --system NAME")
    benchmarks = [str(b) for b in benchmark]
    analyses: dict = {}
    try:
        tasks = load_grounded_tasks(store)
        found = check(tasks, benchmarks)
        if rank:
            analyses["ranking"] = rank_similar(tasks, benchmarks, top=rank)
            analyses["occupations"] = occupation_overlap(tasks, benchmarks)
        if comparisons and system:  # without a system the command stopped above
            rows = [json.loads(line) for line in comparisons.read_text().splitlines() if line.strip()]
            overlap = analyses.get("occupations") or occupation_overlap(tasks, benchmarks)
            analyses["win_rate_by_coverage"] = win_rate_by_coverage(rows, system, set(overlap["covered"]))
    except AgentmillError as e:
        _fail(str(e))
    except (OSError, ValueError, KeyError) as e:
        _fail(f"{comparisons}: {type(e).__name__}: {e}")
    for task, reason in found.items():
        out.print(f"{task}: {reason}", highlight=False)
    out.print(f"{len(found)} contaminated task(s)")
    if "ranking" in analyses:
        table = Table("task", "benchmark task", "shared 13-grams", "similarity")
        for r in analyses["ranking"]:
            table.add_row(r["task"], r["benchmark"], str(r["shared"]), f"{r['similarity']:.3f}")
        out.print(table)
        o = analyses["occupations"]
        share = "-" if o["covered_share"] is None else f"{o['covered_share']:.1%}"
        out.print(
            f"occupations: {len(o['covered'])} of {o['with_occupation']} benchmark tasks with a known occupation "
            f"are covered by the generated tasks ({share})",
            highlight=False,
        )
    if "win_rate_by_coverage" in analyses:
        for group, r in analyses["win_rate_by_coverage"].items():
            rate = "-" if r["win_rate"] is None else f"{r['win_rate']:.1%}"
            out.print(f"{system} win rate, {group}: {rate} over {r['comparisons']} comparisons", highlight=False)
    if json_out:
        json_out.write_text(json.dumps({"contaminated": found, **analyses}, indent=1))
    raise typer.Exit(1 if found else 0)


@app.command("arms")
def arms_cmd(
    config: Path = typer.Argument(..., help="ground TOML ([roles.student] or the teacher, [roles.judge])."),
    store: Path = typer.Option(..., "--store", help="A ground store with admitted tasks."),
    k: int = typer.Option(4, "--k", min=1, help="Student rollouts per query."),
    threshold: float = typer.Option(0.95, "--threshold", help="The anchored arm keeps a query above this score."),
    seed: int = typer.Option(0, "--seed", help="The random arm's seed."),
    per_pattern: int | None = typer.Option(
        None, "--per-pattern", min=1, help="At most N queries per execution pattern (GraphForge: 125)."
    ),
) -> None:
    """Selection arms for rejection sampling: anchored, unanchored and random picks among k rollouts."""
    from agentmill.grounded.arms import run_arms
    from agentmill.grounded.run import GroundConfig

    try:
        cfg = GroundConfig.load(config)
        summary = asyncio.run(
            run_arms(
                store,
                cfg.roles,
                k=k,
                threshold=threshold,
                seed=seed,
                max_turns=cfg.settings.max_turns,
                per_pattern=per_pattern,
                prompts_dir=Path(cfg.settings.prompts_dir) if cfg.settings.prompts_dir else None,
            )
        )
    except AgentmillError as e:
        _fail(str(e))
    out.print(
        "queries per pattern: " + ", ".join(f"{p} {n}" for p, n in sorted(summary["queries_by_pattern"].items())),
        highlight=False,
    )
    for arm, picks in summary["arms"].items():
        out.print(f"{arm}: {len(picks)} of {len(summary['pool'])} queries -> {store / 'arms' / arm}")


@app.command("compare")
def compare_cmd(
    config: Path = typer.Argument(..., help="ground TOML ([roles.pairwise] or [roles.judge])."),
    store: Path = typer.Option(..., "--store", help="The ground store whose tasks were run."),
    system: list[str] = typer.Option(..., "--system", help="NAME=FOLDER of runs (trials/*/deliverables), repeatable."),
    anchor: str = typer.Option(..., "--anchor", help="The system held fixed."),
    anchor_rating: float = typer.Option(1667.0, "--anchor-rating", help="The anchor's fixed rating (Elo scale)."),
    out_file: Path | None = typer.Option(None, "--out", help="Write the comparisons as JSON lines."),
) -> None:
    """Pairwise judge over systems' deliverables, then Bradley-Terry ratings (Elo scale, bootstrap CIs)."""
    from agentmill.grounded.pairwise import compare_systems, ratings
    from agentmill.grounded.run import GroundConfig
    from agentmill.grounded.source import load_grounded_tasks
    from agentmill.grounded.task_folder import read_spec

    systems = {}
    for item in system:
        name, sep, folder = item.partition("=")
        if not sep or not name or not Path(folder).is_dir():
            _fail(f"--system {item}: give NAME=FOLDER with an existing folder")
        systems[name] = Path(folder)
    if anchor not in systems or len(systems) < 2:
        _fail("--anchor must name one of at least two --system entries")
    try:
        cfg = GroundConfig.load(config)
        tasks = {t.name: read_spec(t) for t in load_grounded_tasks(store)}
        compared: list[str] = []

        async def go():
            client = cfg.roles.client("pairwise")
            try:
                return await compare_systems(tasks, systems, client, tasks_out=compared)
            finally:
                await client.close()

        outcomes = asyncio.run(go())
    except AgentmillError as e:
        _fail(str(e))
    if not outcomes:
        _fail("no task was run by two systems: nothing to compare")
    if out_file:
        out_file.write_text(
            "".join(
                json.dumps({"a": a, "b": b, "winner": w, "task": t}) + "\n" for (a, b, w), t in zip(outcomes, compared)
            )
        )
    table = Table("system", "rating", "95% CI", "comparisons")
    for r in sorted(
        ratings(outcomes, sorted(systems), anchor=anchor, anchor_rating=anchor_rating), key=lambda r: -r.rating
    ):
        table.add_row(r.system, f"{r.rating:.1f}", f"[{r.low:.1f}, {r.high:.1f}]", str(r.comparisons))
    out.print(table)


@app.command("sensitivity")
def sensitivity_cmd(
    config: Path = typer.Argument(..., help="ground TOML ([roles.judge])."),
    task: Path = typer.Option(..., "--task", help="A grounded task folder (e.g. STORE/tasks/NAME)."),
    deliverables: Path = typer.Option(..., "--deliverables", help="A run's deliverables folder."),
    target: list[str] = typer.Option(..., "--target", help="A cited file, or FILE#SHEET (repeatable)."),
    kind: list[str] | None = typer.Option(
        None, "--kind", help="remove, numbers, rows, citations (repeatable; default all)."
    ),
    json_out: Path | None = typer.Option(None, "--json", help="Write the reports as JSON."),
) -> None:
    """Judge sensitivity: re-score with a cited file removed or its numbers, rows or citations corrupted."""
    from agentmill.grounded.corruption import KINDS
    from agentmill.grounded.run import GroundConfig
    from agentmill.grounded.sensitivity import sensitivity
    from agentmill.grounded.task_folder import read_graph, read_spec

    kinds = kind or ["remove", *KINDS]
    bad = [k for k in kinds if k not in ("remove", *KINDS)]
    if bad:
        _fail(f"--kind: unknown {bad} (known: remove, {', '.join(KINDS)})")
    if not deliverables.is_dir():
        _fail(f"--deliverables: {deliverables} is not a folder")
    try:
        cfg = GroundConfig.load(config)
        spec, graph = read_spec(task), read_graph(task)
    except (AgentmillError, OSError, ValueError) as e:
        _fail(f"{e}")
    files = {n.file for n in graph.nodes} | {f"{n.file}#{n.locator.sheet}" for n in graph.nodes if n.locator.sheet}
    unknown = [t for t in target if t not in files]
    if unknown:
        _fail(f"--target: {unknown} cite no fact (cited: {', '.join(sorted(files))})")

    async def go():
        client = cfg.roles.client("judge")
        try:
            return [
                await sensitivity(
                    spec,
                    graph,
                    task / "environment" / "workspace",
                    deliverables,
                    client,
                    t,
                    kind=None if k == "remove" else k,
                )
                for t in target
                for k in kinds
            ]
        finally:
            await client.close()

    try:
        reports = asyncio.run(go())
    except AgentmillError as e:
        _fail(str(e))
    table = Table("change", "cited criteria", "mean drop (cited)", "mean |change| (others)")
    for r in reports:
        table.add_row(
            r.removed if ":" in r.removed else f"remove:{r.removed}",
            ", ".join(r.cited) or "-",
            "-" if r.mean_drop_cited is None else f"{r.mean_drop_cited:.3f}",
            "-" if r.mean_abs_change_others is None else f"{r.mean_abs_change_others:.3f}",
        )
    out.print(table)
    if json_out:
        json_out.write_text(json.dumps([r.model_dump() for r in reports], indent=1))
