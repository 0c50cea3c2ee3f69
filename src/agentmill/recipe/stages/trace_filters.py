"""Stage: trace filters over the rollout's traces, one trace at a time; a dropped trace's reason is
the first rule it fails, and the notes give the per-rule funnel."""

from __future__ import annotations

from agentmill.recipe.schema import Recipe
from agentmill.recipe.stage import Stage, StageContext, register_stage
from agentmill.traces.filters import Funnel, relax_hint, rules
from agentmill.traces.render import render
from agentmill.traces.tokens import TokenCounter


@register_stage
class TraceFilters(Stage):
    name = kind = "trace_filters"
    consumes = produces = "traces"

    def __init__(self, recipe: Recipe):
        self.spec, self.step = recipe.trace_filters, "trace_filters"

    def settings(self):
        return self.spec.model_dump()

    def describe(self) -> str:
        return "trace filters"

    async def run(self, records, ctx: StageContext):
        counter = TokenCounter()
        funnel = Funnel(rules(self.spec, counter, lambda rec: (render(rec.trajectory).messages, None)))
        async for rec in records:
            rec.passed_filters = []
            failed = funnel.admit(rec)
            if failed is None:
                yield rec
            else:
                ctx.drop(rec.trial_id, failed)
        ctx.report.notes += [
            f"{s.name}: kept {s.kept}, dropped {s.dropped} ({s.description})" for s in funnel.steps()[1:]
        ]

    def relax(self, reason: str) -> str | None:
        return relax_hint(reason, recipe=True)
