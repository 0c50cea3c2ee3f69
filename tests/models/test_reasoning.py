import pytest

from agentmill.models.reasoning import split_reasoning


@pytest.mark.parametrize(
    "text, field, answer, reasoning",
    [
        ("plain answer", None, "plain answer", None),
        ("<think>hmm</think>answer", None, "answer", "hmm"),
        ("hmm, let me see</think>\nanswer", None, "answer", "hmm, let me see"),  # orphan closing tag
        ("answer", "from the field", "answer", "from the field"),
        ("<think>a</think>x<think>b</think>y", None, "xy", "a\n\nb"),
        ("answer <think>cut off mid-thought", None, "answer", "cut off mid-thought"),
        ("<think></think>answer", None, "answer", None),
        ("", None, "", None),
        (None, None, "", None),
    ],
)
def test_split(text, field, answer, reasoning):
    assert split_reasoning(text, field) == (answer, reasoning)
