"""The Target box's gates, each behind `Gate`: duplicates, overlap with evaluation data, structural lint,
semantic check, positive verification, verifier completeness, negative verification, the solver ballot. `default_gates()` gives them in the order a candidate meets them
(cheapest first: the duplicate check before any sandbox, the ballot's model trials last)."""

from agentmill.synth.gates.ballot import BallotGate
from agentmill.synth.gates.base import Gate, GateContext, GateResult
from agentmill.synth.gates.completeness import VerifierCompleteness
from agentmill.synth.gates.contamination import ContaminationGate
from agentmill.synth.gates.lint import StructuralLint
from agentmill.synth.gates.negative import NegativeVerification
from agentmill.synth.gates.novelty import NoveltyGate
from agentmill.synth.gates.positive import PositiveVerification
from agentmill.synth.gates.semantic import SemanticCheck


def default_gates(ballot: bool = True, benchmarks: list[str] | None = None) -> list[Gate]:
    gates: list[Gate] = [
        NoveltyGate(),
        ContaminationGate(benchmarks or []),
        StructuralLint(),
        SemanticCheck(),
        PositiveVerification(),
        VerifierCompleteness(),
        NegativeVerification(),
    ]
    return gates + [BallotGate()] if ballot else gates


__all__ = [
    "BallotGate",
    "ContaminationGate",
    "Gate",
    "GateContext",
    "GateResult",
    "NegativeVerification",
    "NoveltyGate",
    "PositiveVerification",
    "SemanticCheck",
    "StructuralLint",
    "VerifierCompleteness",
    "default_gates",
]
