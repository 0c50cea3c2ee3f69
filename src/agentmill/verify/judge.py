"""The LLM judge of `response_check` verifiers: scores an answer against a query result, 1 to 10.

Configured by environment (the judge is part of the verifier, not of the agent under test):
AGENTMILL_JUDGE_MODEL, AGENTMILL_JUDGE_BASE_URL and optionally AGENTMILL_JUDGE_API_KEY_ENV (the
name of the variable that holds the key). Without them response_check verifiers are reported as
not evaluated and do not count toward the reward.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Protocol

from agentmill.errors import AgentmillError

SYSTEM = (
    "You judge whether an assistant's final answer agrees with the facts in a database query result. "
    "Score 1-10: 1-3 wrong or missing, 4-6 partly right, 7-8 mostly right, 9-10 fully right. "
    'Reply with only a JSON object: {"score": <1-10>, "reasoning": "<one sentence>"}.'
)
SCHEMA = {"type": "object", "properties": {"score": {"type": "number"}, "reasoning": {"type": "string"}},
          "required": ["score", "reasoning"], "additionalProperties": False}


class JudgeError(AgentmillError):
    """The judge could not give a score (unreachable, or an answer that is not a score)."""


class Judge(Protocol):
    async def score(self, rows: list[dict], answer: str, prompt: str) -> tuple[float, str]: ...


class ModelJudge:
    def __init__(self, client):
        self.client = client

    async def score(self, rows: list[dict], answer: str, prompt: str) -> tuple[float, str]:
        from agentmill.models.client import EndpointError

        user = (f"Database query result:\n{json.dumps(rows, indent=1, default=str)[:20000]}\n\n"
                f"Assistant's final answer:\n{answer[:20000]}\n\nWhat to check:\n{prompt}")
        try:
            reply = await self.client.chat([{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
                                           json_schema=SCHEMA)
        except EndpointError as e:
            raise JudgeError(str(e)) from None
        return parse_score(reply.content)


def parse_score(text: str) -> tuple[float, str]:
    body = text.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", body, re.S)
    if fenced:
        body = fenced.group(1)
    match = re.search(r"\{.*\}", body, re.S)
    try:
        data: Any = json.loads(match.group(0) if match else body)
        score = float(data["score"])
    except (ValueError, TypeError, KeyError, AttributeError):
        raise JudgeError(f"the judge's reply is not a score: {text[:200]!r}") from None
    if not 0 <= score <= 10:
        raise JudgeError(f"the judge's score is out of range: {score}")
    return score, str(data.get("reasoning", ""))


def judge_client_from_env():
    """The verifier's judge endpoint (a ModelClient at temperature 0), or None when not configured."""
    model = os.environ.get("AGENTMILL_JUDGE_MODEL")
    base_url = os.environ.get("AGENTMILL_JUDGE_BASE_URL")
    if not model or not base_url:
        return None
    from agentmill.models.client import ModelClient, SamplingParams

    return ModelClient.from_env(base_url=base_url, model=model, api_key_env=os.environ.get("AGENTMILL_JUDGE_API_KEY_ENV"),
                                sampling=SamplingParams(temperature=0.0), max_retries=3)


def default_judge() -> Judge | None:
    client = judge_client_from_env()
    return ModelJudge(client) if client is not None else None
