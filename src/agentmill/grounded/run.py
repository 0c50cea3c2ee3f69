"""A ground run over many seeds, into a store folder:

<store>/config.json      the run's configuration (endpoints' keys never: only variable names)
<store>/seeds.jsonl      the selected seeds, in greedy coverage order
<store>/results/<seed>.json   one SeedOutcome per seed (a finished seed is skipped on resume)
<store>/work/<seed>/     workspace, workspace.json (roles), graph, specs, teacher runs
<store>/tasks/<name>/    admitted task folders (the recipe source)
<store>/sft/trials/<id>/ admitted teacher runs, in a rollout folder's layout (`agentmill export <store>/sft`)
<store>/funnel.json      seeds per stage reached and attempts per admission gate
<store>/coverage.json    greedy coverage re-applied to the admitted tasks' real file families
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tomllib
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentmill.errors import AgentmillError
from agentmill.grounded.admission import Admission
from agentmill.grounded.assemble import Sources
from agentmill.grounded.corpus import build_corpus, default_corpus_dir
from agentmill.grounded.environment import EnvironmentConfig, dockerfile_text
from agentmill.grounded.patterns import PATTERN_NAMES
from agentmill.grounded.pipeline import GroundSettings, SeedOutcome, ground_seed
from agentmill.grounded.records import Seed, Spec
from agentmill.grounded.roles import Roles
from agentmill.grounded.seeds import candidate_seeds, greedy_cover, real_family_keys, select_seeds
from agentmill.grounded.store_io import read_record, read_seeds
from agentmill.images import ImageBuilder
from agentmill.runtime.atomic import write_text_atomic


class GroundConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seeds: int = Field(10, ge=1)
    concurrency: int = Field(4, ge=1)  # seeds in flight at once (each waits mostly on its model roles)
    files: list[str] = Field(default_factory=list)  # the user's own folders of real files
    corpus: bool = True  # also search the bundled offline corpus
    corpus_dir: str | None = None
    patterns: list[str] = Field(default_factory=list)  # only seeds of these execution patterns
    seeds_file: str | None = None  # your own seeds (`ground seeds --json` output, edited): used instead of selection
    settings: GroundSettings = Field(default_factory=GroundSettings)
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)  # the agent's image
    roles: Roles

    @field_validator("patterns")
    @classmethod
    def _patterns(cls, v: list[str]) -> list[str]:
        bad = [p for p in v if p not in PATTERN_NAMES]
        if bad:  # the same rule as `ground seeds --pattern`
            raise ValueError(f"unknown {bad} (known: {', '.join(PATTERN_NAMES)})")
        return v

    @classmethod
    def load(cls, path: Path) -> GroundConfig:
        try:
            raw = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise AgentmillError(f"{path}: {e}") from None
        try:
            config = cls.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            raise AgentmillError(f"{path}: field '{'.'.join(map(str, err['loc']))}': {err['msg']}") from None
        if config.seeds_file:  # relative to the config file, like files
            config.seeds_file = str((Path(path).parent / Path(config.seeds_file).expanduser()).resolve())
        env = config.environment
        if env.dockerfile:  # relative to the config file; read now, so a bad path stops the run before any seed
            env.dockerfile = str((Path(path).parent / Path(env.dockerfile).expanduser()).resolve())
            try:
                dockerfile_text(env)
            except AgentmillError as e:
                raise AgentmillError(f"{path}: {e}") from None
        return config


def sources(config: GroundConfig) -> Sources:
    roots: dict[str, Path] = {}
    for i, folder in enumerate(config.files):
        p = Path(folder).expanduser()
        if not p.is_dir():
            raise AgentmillError(f"files: {folder} is not a folder")
        roots[p.name if p.name not in roots else f"{p.name}{i}"] = p
    if config.corpus:
        corpus = Path(config.corpus_dir) if config.corpus_dir else default_corpus_dir()
        if not (corpus / "MANIFEST.json").exists():
            corpus = build_corpus(corpus)  # from the installed data packages; nothing is downloaded
        roots.setdefault("corpus", corpus)
    if not roots:
        raise AgentmillError("no sources: give --files DIR or keep the bundled corpus")
    return Sources(roots)


def choose_seeds(config: GroundConfig) -> list[Seed]:
    """The user's seeds file as it is (in its order, `patterns` still applied), else greedy selection."""
    if config.seeds_file:
        chosen = read_seeds(Path(config.seeds_file))
        return [s for s in chosen if not config.patterns or s.pattern in config.patterns]
    pool = candidate_seeds()
    if config.patterns:
        pool = [s for s in pool if s.pattern in set(config.patterns)]
    return select_seeds(pool, config.seeds)


