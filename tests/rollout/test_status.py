import math

import pytest

from agentmill.rollout.status import mean_se, pass_at_k


def test_pass_at_k_unbiased_estimator():
    assert pass_at_k(4, 0, 1) == 0.0
    assert pass_at_k(4, 4, 2) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    # 1 - C(2,2)/C(4,2) = 1 - 1/6
    assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6)
    assert pass_at_k(5, 3, 3) == 1.0  # fewer than k failures
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_mean_and_standard_error():
    m, se = mean_se([1.0, 0.0, 1.0, 0.0])
    assert m == 0.5
    assert se == pytest.approx(math.sqrt((4 * 0.25 / 3) / 4))
    assert mean_se([0.3]) == (0.3, 0.0)
