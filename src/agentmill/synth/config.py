"""`agentmill synth run CONFIG.toml`: every role an OpenAI-compatible endpoint, thresholds, counts.

    [synth]           seed, workers, max_slots, target_per_card, max_repairs, multiply_per_target,
                      meta_review_every, cards (a JSONL of capability cards), prompts (a folder)
    [env]             gyms = ["itsm"] (bundled) or gym_dir = "path/to/gym"
    [ballot]          k, target_max_solves, solver_min_solves, enabled
    [diagnosis]       optional: tasks, target_run, teacher_run, attempts, run_rollouts, thresholds,
                      include_stretch
    [roles.NAME]      base_url, model, api_key_env, temperature, max_tokens, ...   for NAME in
                      generator, critic, judge, target, solver (and card_writer, plus teacher when
                      the diagnosis runs its rollouts, with [diagnosis]); model = "local" and no
                      base_url: the embedded SmolLM2 (one server for every such role)
Relative paths resolve against the config file's folder.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentmill.errors import AgentmillError
from agentmill.models.client import ModelClient, Prices, SamplingParams
from agentmill.models.local import LOCAL_MODEL
from agentmill.models.session import served_name
from agentmill.synth.barrier import BarrierConfig
from agentmill.synth.candidate import GymSet
from agentmill.synth.diagnosis import Thresholds

ROLES = ("generator", "critic", "judge", "target", "solver")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RoleConfig(_Strict):
    base_url: str | None = Field(None, description='the endpoint; not for model = "local" (the embedded SmolLM2)')
    model: str
    api_key_env: str | None = None
    temperature: float = Field(0.7, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int = Field(4096, gt=0)
    seed: int | None = None
    max_retries: int = Field(6, ge=0)
    timeout: float = Field(600.0, gt=0)
    concurrency: int = Field(16, ge=1)
    prices: Prices | None = None
    json_schema: bool = Field(True, description="ask for schema-constrained JSON where the role answers JSON")

    @model_validator(mode="after")
    def _endpoint(self) -> RoleConfig:
        if self.base_url is None and self.model != LOCAL_MODEL:
            raise ValueError(f"model '{self.model}' needs base_url (or use model = \"{LOCAL_MODEL}\")")
        return self

    @property
    def is_local(self) -> bool:
        return self.model == LOCAL_MODEL

    def sampling(self) -> SamplingParams:
        return SamplingParams(
            temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens, seed=self.seed
        )

    def client(self, local_url: str | None = None, role: str = "NAME") -> ModelClient:
        """`local_url`: where the embedded model is served, for a role with model = "local"."""
        url = local_url if self.is_local else self.base_url
        if url is None:  # the validator gives every other role its base_url: only a local one lacks it here
            raise AgentmillError(
                "the embedded model is not running (open the roles with synth.clients.open_role_clients)"
            )
        return ModelClient.from_env(
            base_url=url,
            model=served_name(self.model),
            api_key_env=self.api_key_env,
            key_hint=f"[roles.{role}] api_key_env",
            sampling=self.sampling(),
            timeout=self.timeout,
            max_retries=self.max_retries,
            backoff_base=0.2,
            max_concurrency=self.concurrency,
            prices=self.prices,
        )


class BallotConfig(_Strict):
    enabled: bool = True
    k: int = Field(3, ge=1)
    target_max_solves: int = Field(1, ge=0, description="the target may solve at most this many of k")
    solver_min_solves: int = Field(2, ge=0, description="the stronger solver must solve at least this many of k")
    max_turns: int = Field(30, ge=1)
    concurrency: int = Field(6, ge=1)

    @model_validator(mode="after")
    def _reachable(self) -> BallotConfig:
        if self.solver_min_solves > self.k:
            raise ValueError(f"solver_min_solves {self.solver_min_solves} > k {self.k}: no candidate could pass")
        return self


class DiagnosisConfig(_Strict):
    tasks: Path = Field(description="the evaluation tool tasks")
    target_run: Path = Field(description="a rollout of the target model on them")
    teacher_run: Path = Field(description="a rollout of the teacher on them")
    run_rollouts: bool = Field(True, description="run (or resume) both rollouts here with roles target and teacher")
    attempts: int = Field(3, ge=1, description="attempts per task and model when run_rollouts")
    thresholds: Thresholds = Field(default_factory=Thresholds)
    include_stretch: bool = False


class SynthSettings(_Strict):
    seed: int = 0
    workers: int = Field(2, ge=1)
    max_slots: int = Field(20, ge=1, description="target-stage boxes at most")
    target_per_card: int = Field(2, ge=0)
    max_repairs: int = Field(2, ge=0, description="repairs after the first attempt")
    multiply_per_target: int = Field(0, ge=0)
    meta_review_every: int = Field(4, ge=1, description="boxes between meta-reviews")
    flag_after_failures: int = Field(3, ge=1, description="a card whose boxes keep failing is flagged")
    cards: Path | None = Field(None, description="JSONL of capability cards (else [diagnosis] writes them)")
    prompts: Path | None = Field(None, description="a folder overriding the bundled prompt files")
    semantic_min_score: float = Field(6.0, ge=0, le=10)
    benchmarks: list[Path] = Field(
        default_factory=list,
        description="evaluation task folders no sample may overlap (the diagnosis tasks always count)",
    )
    duplicate_threshold: float = Field(
        0.85,
        gt=0,
        le=1,
        description="request/state/calls similarity (Jaccard of word "
        "3-grams) at which a candidate repeats an accepted sample",
    )
    outage_pause_s: float = Field(30.0, ge=0, description="first pause when an endpoint or sandbox fails (doubles)")
    outage_retries: int = Field(3, ge=0, description="pauses before a box ends interrupted")
    max_tokens: int | None = Field(
        None,
        gt=0,
        description="budget: prompt + completion tokens of every role, all runs "
        "of this folder together; no box starts once it is spent",
    )
    max_cost_usd: float | None = Field(None, gt=0, description="budget: cost of every priced role, all runs together")


class SynthConfig(_Strict):
    synth: SynthSettings = Field(default_factory=SynthSettings)
    env: GymSet
    ballot: BallotConfig = Field(default_factory=BallotConfig)
    barrier: BarrierConfig = Field(default_factory=BarrierConfig)
    diagnosis: DiagnosisConfig | None = None
    roles: dict[str, RoleConfig]

    @model_validator(mode="after")
    def _complete(self) -> SynthConfig:
        needed = list(ROLES) if self.ballot.enabled else [r for r in ROLES if r not in ("target", "solver")]
        if self.diagnosis is not None:
            needed.append("card_writer")
            if self.diagnosis.run_rollouts:
                needed += [r for r in ("target", "teacher") if r not in needed]
        missing = [r for r in needed if r not in self.roles]
        if missing:
            raise ValueError(f"roles: missing [roles.{missing[0]}] (needed: {', '.join(needed)})")
        if self.synth.cards is None and self.diagnosis is None:
            raise ValueError("synth.cards or [diagnosis]: say where the capability cards come from")
        if not self.env.gyms and self.env.gym_dir is None:
            raise ValueError("env: set gyms = [...] or gym_dir")
        return self


def _resolve(cfg: SynthConfig, base: Path) -> SynthConfig:
    def fix(p: Path) -> Path:
        return p if p.is_absolute() else (base / p).resolve()

    def fix_optional(p: Path | None) -> Path | None:
        return None if p is None else fix(p)

    cfg.synth.cards, cfg.synth.prompts, cfg.env.gym_dir = (
        fix_optional(cfg.synth.cards),
        fix_optional(cfg.synth.prompts),
        fix_optional(cfg.env.gym_dir),
    )
    cfg.synth.benchmarks = [fix(p) for p in cfg.synth.benchmarks]
    if cfg.diagnosis is not None:
        d = cfg.diagnosis
        d.tasks, d.target_run, d.teacher_run = fix(d.tasks), fix(d.target_run), fix(d.teacher_run)
    return cfg


def _check_gyms(env: GymSet, path: Path) -> None:
    """A gym that is not there is one clear error when the config loads, before the output folder is touched."""
    from agentmill.tasks.tool_task import bundled_gym_names

    known = bundled_gym_names()
    for name in env.gyms:
        if name not in known:
            raise AgentmillError(
                f"{path}: field 'env.gyms': unknown gym {name!r} (bundled: {', '.join(known)}; "
                "or gym_dir = a gym folder)"
            )
    if env.gym_dir is not None:
        missing = [f for f in ("schema.sql", "tools.py") if not (env.gym_dir / f).is_file()]
        if not env.gym_dir.is_dir() or missing:
            raise AgentmillError(
                f"{path}: field 'env.gym_dir': {env.gym_dir}: "
                + ("no such folder" if not env.gym_dir.is_dir() else f"not a gym (no {', '.join(missing)})")
            )


def load_config(path: Path) -> SynthConfig:
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise AgentmillError(f"{path}: no such config file") from None
    except tomllib.TOMLDecodeError as e:
        raise AgentmillError(f"{path}: invalid TOML: {e}") from None
    try:
        cfg = SynthConfig.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        # a check across fields has no location: its message names what is wrong
        raise AgentmillError(
            f"{path}: " + (f"field '{field}': " if field else "") + err["msg"].removeprefix("Value error, ")
        ) from None
    cfg = _resolve(cfg, path.parent.resolve())
    _check_gyms(cfg.env, path)
    for bench in cfg.synth.benchmarks:
        if not bench.exists():
            raise AgentmillError(f"{path}: field 'synth.benchmarks': {bench}: no such folder")
    return cfg
