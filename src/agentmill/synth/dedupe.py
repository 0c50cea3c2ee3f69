"""Duplicates among accepted samples: a generator that repeats itself must not fill the output.

A candidate is compared with every accepted sample on its fingerprint: the normalised request (the
user prompt's words), seed state (the seed SQL's words) and call sequence (each reference call's tool
and arguments, normalised). Two fingerprints that are equal are exact duplicates; two whose word
3-gram sets (the recipe's dedupe shingles, per part) have a Jaccard similarity at or above
`synth.duplicate_threshold` are near duplicates. A Multiply variant must in addition differ from its
parent on one of the declared axes (request, state, entities, reference, verifiers).

The check runs as the first gate (`gates/novelty.py`, cheap: a repeat is caught before any sandbox starts)
and once more at acceptance (`novelty_at_acceptance`, with no await between it and the store's
commit, so two workers cannot both accept the same task).
"""

from __future__ import annotations

import json

from agentmill.recipe.stages.task_filters.base import words
from agentmill.recipe.stages.task_filters.minhash import shingles
from agentmill.synth.candidate import Candidate, CandidateBody
from agentmill.synth.gates.base import GateResult

# the axes a variant may differ from its parent on, and the candidate parts behind each
AXES = {
    "request": ("prompt",),
    "state": ("seed_sql",),
    "entities": ("entities",),
    "reference": ("calls",),
    "verifiers": ("verifiers",),
}
# the parts a duplicate's repair rewrites: everything but the gym-wide system spec
REWRITE = ["prompt", "seed_sql", "entities", "calls", "answer", "verifiers"]


def _norm(value) -> str:
    """Words of any JSON value, keys sorted: case, whitespace, punctuation and key order do not count."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return " ".join(words(text))


def axis_values(body: CandidateBody) -> dict[str, str]:
    return {
        "request": _norm(body.prompt),
        "state": _norm(body.seed_sql),
        "entities": _norm(sorted(json.dumps(e.model_dump(), sort_keys=True, default=str) for e in body.entities)),
        "reference": _norm([[c.tool, c.arguments] for c in body.calls]),
        "verifiers": _norm(body.verifiers),
    }


def fingerprint(body: CandidateBody) -> dict[str, str]:
    """The parts two tasks must not share: request, seed state, call sequence."""
    v = axis_values(body)
    return {k: v[k] for k in ("request", "state", "reference")}


def _grams(fp: dict[str, str]) -> set[str]:
    # per part, so no shingle spans the end of the prompt and the start of the seed SQL
    return {f"{k}:{s}" for k, text in fp.items() for s in shingles(text.split())}


def similarity(a: CandidateBody, b: CandidateBody) -> float:
    fa, fb = fingerprint(a), fingerprint(b)
    if fa == fb:
        return 1.0
    ga, gb = _grams(fa), _grams(fb)
    return len(ga & gb) / len(ga | gb) if ga | gb else 1.0


def nearest(body: CandidateBody, accepted: list[Candidate], skip: str | None = None) -> tuple[str, float] | None:
    """The accepted sample most like `body` (id, similarity), `skip` (the candidate itself) left out."""
    best = None
    for other in accepted:
        if other.candidate_id == skip:
            continue
        sim = similarity(body, other.body)
        if best is None or sim > best[1]:
            best = (other.candidate_id, sim)
    return best


def changed_axes(body: CandidateBody, parent: CandidateBody) -> list[str]:
    a, b = axis_values(body), axis_values(parent)
    return [axis for axis in AXES if a[axis] != b[axis]]


def check(cand: Candidate, accepted: list[Candidate], threshold: float, gate: str = "novelty") -> GateResult:
    """Passes unless `cand` repeats an accepted sample, or is a variant that changes nothing of its parent."""
    if cand.parent_id is not None:
        parent = next((c for c in accepted if c.candidate_id == cand.parent_id), None)
        if parent is not None:
            axes = changed_axes(cand.body, parent.body)
            if not axes:
                return GateResult(
                    gate=gate,
                    passed=False,
                    code="variant_unchanged",
                    category="bad_task_composition",
                    components=REWRITE,
                    details={"parent": parent.candidate_id, "changed_axes": []},
                    message=f"the variant differs from its parent {parent.candidate_id} on none of {', '.join(AXES)}",
                )
    near = nearest(cand.body, accepted, skip=cand.candidate_id)
    if near is not None and near[1] >= threshold:
        other, sim = near
        code = "duplicate" if sim >= 1.0 else "near_duplicate"
        return GateResult(
            gate=gate,
            passed=False,
            code=code,
            category="bad_task_composition",
            components=REWRITE,
            details={"of": other, "similarity": round(sim, 3), "threshold": threshold},
            message=f"{'repeats' if sim >= 1.0 else 'nearly repeats'} accepted sample {other} "
            f"(request, seed state and calls {sim:.2f} similar; at most {threshold:g} allowed): "
            f"write a different request over different records",
        )
    return GateResult.ok(gate, nearest=near[0] if near else None, similarity=round(near[1], 3) if near else 0.0)


def novelty_at_acceptance(cand: Candidate, accepted: list[Candidate], threshold: float) -> GateResult | None:
    """The last word before the store commits an acceptance: a sample another worker accepted while this
    one was in its gates counts too. None when the candidate may be accepted."""
    r = check(cand, accepted, threshold, gate="accept")
    return None if r.passed else r
