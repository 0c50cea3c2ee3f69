"""The judged step of judged Q&A tasks (stackexchange with a rubric; sources/answer_rubric.py),
registered under `[metadata] source = "stackexchange"` in verify/judged.py.

The test script has already run in the verifier's sandbox: no answer file is reward 0 and nothing
to judge. Otherwise the rollout's judge (AGENTMILL_JUDGE_MODEL / AGENTMILL_JUDGE_BASE_URL, as for
every judged verifier) scores the answer against the rubric, the answer reaching it only fenced
(verify/fence.py through verify/judge.py), and the reward is 1 when the score reaches the rubric's
threshold. Without a judge the trial is `unjudged` (no reward), never `passed`.
"""

from __future__ import annotations

import base64
import binascii
import json

from agentmill.models.client import EndpointError
from agentmill.sources.answer_rubric import read_rubric, rubric_prompt
from agentmill.tasks.model import Task
from agentmill.verify.judge import NEEDS_JUDGE, JudgeError, ModelJudge, judge_client_from_env
from agentmill.verify.outcome import PASS_THRESHOLD, Outcome
from agentmill.verify.test_script import VerifierResult


async def judge_answer(task: Task, verdict: VerifierResult) -> VerifierResult:
    if not task.config.metadata.get("judged"):  # an unverified or test-verified Q&A task: nothing to judge
        return verdict
    if verdict.outcome is not Outcome.PASSED:  # no answer, tampering, a broken verifier
        return verdict
    client = judge_client_from_env()
    if client is None:  # an answer was written, but nobody can tell whether it is right
        verdict.outcome, verdict.reward, verdict.error = Outcome.UNJUDGED, None, f"answer: {NEEDS_JUDGE}"
        verdict.rewards = {k: v for k, v in verdict.rewards.items() if k != "reward"}
        verdict.stdout += f"\nanswer: not judged, {NEEDS_JUDGE}; the trial is unjudged (no reward), never passed\n"
        return verdict
    try:
        rubric = read_rubric(task.path)
        answer = _answer(verdict.judge_input)
        score, reasoning = await ModelJudge(client).score(rubric_prompt(rubric), {"answer_file": answer})
    except (ValueError, OSError) as e:
        return _broken(verdict, f"answer: {e}")
    except (JudgeError, EndpointError) as e:  # the judge's fault, never the agent's
        return _broken(verdict, f"answer judge: {e}")
    finally:
        await client.close()
    threshold = float(rubric.get("threshold", 7.0))
    reward = 1.0 if score >= threshold else 0.0
    verdict.reward, verdict.rewards = reward, {**verdict.rewards, "judge_score": score / 10, "reward": reward}
    verdict.outcome = Outcome.PASSED if reward >= PASS_THRESHOLD else Outcome.FAILED
    verdict.stdout += f"\nanswer: judge score {score:g}/10 (threshold {threshold:g}): {reasoning}\n"
    return verdict


def _answer(raw: bytes | None) -> str:
    if raw is None:
        raise ValueError("the test script wrote no judge_input.json")
    try:
        data = json.loads(raw.decode("utf-8"))
        return base64.b64decode(data["answer_base64"], validate=True).decode("utf-8", "replace")
    except (ValueError, KeyError, TypeError, binascii.Error) as e:
        raise ValueError(f"judge_input.json is not the answer the test script hands over ({e})") from None


def _broken(verdict: VerifierResult, error: str) -> VerifierResult:
    verdict.outcome, verdict.reward, verdict.error = Outcome.VERIFIER_ERROR, None, error
    return verdict
