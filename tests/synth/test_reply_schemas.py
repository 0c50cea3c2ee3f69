"""The JSON schemas the roles ask for as constrained decoding: each converts to a llama.cpp grammar (the
embedded model's server silently falls back to any JSON when it cannot: an untyped field once did that to
the generator's schema), each crosses the wire with its request, and typed-outcome checking of a store
(what `benchmarks/synth.py --local-model` runs over the real-model run) finds what is not typed."""

from __future__ import annotations

import importlib.util
import json

import pytest

from agentmill.synth.candidate import COMPONENTS, candidate_schema, repair_schema
from agentmill.synth.card import CapabilityCard
from agentmill.synth.critic import CRITIC_SCHEMA, Diagnosis
from agentmill.synth.gates.base import GateResult
from agentmill.synth.gates.semantic import JUDGE_SCHEMA
from agentmill.synth.store import SynthStore
from tests.synth.local_smoke import typed_outcome_problems
from tests.synth.scripted import FINAL, card_line

needs_llama = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")


@needs_llama
@pytest.mark.parametrize(
    "name, schema",
    [
        ("generator", candidate_schema()),
        ("repair", repair_schema(list(COMPONENTS))),
        ("critic", CRITIC_SCHEMA),
        ("judge", JUDGE_SCHEMA),
        ("card_writer", CapabilityCard.writer_schema()),
    ],
)
def test_every_reply_schema_is_a_llama_cpp_grammar(name, schema):
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    grammar = json_schema_to_gbnf(json.dumps(schema))  # raises on a schema it cannot constrain
    for key in schema["properties"]:
        assert f'"\\"{key}\\""' in grammar or f'\\"{key}\\"' in grammar, key


def test_typed_outcome_problems_names_what_is_not_typed(tmp_path):
    store = SynthStore(tmp_path)
    store.add_card(CapabilityCard.model_validate_json(card_line("good")), 1)
    assert typed_outcome_problems(tmp_path) == ["no candidate was started"]
    store.start_candidate("c0", "card-good", "target", None, 0)  # left open
    store.start_candidate("c1", "card-good", "target", None, 1)
    silent = store.add_attempt("c1", 0, "generate", None, "", None)  # no candidate and no error
    failed = store.add_attempt("c1", 1, "repair", json.dumps(FINAL["good"]), "", None)
    store.add_gate(failed, GateResult(gate="lint", passed=False, code="unknown_tool", category="impossible_workflow"))
    store.reject("c1", "")  # no reason
    store.close()
    problems = typed_outcome_problems(tmp_path)
    assert problems == [
        "c0: left open",
        "c1: rejected without a reason",
        f"attempt {failed}: lint unknown_tool has no diagnosis",
        f"attempt {silent}: no candidate and no error",
    ]
    store = SynthStore(tmp_path)
    store.interrupt("c0", "infra: down")
    store.reject("c1", "lint: unknown_tool")
    store.add_diagnosis(failed, Diagnosis(category="impossible_workflow", components=["calls"]))
    store.db.execute("UPDATE attempts SET error = 'no JSON object in the reply' WHERE attempt_id = ?", (silent,))
    store.close()
    assert typed_outcome_problems(tmp_path) == []
