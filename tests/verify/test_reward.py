import pytest

from agentmill.verify import RewardError, parse_reward


def test_txt_float():
    assert parse_reward(b" 0.25\n", None) == (0.25, {"reward": 0.25})
    assert parse_reward(b"1", b'{"reward": 0}')[0] == 1.0  # reward.txt wins


def test_json_dict():
    assert parse_reward(None, b'{"reward": 0.5, "style": 1}') == (0.5, {"reward": 0.5, "style": 1.0})
    scalar, named = parse_reward(None, b'{"a": 1, "b": 0}')
    assert scalar == 0.5 and named == {"a": 1.0, "b": 0.0}


@pytest.mark.parametrize(
    "txt, js, problem",
    [
        (None, None, "wrote no"),
        (b"PASSED", None, "not a number"),
        (b"", None, "not a number"),
        (b"nan", None, "not finite"),
        (None, b"{not json", "not JSON"),
        (None, b"[1, 2]", "non-empty object"),
        (None, b"{}", "non-empty object"),
        (None, b'{"reward": "1"}', "not a finite number"),
        (None, b'{"reward": true}', "not a finite number"),
    ],
)
def test_garbage_is_a_reward_error(txt, js, problem):
    with pytest.raises(RewardError, match=problem):
        parse_reward(txt, js)


@pytest.mark.parametrize(
    "js", [b'{"reward": NaN}', b'{"reward": 1, "x": NaN}', b'{"reward": Infinity}', b'{"reward": -Infinity}']
)
def test_non_finite_reward_json_is_a_reward_error(js):
    # Python's json reads NaN and Infinity: a NaN reward compares false with every threshold
    with pytest.raises(RewardError, match="not a finite number"):
        parse_reward(None, js)


def test_bytes_that_are_not_utf8_are_a_reward_error_not_a_crash():
    # a reward file of stray bytes must end as verifier_error, never as an exception out of the verifier
    with pytest.raises(RewardError, match="not a number"):
        parse_reward(b"\xff\xfe1", None)
    assert parse_reward(None, b'{"reward": 1, "n\xff": 0}') == (1.0, {"reward": 1.0, "n\ufffd": 0.0})
    with pytest.raises(RewardError, match="not JSON"):
        parse_reward(None, b'{"reward": \xff}')


def test_a_long_garbage_reward_is_quoted_cut_to_80_characters():
    with pytest.raises(RewardError) as e:
        parse_reward(b"y" * 200, None)
    assert str(e.value) == f"reward.txt is not a number: {'y' * 80!r}"
    with pytest.raises(RewardError) as e:
        parse_reward(b"inf" + b" " * 3, None)
    assert str(e.value) == "reward.txt is not finite: 'inf'"


def test_an_overflowing_reward_is_not_finite_and_quoted_cut_to_80_characters():
    # a long run of digits reads as inf: the message quotes what the verifier wrote, cut like garbage
    digits = "1" + "0" * 400
    with pytest.raises(RewardError) as e:
        parse_reward(digits.encode(), None)
    assert str(e.value) == f"reward.txt is not finite: {digits[:80]!r}"


@pytest.mark.parametrize(
    "txt, js, message",
    [
        (None, None, "the verifier wrote no /logs/verifier/reward.txt or reward.json"),
        (None, b"[1]", "reward.json must be a non-empty object of name -> number"),
        (None, b'{"reward": "1"}', "reward.json: 'reward' is not a finite number: '1'"),
    ],
)
def test_a_reward_error_names_the_file_and_the_problem_exactly(txt, js, message):
    with pytest.raises(RewardError) as e:
        parse_reward(txt, js)
    assert str(e.value) == message
