"""The rollout's progress line says whose each failure is: the agent's own
failures ("failed": a wrong answer, its crash, its time, its context) apart from errors of the
machinery, the task or its verifier; a finished trial nobody scored or judged is neither."""

from __future__ import annotations

from io import StringIO
from types import SimpleNamespace

from rich.console import Console

from agentmill.progress import RolloutProgress
from agentmill.verify.outcome import Outcome


def _result(outcome: Outcome):  # what RolloutProgress.finished reads of a TrialResult
    return SimpleNamespace(outcome=outcome, reward=1.0 if outcome is Outcome.PASSED else None, tokens={})


def test_the_line_counts_the_agents_failures_apart_from_errors():
    progress = RolloutProgress(len(Outcome), console=Console(file=StringIO()))
    for outcome in Outcome:
        progress.started()
        progress.finished(_result(outcome))
    line = progress.line()
    assert f"{len(Outcome)}/{len(Outcome)} trials done, 0 running, 4 failed, 5 errors;" in line, line
    # each outcome is at most one of the two, and every outcome is placed on purpose
    for outcome in Outcome:
        assert not (outcome.is_agents_failure and outcome.is_error), outcome
    neither = {o for o in Outcome if not (o.is_agents_failure or o.is_error)}
    assert neither == {Outcome.PASSED, Outcome.UNJUDGED, Outcome.UNVERIFIED}
