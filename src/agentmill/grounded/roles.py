"""Model roles. Each role is its own OpenAI-compatible endpoint, configured in the ground TOML:

[roles.teacher]
base_url = "http://127.0.0.1:8000/v1"
model = "glm-5.2"
api_key_env = "TEACHER_KEY"   # optional
temperature = 0.7
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agentmill.models import ModelClient, SamplingParams

ROLE_NAMES = ("assembler", "grapher", "compiler", "teacher", "reviser", "judge", "pairwise", "student")
FALLBACK = {"pairwise": "judge", "student": "teacher"}
AGENT_ROLES = ("teacher", "student")  # they play tasks as terminus agents; every other role replies JSON (ask.py)


class Endpoint(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base_url: str
    model: str
    api_key_env: str | None = None
    temperature: float = Field(0.0, ge=0)
    max_tokens: int = Field(4096, gt=0)
    timeout: float = Field(600.0, gt=0)
    max_retries: int = Field(6, ge=0)


class Roles(BaseModel):
    model_config = ConfigDict(extra="forbid")

    assembler: Endpoint
    grapher: Endpoint
    compiler: Endpoint
    teacher: Endpoint
    reviser: Endpoint
    judge: Endpoint
    pairwise: Endpoint | None = None  # defaults to the judge's endpoint
    student: Endpoint | None = None  # the model whose rollouts the selection arms pick from; defaults to the teacher

    def client(self, role: str, **kw) -> ModelClient:
        ep: Endpoint = getattr(self, role) or getattr(self, FALLBACK[role])
        return ModelClient.from_env(
            base_url=ep.base_url,
            model=ep.model,
            api_key_env=ep.api_key_env,
            key_hint=f"[roles.{role if getattr(self, role) else FALLBACK[role]}] api_key_env",
            sampling=SamplingParams(temperature=ep.temperature, max_tokens=ep.max_tokens),
            timeout=ep.timeout,
            max_retries=ep.max_retries,
            **kw,
        )


def role_probes(roles: Roles, names: list[str], where: str) -> list:
    """The named roles' endpoints for `models.preflight`, each under the section it was configured in."""
    from agentmill.models.preflight import Probe

    probes = []
    for role in names:
        section = role if getattr(roles, role) is not None else FALLBACK[role]
        ep: Endpoint = getattr(roles, section)
        probes.append(
            Probe(
                role=role,
                base_url=ep.base_url,
                model=ep.model,
                api_key_env=ep.api_key_env,
                key_hint=f"[roles.{section}] api_key_env in {where}",
                json=role not in AGENT_ROLES,
            )
        )
    return probes
