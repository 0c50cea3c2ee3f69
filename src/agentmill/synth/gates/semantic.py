"""Semantic check: a judge model reads the whole candidate (system spec, prompt, seed state, entities,
reference calls and answer, verifiers) and says whether a real user would ask this (realism), whether
the spec or prompt adds constraints only to make it hard, and whether a verifier checks something the
prompt never asked (both arbitrary). The score must reach `synth.semantic_min_score`."""

from __future__ import annotations

from agentmill.synth.gates.base import GateContext, GateResult
from agentmill.synth.llm import ask_json, dumps
from agentmill.synth.prompt_files import load_prompt

# the judge's verdict, asked for as constrained decoding where the endpoint supports it
JUDGE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["realistic", "arbitrary_constraints", "score", "reason"],
    "properties": {
        "realistic": {"type": "boolean"},
        "arbitrary_constraints": {"type": "array", "items": {"type": "string"}},
        "score": {"type": "number", "minimum": 0, "maximum": 10},
        "reason": {"type": "string"},
    },
}


class SemanticCheck:
    name = "semantic"

    async def run(self, ctx: GateContext) -> GateResult:
        b = ctx.candidate.body
        # the whole candidate: a verifier that checks what the prompt never asked is only visible beside it
        user = (
            f"Capability the task must exercise:\n{dumps(ctx.card_view)}\n\nSystem specification:\n{b.system}\n\n"
            f"User prompt:\n{b.prompt}\n\nSeed state SQL:\n{b.seed_sql}\n\n"
            f"Records the task is about (entities):\n{dumps([e.model_dump() for e in b.entities])}\n\n"
            f"Reference calls:\n{dumps([c.model_dump() for c in b.calls])}\n\n"
            f"Reference final answer:\n{b.answer or '(none)'}\n\nVerifiers:\n{dumps(b.verifiers)}"
        )
        reply = await ask_json(ctx.clients["judge"], load_prompt("semantic", ctx.prompts), user, JUDGE_SCHEMA)
        if reply.endpoint_failed:
            return GateResult(
                gate=self.name, passed=False, code="endpoint_error", message=reply.error or "", fault="infra"
            )
        if reply.context_exceeded:  # the judge cannot read this candidate: no pause will change that
            return GateResult(
                gate=self.name,
                passed=False,
                code="context_exceeded",
                message=reply.error or "",
                fault="infra",
                details={"retry": False},
            )
        d = reply.data if isinstance(reply.data, dict) else None
        try:
            if d is None:  # not a JSON object: as unreadable as one without the verdict's keys
                raise TypeError("not a JSON object")
            realistic = bool(d["realistic"])
            arbitrary = [str(x) for x in d.get("arbitrary_constraints") or []]
            score = float(d.get("score", 10))
        except (TypeError, KeyError, ValueError):
            return GateResult(
                gate=self.name,
                passed=False,
                code="judge_unparseable",
                fault="infra",
                message=f"the judge's reply is not a verdict: {reply.text[:300]!r}",
            )
        details = {
            "realistic": realistic,
            "arbitrary_constraints": arbitrary,
            "score": score,
            "reason": str(d.get("reason", ""))[:1000],
        }
        if not realistic or score < ctx.settings.synth.semantic_min_score:
            return GateResult(
                gate=self.name,
                passed=False,
                code="unrealistic",
                message=details["reason"],
                category="bad_task_composition",
                components=["prompt", "system"],
                details=details,
            )
        if arbitrary:
            return GateResult(
                gate=self.name,
                passed=False,
                code="arbitrary_constraint",
                message="; ".join(arbitrary),
                category="bad_task_composition",
                components=["system", "prompt", "verifiers"],
                details=details,
            )
        return GateResult(gate=self.name, passed=True, code="ok", details=details)