async def run_ground(
    config: GroundConfig,
    store: Path,
    *,
    builder: ImageBuilder | None = None,
    seeds: list[Seed] | None = None,
    on_done=None,
    on_stage=None,
) -> list[SeedOutcome]:
    """`on_stage(seed_id, stage)` is called as each seed reaches a stage (progress while a teacher runs)."""
    seeds = seeds if seeds is not None else choose_seeds(config)
    results_dir = store / "results"
    finished = {
        s.seed_id: read_record(p, SeedOutcome, hint="; delete it to run that seed again")
        for s in seeds
        if (p := results_dir / f"{s.seed_id}.json").exists()
    }  # all checked before any work
    store.mkdir(parents=True, exist_ok=True)
    (store / "config.json").write_text(config.model_dump_json(indent=1))
    (store / "seeds.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in seeds))
    srcs = sources(config)
    (store / "sources.json").write_text(
        json.dumps(
            {
                name: {"root": str(root), "files": srcs.counts[name], "skipped": srcs.skipped[name]}
                for name, root in srcs.roots.items()
            },
            indent=1,
        )
    )
    builder = builder or ImageBuilder()
    results_dir.mkdir(exist_ok=True)
    clients: dict = {}  # one client per role, shared by the seeds in flight
    gate = asyncio.Semaphore(config.concurrency)

    async def one(seed: Seed) -> SeedOutcome:
        done = results_dir / f"{seed.seed_id}.json"
        if seed.seed_id in finished:  # finished before a kill: never paid for twice
            outcome = finished[seed.seed_id]
        else:
            try:
                async with gate:
                    outcome = await ground_seed(
                        seed,
                        srcs,
                        config.roles,
                        store,
                        builder,
                        config.settings,
                        clients,
                        environment=config.environment,
                        on_stage=(lambda stage, sid=seed.seed_id: on_stage(sid, stage)) if on_stage else None,
                    )
            except Exception as e:  # noqa: BLE001 - a bug or an OS error in one seed never stops the others
                outcome = SeedOutcome(
                    seed_id=seed.seed_id, stage="harness", error=f"{type(e).__name__}: {e}", fault="harness"
                )
            else:  # not written for a harness or endpoint failure: the next run tries that seed again
                if not infra_failed(outcome):
                    write_text_atomic(done, outcome.model_dump_json(indent=1))
        if on_done:
            on_done(outcome)
        return outcome

    try:
        outcomes = list(await asyncio.gather(*(one(s) for s in seeds)))  # in seed order, whatever finished first
    finally:
        for c in clients.values():
            await c.close()
    finish(store, seeds, outcomes)
    return outcomes


USED_ROLES = ("assembler", "grapher", "compiler", "teacher", "reviser", "judge")


def used_roles(config: GroundConfig) -> list[str]:
    return [r for r in USED_ROLES if r != "reviser" or config.settings.revise]


def infra_failed(outcome: SeedOutcome) -> bool:
    """The seed stopped because an endpoint failed: never a finished result (the next run retries it)."""
    return outcome.error is not None and (outcome.fault or "").startswith(("endpoint:", "harness"))


def _judged_by_admission(path: Path, admission: Admission) -> None:
    """A teacher run that ended unjudged (no judge inside the trial) was judged by admission: its
    checks passed and the rubric's quality reached the threshold, so the copy kept for SFT is passed."""
    result = json.loads(path.read_text())
    if result.get("outcome") != "unjudged":
        return
    result.update(
        outcome="passed",
        reward=1.0,
        exception=None,
        rewards={**result.get("rewards", {}), "rubric_quality": admission.quality, "reward": 1.0},
    )
    path.write_text(json.dumps(result, indent=1))


def finish(store: Path, seeds: list[Seed], outcomes: list[SeedOutcome]) -> None:
    stages = Counter(o.stage if o.error is None else f"failed at {o.stage} ({o.fault})" for o in outcomes)
    gates = Counter(a.admission.gate for o in outcomes for a in o.attempts)
    (store / "funnel.json").write_text(
        json.dumps(
            {
                "seeds": len(outcomes),
                "stages": dict(stages),
                "attempts": dict(gates),
                "admitted_tasks": sum(1 for o in outcomes if o.task),
            },
            indent=1,
        )
    )
    sft = store / "sft" / "trials"
    shutil.rmtree(sft, ignore_errors=True)
    sft.mkdir(parents=True)
    by_id = {s.seed_id: s for s in seeds}
    admitted = []
    for o in outcomes:
        for a in o.attempts:
            if a.admission.admitted:
                dst = sft / f"{o.seed_id}-{Path(a.run).name}"
                shutil.copytree(a.run, dst)
                _judged_by_admission(dst / "result.json", a.admission)
        if o.task and o.seed_id in by_id:
            spec = Spec.model_validate_json((Path(o.task) / "tests" / "spec.json").read_text())
            admitted.append((by_id[o.seed_id], list(o.files), [d.path for d in spec.deliverables], o.task))
    order = greedy_cover(admitted, lambda t: real_family_keys(t[0], t[1], t[2]), k=len(admitted))
    (store / "coverage.json").write_text(json.dumps([t[3] for t in order], indent=1))
