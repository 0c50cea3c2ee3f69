"""Quality gates on what the model roles make: a rubric criterion the statement never asks for is
sent back to the compiler (and to the reviser, whose merged spec is validated the same way), and
a "confuser" of another family or subject than the core file is sent back to the assembler."""

import json
from pathlib import Path

import pytest

from agentmill.grounded.corpus import build_corpus
from agentmill.grounded.graph import GraphDraft, check_facts
from agentmill.grounded.quality import confuser_problems, untraceable
from agentmill.grounded.records import Spec
from agentmill.grounded.spec import instruction, validate
from tests.grounded import office, scripted
from tests.grounded.test_graph_spec import workspace


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return build_corpus(tmp_path_factory.mktemp("corpus") / "corpus", bulk=False)


def test_a_criterion_the_statement_never_asks_for_is_refused(tmp_path, corpus):
    """The review's finding: the heaviest criterion asked for something the instruction never
    requested. Planted (MIN_TRACE = 0), the refused spec validates."""
    ws, ws_dir = workspace(corpus, tmp_path)
    graph = check_facts(ws, ws_dir, GraphDraft.model_validate(scripted.GRAPH))
    spec = Spec.model_validate(scripted.SPEC)
    validate(spec, graph)  # honest twin: every criterion is asked for
    hidden = json.loads(json.dumps(scripted.SPEC))
    hidden["criteria"].append(
        {
            "id": "c9",
            "artifact": "memo.md",
            "weight": 5.0,
            "anchors": ["f2017fossil"],
            "requirement": "a forecast of coal plant retirements through 2030",
            "expected": "three retirements",
            "verification": "-",
        }
    )
    with pytest.raises(ValueError, match=r"criterion c9 asks for something the statement never requests .*retire"):
        validate(Spec.model_validate(hidden), graph)
    # asking for it in the statement makes it traceable
    hidden["statement"] += " Add a forecast of coal plant retirements through 2030."
    validate(Spec.model_validate(hidden), graph)


def test_the_fixture_specs_are_traceable():
    for raw in (scripted.SPEC, office.SPEC):
        spec = Spec.model_validate(raw)
        assert untraceable(spec, instruction(spec)) == []


def test_deliverable_columns_and_sections_count_as_asked():
    c = {
        "id": "m",
        "artifact": "memo.md",
        "weight": 1.0,
        "anchors": ["f2017fossil"],
        "requirement": "a Method section",
        "expected": "-",
        "verification": "-",
    }
    with_method = Spec.model_validate({**scripted.SPEC, "criteria": [*scripted.SPEC["criteria"], c]})
    assert untraceable(with_method, instruction(with_method)) == []  # "Method" is a required section


def pick(corpus: Path, rel: str, role: str):
    return (f"corpus/{rel}", role, corpus / rel)


def test_a_confuser_must_share_the_core_files_family_and_subject(corpus):
    """Planted (the check skipped), stock prices pass as a confuser of electricity data."""
    core = pick(corpus, scripted.CSV, "core")
    assert (
        confuser_problems([core, pick(corpus, "energy/iowa-electricity.xlsx", "confuser")]) == []
    )  # same subject, a table
    off_subject = confuser_problems([core, pick(corpus, scripted.STOCKS, "confuser")])
    assert len(off_subject) == 1 and "shares no subject" in off_subject[0]
    # a shared generic header (year) is no shared subject
    assert "shares no subject" in confuser_problems([core, pick(corpus, "ecology/penguins.csv", "confuser")])[0]
    other_family = confuser_problems([core, pick(corpus, scripted.ABOUT, "confuser")])
    assert len(other_family) == 1 and "must be of a core file's family" in other_family[0]
    # ambient clutter may be anything
    assert confuser_problems([core, pick(corpus, scripted.STOCKS, "ambient")]) == []
