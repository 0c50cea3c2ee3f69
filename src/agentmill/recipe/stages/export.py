"""Stage: export the kept traces in one training format (a sink: it writes a file, yields nothing).

SFT formats read the trace filters' output. `rl` rows are task prompts, so trace-length rules do
not apply to them: the rl export reads the rollout's traces and applies the other trace filters.
Zero rows stops the run with the reason, unless the export says `allow_empty = true`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.recipe.schema import Recipe
from agentmill.recipe.stage import Stage, StageContext, aiter_of, in_thread_iter, register_stage
from agentmill.tasks.hashing import hash_file
from agentmill.traces.export import FOLDER_WRITERS, write_records
from agentmill.traces.filters import TRACE_LENGTH_RULES, Funnel, relax_hint, rules
from agentmill.traces.render import render
from agentmill.traces.tokens import TokenCounter
from agentmill.traces.writer import write_json

INFO = "dataset_info.json"


@register_stage
class ExportStage(Stage):
    name = kind = "export"
    consumes, produces = "traces", None

    def __init__(self, recipe: Recipe, index: int):
        self.recipe, self.spec = recipe, recipe.exports[index]
        same_format = [e for e in recipe.exports if e.format == self.spec.format]
        self.step = f"export-{self.spec.format}" if len(same_format) == 1 else f"export{index}-{self.spec.format}"
        self.prompt_rows = self.spec.format == "rl"
        self.upstream = "rollout" if self.prompt_rows else "trace_filters"

    def settings(self):
        tok = self.recipe.resolve(self.spec.tokenizer)
        spec = self.spec.model_dump(exclude={"token_budget"} if self.spec.token_budget is None else set())
        data = {**spec, "tokenizer": hash_file(tok) if tok and tok.is_file() else self.spec.tokenizer}
        if self.prompt_rows:  # reads the rollout directly: its own filters are part of its key
            data["filters"] = self.recipe.trace_filters.model_dump(exclude=set(TRACE_LENGTH_RULES))
        return data

    def describe(self) -> str:
        return f"export {self.spec.format} -> {self.spec.file}"

    async def run(self, records, ctx: StageContext):
        kept = self._filtered(records, ctx) if self.prompt_rows else records
        if self.spec.token_budget is not None:
            kept = aiter_of(await self._within_budget(kept, ctx, self.spec.token_budget))
        # rendering and writing run in a worker thread, pulling one trace at a time: bounded memory,
        # and the event loop stays free
        rows = in_thread_iter(kept, asyncio.get_running_loop())
        dest = ctx.out / self.spec.file
        if self.spec.format in FOLDER_WRITERS:  # written whole; what an unfinished run of this key left is not done
            shutil.rmtree(dest, ignore_errors=True)
        report = await asyncio.to_thread(
            write_records, rows, self.spec.format, dest, reasoning=self.spec.reasoning, allow_empty=True
        )
        ctx.report.count_out = report.rows
        ctx.note(f"{report.rows} rows -> {self.spec.file}")
        ctx.note(f"{report.redactions} secrets redacted")
        if report.rows == 0 and not self.spec.allow_empty:
            raise AgentmillError(
                f"{self.step}: 0 rows: {self._why_empty(ctx)}; or set allow_empty = true on this export"
            )
        return
        yield  # an async generator that yields nothing: a sink

    async def _within_budget(self, records, ctx: StageContext, budget: int) -> list:
        """A seeded sample of the traces whose rendered conversations fit the token budget, in their
        own order: two variants exported at one budget train on the same number of tokens."""
        counter = TokenCounter.load(self.recipe.resolve(self.spec.tokenizer))
        traces = [(rec, counter.count(render(rec.trajectory).messages)) async for rec in records]
        seed = str(self.recipe.recipe.seed).encode()
        order = sorted(range(len(traces)), key=lambda i: hashlib.sha256(seed + traces[i][0].trial_id.encode()).digest())
        chosen, used = set(), 0
        for i in order:
            if used + traces[i][1] <= budget:
                chosen.add(i)
                used += traces[i][1]
        for i, (rec, _) in enumerate(traces):
            if i not in chosen:
                ctx.drop(rec.trial_id, f"over the token budget ({self.spec.token_budget})")
        ctx.note(f"token budget {self.spec.token_budget}: {used} tokens in {len(chosen)} traces ({counter.label})")
        return [traces[i][0] for i in sorted(chosen)]

    async def _filtered(self, records, ctx: StageContext):
        funnel = Funnel(rules(self.recipe.trace_filters, prompt_rows=True))
        async for rec in records:
            rec.passed_filters = []
            failed = funnel.admit(rec)
            if failed is None:
                yield rec
            else:
                ctx.drop(rec.trial_id, failed)

    def _why_empty(self, ctx: StageContext) -> str:
        here = ctx.report
        if here.count_in and here.dropped:  # this export's own filters (rl) removed them
            reason = here.dropped[-1].reason
            return f"the trace filter '{reason}' removed the last traces: {relax_hint(reason, recipe=True)}"
        for rep in reversed(ctx.upstream):
            if rep.count_out == 0 and rep.count_in > 0 and rep.dropped:
                reason = rep.dropped[-1].reason
                hint = ctx.relax(rep.stage, reason) if ctx.relax else None
                return f"stage {rep.stage} removed the last records ({reason})" + (f": {hint}" if hint else "")
        first = next((rep for rep in ctx.upstream if rep.count_out == 0), None)
        if first is not None:
            notes = f" ({'; '.join(first.notes[:2])})" if first.notes else ""
            return f"stage {first.stage} produced no records{notes}"
        return "no records reached the export"

    def publish(self, out: Path, run_dir: Path) -> None:
        dest = run_dir / "exports"
        dest.mkdir(exist_ok=True)
        for f in out.iterdir():
            if f.is_dir() and not f.is_symlink():  # a folder format (harbor-job): replaced whole
                fresh = dest / f".{f.name}.tmp"
                shutil.rmtree(fresh, ignore_errors=True)
                shutil.copytree(f, fresh, symlinks=True)
                shutil.rmtree(dest / f.name, ignore_errors=True)
                fresh.rename(dest / f.name)
                continue
            if not f.is_file() or f.name == "done.json":
                continue
            if f.name == INFO and (dest / INFO).exists():  # several sharegpt exports share one dataset_info.json
                merged = _read_info(dest / INFO)
                merged.update(_read_info(f))
                write_json(merged, dest / INFO)
            else:
                shutil.copy2(f, dest / f.name)


def _read_info(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
