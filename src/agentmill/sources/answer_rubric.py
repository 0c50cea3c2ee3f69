"""A judged verifier for a Q&A task (stackexchange): a rubric from the accepted answer.

When a judge endpoint is configured for the source, each question's task asks the agent to write
its answer to /app/answer.md, and is verified in two steps: `tests/test.sh` (in the verifier's
sandbox) hands the answer file to the host, base64 inside /logs/verifier/judge_input.json (the
image may have no Python to write JSON with), and reward 0 when there is none; the judged step
(sources/answer_judge.py) then has the rollout's judge score it against the rubric.

The rubric (`solution/rubric.json`: the question, the criteria, the accepted answer as the
reference) lives in the solution folder, which only an oracle's sandbox ever mounts: neither the
agent's instruction, its sandbox nor the verifier's sandbox sees it; the judged step reads it on
the host. The configured judge writes the criteria from the accepted answer at generation time;
if it cannot, the task keeps one general criterion (the report says so, per task).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agentmill.models.client import ModelClient

ANSWER = "/app/answer.md"
RUBRIC = "rubric.json"  # in solution/
THRESHOLD = 7.0  # the judge's 1-10 score from which the answer passes ("mostly right")
MAX_CRITERIA = 6
GENERAL = (
    "The answer solves the question's problem: its commands or steps would work as described, and "
    "they reach the result the reference answer reaches (an equivalent approach counts)."
)

INSTRUCTION = f"""
---

When you are done, write your answer to `{ANSWER}`: the commands that solve the problem (try them
here first) and a short explanation. Your answer is graded from that file.
"""

TEST_SH = f"""#!/bin/bash
# A judged Q&A task: hand the agent's answer to the judged step on the host (sources/answer_judge.py).
answer={ANSWER}
if [ -f "$answer" ] && [ ! -L "$answer" ] && [ -s "$answer" ]; then
  printf '{{"answer_base64": "%s"}}\\n' "$(head -c 60000 "$answer" | base64 -w0)" > /logs/verifier/judge_input.json
  echo "answer: $(wc -c < "$answer") bytes, handed to the judge"
  echo 1 > /logs/verifier/reward.txt
else
  echo "no answer: $answer is missing, empty or a link"
  echo 0 > /logs/verifier/reward.txt
fi
"""

SYSTEM = """You write a grading rubric for answers to a technical question, from its accepted answer.
List the points a correct answer must make (the essential command, option or step, an important caveat),
each checkable by reading an answer; an equivalent alternative must still pass. 2 to 5 points.
Reply with only a JSON object: {"criteria": ["...", "..."]}."""
SCHEMA = {
    "type": "object",
    "properties": {"criteria": {"type": "array", "items": {"type": "string"}}},
    "required": ["criteria"],
}


async def write_criteria(question: str, answer: str, client: ModelClient) -> list[str]:
    """The judge's criteria for this question; ValueError when its reply has none."""
    user = f"Question:\n{question}\n\nAccepted answer:\n{answer}"
    reply = await client.chat(
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}], json_schema=SCHEMA
    )
    match = re.search(r"\{.*\}", reply.content or "", re.S)
    try:
        items = json.loads(match.group(0))["criteria"] if match else None
    except (ValueError, KeyError, TypeError):
        items = None
    criteria = [c.strip() for c in items or [] if isinstance(c, str) and c.strip()] if isinstance(items, list) else []
    if not criteria:
        raise ValueError(f"no criteria in the judge's reply: {(reply.content or '')[:120]!r}")
    return criteria[:MAX_CRITERIA]


def rubric(question: str, answer: str, criteria: list[str] | None) -> dict[str, Any]:
    return {"question": question, "criteria": criteria or [GENERAL], "reference": answer, "threshold": THRESHOLD}


def rubric_prompt(data: dict[str, Any]) -> str:
    """The judge's instructions at rollout (trusted: the task's author wrote them)."""
    points = "\n".join(f"{i}. {c}" for i, c in enumerate(data["criteria"], 1))
    return (
        f"The agent was asked this question and wrote its answer to {ANSWER}:\n\n{data['question']}\n\n"
        f"A correct answer meets these criteria:\n{points}\n\n"
        f"The accepted answer, for reference (an equivalent answer is as good):\n{data['reference']}\n\n"
        "Score how well the agent's answer meets the criteria."
    )


def read_rubric(task_path: Path) -> dict[str, Any]:
    data = json.loads((task_path / "solution" / RUBRIC).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("criteria"), list) or "reference" not in data:
        raise ValueError(f"solution/{RUBRIC} is not a rubric (question, criteria, reference)")
    return data
