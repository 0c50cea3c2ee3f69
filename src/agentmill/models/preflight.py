"""Preflight: one cheap request per distinct endpoint before a command starts any work.

A wrong or unreachable endpoint is the most common mistake, and found mid-run it costs minutes of
retries per trial and leaves failures in the run folder. So every command that calls models asks
each (endpoint, model, key) it will use once, with a one-token chat request (and a tool schema
where the role calls tools; a request for a small JSON object, in the endpoint's JSON mode, where
the role parses its replies as JSON), and stops at the first sign of trouble with one line per
failing role: the role, the URL and the cause. Nothing is written before this check. The request carries
`X-Agentmill-Preflight: 1` so a server's logs can tell it apart; `--no-preflight` skips it for
endpoints that charge per request.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass

import httpx

from agentmill.errors import AgentmillError
from agentmill.models.client import mentions_format, response_format

PREFLIGHT_HEADER = "X-Agentmill-Preflight"
PREFLIGHT_TIMEOUT = 20.0  # seconds: a served model answers one token well within this
_PROBE_TOOL = {
    "type": "function",
    "function": {"name": "noop", "description": "Does nothing.", "parameters": {"type": "object", "properties": {}}},
}
# A role that parses its replies as JSON is asked for this object, in JSON mode (the dialects
# ModelClient tries, in its order: `json_schema`, then `json_object`, then the prompt alone).
_JSON_PROMPT = 'Reply with this JSON object and nothing else: {"ok": true}'
_JSON_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
_JSON_MODES = ("json_schema", "json_object", None)
_JSON_TOKENS = 16  # room for {"ok": true} in any tokenizer; still a cheap request


class PreflightError(AgentmillError):
    """An endpoint failed its preflight request: the command stops before any work (exit code 2)."""


@dataclass(frozen=True)
class Probe:
    """One role's endpoint as a command will use it. `key_hint` names where this command takes the
    key variable from (`--api-key-env`, or `[roles.judge] api_key_env` in a config file)."""

    role: str
    base_url: str
    model: str
    api_key_env: str | None = None
    key_hint: str = "--api-key-env"
    tools: bool = False
    json: bool = False  # the role parses its replies as JSON objects: the endpoint must answer one


def key_missing(api_key_env: str | None, key_hint: str) -> str | None:
    """The one-line error for a key variable that is named but not set, else None."""
    if api_key_env and os.environ.get(api_key_env) is None:
        return f"{key_hint}: environment variable {api_key_env} is not set"
    return None


async def probe_endpoint(probe: Probe, *, timeout: float = PREFLIGHT_TIMEOUT) -> str | None:
    """The cause of failure in a few words, or None when the endpoint answered a completion."""
    missing = key_missing(probe.api_key_env, probe.key_hint)
    if missing:
        return missing
    key = os.environ.get(probe.api_key_env) if probe.api_key_env else None
    prompt = _JSON_PROMPT if probe.json else "Reply with: ok"
    body: dict = {
        "model": probe.model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": _JSON_TOKENS if probe.json else 1,
    }
    if probe.tools:
        body["tools"] = [_PROBE_TOOL]
    url = probe.base_url.rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {key or 'not-needed'}", PREFLIGHT_HEADER: "1", "User-Agent": "agentmill"}
    modes = _JSON_MODES if probe.json else (None,)
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(timeout), follow_redirects=True) as http:
            for mode in modes:  # a JSON dialect the endpoint refuses: the next, as ModelClient would
                fmt = {"response_format": response_format(mode, _JSON_SCHEMA)} if mode is not None else {}
                resp = await http.post(url, json={**body, **fmt}, headers=headers)
                if not (resp.status_code == 400 and mode is not None and mentions_format(resp.text)):
                    break
    except httpx.TimeoutException:
        return f"no answer within {timeout:.0f}s"
    except httpx.ConnectError as e:
        return f"cannot connect ({_short(e) or 'connection refused'}): is the server running at this address?"
    except httpx.TransportError as e:
        return f"{type(e).__name__}: {_short(e)}"
    except httpx.InvalidURL as e:
        return f"not a valid URL: {_short(e)}"
    if resp.is_success:
        try:
            message = resp.json()["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            return (
                "answered HTTP 200 with something that is not a chat completion (is this an OpenAI-compatible /v1 URL?)"
            )
        return _not_json(message, mode) if probe.json else None
    text = resp.text.strip().replace("\n", " ")[:200]
    status = resp.status_code
    if status in (401, 403):
        hint = (
            f" (set {probe.api_key_env})" if probe.api_key_env else f" (give the key's variable with {probe.key_hint})"
        )
        return f"the key was refused (HTTP {status}){hint}: {text}"
    if status == 404:
        if "model" in text.lower():
            return f"model '{probe.model}' is not served here (HTTP 404): {text}"
        return f"HTTP 404 for {url}: no chat endpoint there (does the URL need /v1?)"
    if status == 400 and probe.tools and "tool" in text.lower():
        return f"the endpoint refused tool calling, which this role needs (HTTP 400): {text}"
    if status == 400 and "model" in text.lower():
        return f"model '{probe.model}' was refused (HTTP 400): {text}"
    return f"HTTP {status}: {text}"


async def preflight(probes: list[Probe], *, timeout: float = PREFLIGHT_TIMEOUT) -> None:
    """Probe every distinct endpoint at once; raise PreflightError naming each failing role, URL and cause."""
    distinct: dict[tuple, list[Probe]] = {}
    for p in probes:
        distinct.setdefault((p.base_url.rstrip("/"), p.model, p.api_key_env, p.tools, p.json), []).append(p)
    firsts = [group[0] for group in distinct.values()]
    causes = await asyncio.gather(*(probe_endpoint(p, timeout=timeout) for p in firsts))
    failures = []
    for group, cause in zip(distinct.values(), causes):
        if cause is not None:
            roles = ", ".join(dict.fromkeys(p.role for p in group))
            failures.append(f"{roles} endpoint {group[0].base_url} (model {group[0].model}): {cause}")
    if failures:
        raise PreflightError(
            "preflight: " + "; ".join(failures) + ". Nothing was run; fix the endpoint and run the "
            "same command again (or skip this check with --no-preflight)"
        )


def _not_json(message, mode: str | None) -> str | None:
    """Why a reply asked for as a JSON object is not one (this role parses every reply as JSON), else None."""
    content = message.get("content") if isinstance(message, dict) else None
    text = content.strip() if isinstance(content, str) else ""
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    try:
        if isinstance(json.loads(fenced.group(1) if fenced else text), dict):
            return None
    except ValueError:
        pass
    asked = f"response_format {mode}" if mode else "the endpoint refused every response_format; asked in the prompt"
    shown = text.replace("\n", " ")[:80]
    return f"asked for a JSON object ({asked}), it answered {shown!r}: this role reads JSON replies (JSON mode not working?)"


def run_preflight(probes: list[Probe], *, timeout: float = PREFLIGHT_TIMEOUT) -> None:
    """`preflight` from synchronous code (the CLI, before its own event loop starts)."""
    if probes:
        asyncio.run(preflight(probes, timeout=timeout))


def _short(e: Exception) -> str:
    return str(e).replace("\n", " ")[:160]
