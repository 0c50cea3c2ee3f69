"""Which judged step a task gets (verify/judged.py): by its family, named in `[metadata] source`."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agentmill.verify.judged import judged_step_for


def task(**metadata):
    return SimpleNamespace(config=SimpleNamespace(metadata=metadata))


def test_the_bundled_families_get_their_judged_steps():
    from agentmill.grounded.verifier import judge_rubric
    from agentmill.sources.answer_judge import judge_answer

    assert judged_step_for(task(source="grounded")) is judge_rubric
    assert judged_step_for(task(source="stackexchange")) is judge_answer


@pytest.mark.parametrize(
    "metadata", [{}, {"source": "swe-smith"}, {"source": 7}, {"source": ["grounded"]}, {"kind": "grounded"}]
)
def test_other_tasks_have_no_judged_step(metadata):
    assert judged_step_for(task(**metadata)) is None
