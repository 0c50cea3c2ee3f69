"""Stage: task augmentation with an LLM. Each strategy is a prompt file users can edit.

An augmented task is a copy of its parent's folder with a new instruction.md: it keeps the
environment and the verifier, records its parent and strategy (in task.toml's metadata), and is
kept only if the rewrite is valid: non-empty, not a copy, it keeps every anchor the tests check
(paths, file names, numbers, quoted literals, output formats), a judge (the model, cached) says it
asks for exactly what the original asks, and the oracle still passes where the task has a solution.
Every rejected rewrite is in the funnel with its reason.
"""

from __future__ import annotations

import asyncio
import difflib
import shutil
import tomllib
from pathlib import Path

import tomli_w

from agentmill.agents import OracleAgent
from agentmill.images import ImageBuilder
from agentmill.recipe.llm_cache import CachedModel
from agentmill.recipe.records import Drop, StageReport, TaskEntry
from agentmill.recipe.schema import Augment, Recipe
from agentmill.recipe.stage import Stage, StageContext, register_stage
from agentmill.recipe.stages.meaning import judge, lost_anchors, verifier_text
from agentmill.recipe.stages.model_identity import model_identity
from agentmill.rollout.network import DEFAULT_NETWORK, agent_internet
from agentmill.rollout.trial import run_trial
from agentmill.tasks import load_task
from agentmill.verify.outcome import Outcome

PROMPTS = Path(__file__).resolve().parent.parent / "prompts" / "augment"
JUDGE_PROMPT = "augment_judge.md"  # beside prompts/augment/, so no strategy can be called "judge"
MAX_SIMILARITY = 0.97  # above this the "rewrite" is a copy


def prompt_text(strategy: str, prompts_dir: Path | None) -> str:
    for folder in ([prompts_dir] if prompts_dir else []) + [PROMPTS]:
        path = folder / f"{strategy}.md"
        if path.exists():
            return path.read_text()
    raise FileNotFoundError(f"no prompt file for strategy '{strategy}'")


def judge_text(prompts_dir: Path | None) -> str:
    for folder in ([prompts_dir] if prompts_dir else []) + [PROMPTS.parent]:
        path = folder / JUDGE_PROMPT
        if path.exists():
            return path.read_text()
    raise FileNotFoundError(f"no prompt file {JUDGE_PROMPT}")


def clean_rewrite(text: str) -> str:
    text = text.strip()
    if text.startswith("```") and text.endswith("```"):
        text = text.strip("`").split("\n", 1)[-1].strip()
    return text


