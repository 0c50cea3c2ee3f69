"""The judged step of grounded tasks in rollouts (registered under `[metadata] source = "grounded"`
through the `agentmill.judged_steps` entry point; see verify/judged.py).

The task's test script has already run the deterministic artifact checks in the sandbox and written
the deliverables as text to /logs/verifier/judge_input.json; the host never opens the agent's files.
Here the judge endpoint scores the rubric with the anchors, exactly as admission does, and the
reward becomes 1 only when quality reaches the task's `judge_threshold` (admission's, default 0.90).
Without a judge the trial is `unjudged` (no reward): a grounded trial is never `passed` on format alone.
"""

from __future__ import annotations

import json

from agentmill.grounded.ask import ModelReplyError
from agentmill.grounded.judge import format_deliverables, judge_view, quality
from agentmill.grounded.task_folder import read_graph, read_spec
from agentmill.models.client import EndpointError
from agentmill.tasks.model import Task
from agentmill.verify.judge import NEEDS_JUDGE, judge_client_from_env
from agentmill.verify.outcome import PASS_THRESHOLD, Outcome
from agentmill.verify.test_script import VerifierResult

DEFAULT_THRESHOLD = 0.90
NOT_JUDGED = "rubric: not judged"  # the verifier's line when no judge was configured (admission reads it)


async def judge_rubric(task: Task, verdict: VerifierResult) -> VerifierResult:
    if verdict.outcome is not Outcome.PASSED:  # a check failed, tampering, a broken verifier: nothing to judge
        return verdict
    client = judge_client_from_env()
    if client is None:  # the checks passed, but they cannot see whether the numbers and prose are right
        verdict.outcome, verdict.reward, verdict.error = Outcome.UNJUDGED, None, f"rubric: {NEEDS_JUDGE}"
        verdict.rewards = {k: v for k, v in verdict.rewards.items() if k != "reward"}
        verdict.stdout += (
            f"\n{NOT_JUDGED}, {NEEDS_JUDGE}; every deterministic check passed, "
            "so the trial is unjudged (no reward), never passed\n"
        )
        return verdict
    try:
        texts = _judge_input(verdict.judge_input)
        spec = read_spec(task.path)
        result = await judge_view(
            spec,
            read_graph(task.path),
            task.path / "environment" / "workspace",
            format_deliverables(spec, texts),
            client,
            mode="anchored",
        )
    except (ValueError, OSError) as e:
        return _broken(verdict, f"rubric: {e}")
    except (ModelReplyError, EndpointError) as e:  # the judge's fault, never the agent's
        return _broken(verdict, f"rubric judge: {e}")
    finally:
        await client.close()
    q = quality(spec, result)
    threshold = float(task.config.metadata.get("judge_threshold", DEFAULT_THRESHOLD))
    reward = 1.0 if q >= threshold else 0.0
    verdict.reward, verdict.rewards = reward, {**verdict.rewards, "rubric_quality": q, "reward": reward}
    verdict.outcome = Outcome.PASSED if reward >= PASS_THRESHOLD else Outcome.FAILED
    scores = ", ".join(f"{s.id}={s.score:g}" for s in result.scores)
    proven = [v.id for v in result.violations if v.proven]
    verdict.stdout += (
        f"\nrubric: quality {q:.3f} (threshold {threshold:.2f}); scores {scores}"
        + (f"; proven violations {proven}" if proven else "")
        + "\n"
    )
    return verdict


def _judge_input(raw: bytes | None) -> dict[str, str]:
    if raw is None:
        raise ValueError(
            "the test script wrote no judge_input.json (a task written before judged rollouts: "
            "write it again with `agentmill ground`)"
        )
    data = json.loads(raw.decode("utf-8", "replace"))
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError("judge_input.json must map each deliverable's path to its text")
    return data


def _broken(verdict: VerifierResult, error: str) -> VerifierResult:
    verdict.outcome, verdict.reward, verdict.error = Outcome.VERIFIER_ERROR, None, error
    return verdict
