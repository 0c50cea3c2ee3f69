"""The recipe file (TOML): every choice of the six-stage recipe, one table each, validated.

A bad key or value raises one error naming the key. Paths are relative to the recipe file.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentmill import defaults
from agentmill.agents.registry import agent_names
from agentmill.errors import AgentmillError
from agentmill.recipe.source_kinds import PLAIN, source_kinds
from agentmill.recipe.stage import registered
from agentmill.traces.filters import FilterSpec


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Meta(_Strict):
    name: str = "recipe"
    seed: int = 0


class ModelSpec(_Strict):
    """A model endpoint: a name at `base_url`, or `local` for the embedded smoke-test model."""

    name: str = "local"
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float = defaults.TEMPERATURE
    top_p: float = defaults.TOP_P
    max_tokens: int = defaults.MAX_TOKENS
    concurrency: int = defaults.MODEL_CONCURRENCY
    # Sampling seed; unset: the recipe's seed. Each request gets one derived from it (models/seeding.py),
    # so a rerun samples the same answers where the endpoint honours seeds.
    seed: int | None = None

    @model_validator(mode="after")
    def _endpoint(self):
        if self.name != "local" and not self.base_url:
            raise ValueError(f"model '{self.name}' needs base_url (or use name = \"local\")")
        return self


class Source(_Strict):
    name: str
    # harbor: `path` holds task folders; a producer's kind (source_kinds.py): `path` is its output
    # folder (grounded: an `agentmill ground` store; synth: an `agentmill synth run --out` folder)
    kind: str = PLAIN
    path: str | None = None
    sample: bool = False  # the bundled sample tasks
    tasks: list[str] = Field(default_factory=list)  # only these task names
    score: float | None = None  # ranking score for top-N mixing
    params: dict[str, Any] = Field(default_factory=dict)  # a generator kind's options (docs/sources.md)

    @model_validator(mode="after")
    def _one_place(self):
        if self.path is not None and self.sample:
            raise ValueError(f"source '{self.name}': give exactly one of path or sample = true")
        if self.path is None and not self.sample and not (self.kind != PLAIN and self.params):
            raise ValueError(f"source '{self.name}': give exactly one of path or sample = true")
        if self.kind not in source_kinds():
            raise ValueError(f"source '{self.name}': unknown kind {self.kind!r} (known: {', '.join(source_kinds())})")
        if self.kind == PLAIN and self.params:
            raise ValueError(
                f"source '{self.name}': params are a generator kind's options; kind \"{PLAIN}\" takes none"
            )
        if self.kind != PLAIN and self.path is None and not self.params:
            raise ValueError(f"source '{self.name}': kind = \"{self.kind}\" needs path = the producer's output folder")
        return self


class Augment(_Strict):
    strategies: list[Literal["constrain", "harden", "mixed", "trace_hints", "rewrite"]] = Field(default_factory=list)
    per_task: int = Field(1, ge=1)
    sources: list[str] = Field(default_factory=list)  # empty: every source
    keep_original: bool = True
    check_anchors: bool = True  # every path, file name, number, literal and format the tests check must survive
    judge: bool = True  # ask the model whether the rewrite asks for exactly what the original asks
    verify_oracle: bool = True
    model: ModelSpec | None = None  # defaults to [model]
    prompts_dir: str | None = None


class TaskFilter(_Strict):
    kind: str  # a registered task filter: response_length, askllm, decontaminate, starts, dedupe, ...
    params: dict[str, Any] = Field(default_factory=dict)
    model: ModelSpec | None = None
    sources: list[str] = Field(default_factory=list)  # only these sources' tasks (empty: every source)
    per_source: bool = False  # run over each source's tasks separately (a top-k cut keeps k per source)
    placement: Literal["before_mix", "after_mix"] = "before_mix"  # before the mix, or over the mixed set

    @field_validator("kind")
    @classmethod
    def _registered(cls, kind: str) -> str:
        known = sorted(n for n, c in registered().items() if c.kind == "task_filter")  # looked up now, not at import
        if kind not in known:
            raise ValueError(f"unknown task filter {kind!r} (known: {', '.join(known)})")
        return kind


class Mix(_Strict):
    top_n: int | None = Field(None, ge=1)  # None: every source
    budget: int | None = Field(None, ge=1)  # None: every task
    ranking: list[str] = Field(default_factory=list)  # source names, best first
    ranking_table: str | None = None  # an ablation results.json: variants named after sources
    upsample: Literal["cycle", "weights", "none"] = "cycle"


class Rollout(_Strict):
    agent: str = "terminus"  # a registered agent: terminus (terminal tasks), tools (tool tasks), oracle, nop, ...
    model: ModelSpec | None = None  # defaults to [model]
    attempts: int = Field(defaults.ATTEMPTS, ge=1)
    concurrency: int = Field(defaults.CONCURRENCY, ge=1)
    max_turns: int = Field(defaults.MAX_TURNS, ge=1)
    temperature: float | None = None  # overrides the model's
    # as `agentmill rollout --network` (rollout/network.py)
    network: Literal["task", "none", "all"] = Field(
        "task",
        description="the agents' internet: where task.toml says allow_internet = true (task), never (none) or always (all); part of the trials' identity",
    )
    # Where trials run (not identity: a run may move between executors): "local", "processes"
    # (`workers` processes on this machine, default one per core, sharing `concurrency`), or "ray"
    # (a cluster; concurrency is then per node) at `address` (default: $RAY_ADDRESS, else a local Ray).
    executor: Literal["local", "processes", "ray"] = "local"
    address: str | None = None
    workers: int | None = Field(None, ge=1)

    @field_validator("agent")
    @classmethod
    def _registered_agent(cls, agent: str) -> str:
        if agent not in agent_names():
            raise ValueError(f"unknown agent {agent!r} (known: {', '.join(agent_names())})")
        return agent

    @model_validator(mode="after")
    def _address_needs_ray(self) -> Rollout:
        if self.address and self.executor != "ray":
            raise ValueError('address: only with executor = "ray"')
        if self.workers is not None and self.executor != "processes":
            raise ValueError('workers: only with executor = "processes"')
        return self


class Export(_Strict):
    format: Literal["trl", "sharegpt", "harbor", "rl", "harbor-job"]
    file: str  # a file in the run's exports/ (harbor-job: a folder)
    reasoning: Literal["think", "drop"] = "think"
    tokenizer: str | None = None
    allow_empty: bool = False  # zero rows stops the run unless this is set
    # The matched token-budget control: two variants exported at one budget train on equal tokens.
    token_budget: int | None = Field(None, ge=1)  # at most this many training tokens: a seeded sample of the traces


class Recipe(_Strict):
    recipe: Meta = Field(default_factory=Meta)
    model: ModelSpec = Field(default_factory=ModelSpec)
    sources: list[Source] = Field(min_length=1)
    augment: Augment = Field(default_factory=Augment)
    task_filters: list[TaskFilter] = Field(default_factory=list)
    mix: Mix = Field(default_factory=Mix)
    rollout: Rollout = Field(default_factory=Rollout)
    trace_filters: FilterSpec = Field(default_factory=FilterSpec)
    exports: list[Export] = Field(default_factory=lambda: [Export(format="trl", file="trl.jsonl")])

    base_dir: Path | None = Field(None, exclude=True)

    @model_validator(mode="after")
    def _filters_name_known_sources(self) -> Recipe:
        names = {s.name for s in self.sources}
        for i, f in enumerate(self.task_filters):
            for name in f.sources:
                if name not in names:
                    raise ValueError(
                        f"task_filters.{i}.sources: no source named {name!r} (sources: {', '.join(sorted(names))})"
                    )
        return self

    @field_validator("sources")
    @classmethod
    def _unique_sources(cls, sources: list[Source]) -> list[Source]:
        names = [s.name for s in sources]
        if len(set(names)) != len(names):
            raise ValueError("source names must be unique")
        return sources

    @model_validator(mode="after")
    def _seeded_models(self) -> Recipe:
        """Every model the recipe names samples with the recipe's seed unless it names its own."""
        specs = [self.model, self.augment.model, self.rollout.model, *(f.model for f in self.task_filters)]
        for spec in specs:
            if spec is not None and spec.seed is None:
                spec.seed = self.recipe.seed
        return self

    def resolve(self, path: str | None) -> Path | None:
        if path is None:
            return None
        p = Path(path)
        return p if p.is_absolute() or self.base_dir is None else (self.base_dir / p).resolve()


def parse_recipe(data: dict[str, Any], *, where: str, base_dir: Path | None = None) -> Recipe:
    try:
        recipe = Recipe.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        hint = ""
        if err["type"] == "extra_forbidden":
            from agentmill.recipe.suggest import did_you_mean

            hint = did_you_mean(Recipe, err["loc"])
        raise AgentmillError(f"{where}: {key}: {err['msg'].removeprefix('Value error, ')}{hint}") from None
    recipe.base_dir = base_dir
    return recipe


def load_recipe(path: Path) -> tuple[Recipe, dict[str, Any]]:
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise AgentmillError(f"{path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise AgentmillError(f"{path}: invalid TOML: {e}") from None
    return parse_recipe(data, where=str(path), base_dir=path.parent.resolve()), data
