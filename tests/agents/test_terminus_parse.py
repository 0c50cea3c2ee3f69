import pytest

from agentmill.agents.terminus.parse import ReplyError, parse_reply


def test_plain_reply():
    r = parse_reply(
        '{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\\n", "duration": 0.5}], "task_complete": false}'
    )
    assert (r.analysis, r.plan, r.task_complete) == ("a", "p", False)
    assert [(c.keystrokes, c.duration) for c in r.commands] == [("ls\n", 0.5)]


def test_json_inside_prose_and_fences():
    r = parse_reply('Sure! Here you go:\n```json\n{"commands": [], "task_complete": true}\n```\nthanks')
    assert r.task_complete and r.commands == []


def test_duration_capped_and_defaulted():
    r = parse_reply(
        '{"commands": [{"keystrokes": "make\\n", "duration": 600}, {"keystrokes": "x"}], "task_complete": "true"}'
    )
    assert [c.duration for c in r.commands] == [60.0, 1.0]
    assert r.warnings and r.task_complete is True


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "empty"),
        ("no json here", "no JSON object"),
        ('{"commands": [', "invalid JSON"),
        ('{"plan": "x"}', 'missing the "commands"'),
        ('{"commands": "ls"}', "must be a list"),
        ('{"commands": [{"keys": "ls"}]}', "keystrokes"),
        ('{"commands": [{"keystrokes": "ls", "duration": "soon"}]}', "duration"),
        ("[1, 2]", "no JSON object"),
    ],
)
def test_unusable_replies(text, problem):
    with pytest.raises(ReplyError, match=problem):
        parse_reply(text)