async def augment_tasks(
    tasks: list[TaskEntry],
    spec: Augment,
    model: CachedModel,
    out_dir: Path,
    *,
    builder: ImageBuilder,
    prompts_dir: Path | None,
    concurrency: int = 4,
) -> tuple[list[TaskEntry], StageReport]:
    report = StageReport(stage="augment", kind="augment", count_in=len(tasks))
    chosen = [t for t in tasks if not spec.sources or t.source in spec.sources]
    gate = asyncio.Semaphore(concurrency)
    (out_dir / "tasks").mkdir(parents=True, exist_ok=True)

    async def one(parent: TaskEntry, strategy: str, i: int) -> TaskEntry | Drop:
        name = f"{parent.name}~{strategy}{i}"
        prompt = prompt_text(strategy, prompts_dir).replace("{instruction}", parent.instruction)
        messages = [{"role": "user", "content": prompt}]
        if i:  # distinct variants: the cache key differs per index
            messages.insert(
                0, {"role": "system", "content": f"Variant {i + 1}: choose different wording from other variants."}
            )
        async with gate:
            text = clean_rewrite(await model.ask(messages))
        if not text:
            return Drop(name=name, reason="empty rewrite")
        if difflib.SequenceMatcher(None, text, parent.instruction.strip()).ratio() > MAX_SIMILARITY:
            return Drop(name=name, reason="rewrite is a copy of the original")
        if spec.check_anchors:
            lost = lost_anchors(parent.instruction, text, verifier_text(Path(parent.path)))
            if lost:
                more = f" and {len(lost) - 3} more" if len(lost) > 3 else ""
                return Drop(
                    name=name, reason=f"rewrite loses {', '.join(map(str, lost[:3]))}{more} (the tests check it)"
                )
        if spec.judge:
            async with gate:
                same, why = await judge(model, judge_text(prompts_dir), parent.instruction, text)
            if same is None:
                return Drop(name=name, reason=f"judge reply is neither yes nor no: {why!r}")
            if not same:
                return Drop(name=name, reason=f"judge: the rewrite asks for something else ({why})")
        folder = out_dir / "tasks" / name.replace("/", "__")
        _materialize(Path(parent.path), folder, text, parent, strategy)
        task = load_task(folder)
        if spec.verify_oracle and task.solution_script:
            async with gate:
                # the oracle has the internet where the rewritten task allows it, as its rollout will
                trial = await run_trial(task, OracleAgent(), builder, internet=agent_internet(DEFAULT_NETWORK, task))
            if trial.outcome is not Outcome.PASSED:
                return Drop(name=name, reason=f"oracle no longer passes ({trial.outcome.value})")
        return TaskEntry(
            name=name,
            path=str(folder),
            source=parent.source,
            content_hash=task.content_hash,
            instruction=task.instruction,
            parent=parent.content_hash,
            strategy=strategy,
        )

    jobs = [one(t, s, i) for t in chosen for s in spec.strategies for i in range(spec.per_task)]
    made = await asyncio.gather(*jobs)
    new = [m for m in made if isinstance(m, TaskEntry)]
    report.dropped += [m for m in made if isinstance(m, Drop)]
    out = (list(tasks) if spec.keep_original else [t for t in tasks if t not in chosen]) + new
    if not spec.keep_original:
        report.dropped += [Drop(name=t.name, reason="original replaced by its rewrites") for t in chosen]
    report.count_out = len(out)
    report.notes.append(f"{len(new)} augmented tasks from {len(chosen)} originals ({', '.join(spec.strategies)})")
    return out, report


def _materialize(src: Path, dest: Path, instruction: str, parent: TaskEntry, strategy: str) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "instruction.md").write_text(instruction.rstrip() + "\n")
    toml_path = dest / "task.toml"
    if toml_path.exists():
        data = tomllib.loads(toml_path.read_text())
        data.setdefault("metadata", {})["agentmill_augment"] = {
            "parent": parent.content_hash,
            "parent_name": parent.name,
            "strategy": strategy,
        }
        toml_path.write_text(tomli_w.dumps(data))


@register_stage
class AugmentStage(Stage):
    """New surface forms of the chosen sources' tasks; the originals pass through (unless replaced)."""

    name = kind = "augment"
    consumes = produces = "tasks"

    def __init__(self, recipe: Recipe):
        self.recipe, self.spec, self.step = recipe, recipe.augment, "augment"
        self.model = recipe.augment.model or recipe.model
        self.prompts_dir = recipe.resolve(recipe.augment.prompts_dir)

    def settings(self):
        prompts = {s: prompt_text(s, self.prompts_dir) for s in self.spec.strategies}
        if self.spec.judge:
            prompts["judge"] = judge_text(self.prompts_dir)
        return {
            "spec": self.spec.model_dump(exclude={"model"}),
            "model": model_identity(self.model),
            "prompts": prompts,
        }

    def describe(self) -> str:
        return f"augment: {', '.join(self.spec.strategies)}"

    async def run(self, records, ctx: StageContext):
        tasks = [t async for t in records]
        async with ctx.use_model(self.model) as model:
            out, report = await augment_tasks(
                tasks, self.spec, model, ctx.out, builder=ctx.builder, prompts_dir=self.prompts_dir
            )
        ctx.report.dropped += report.dropped
        ctx.report.notes += report.notes
        for t in out:
            yield t
