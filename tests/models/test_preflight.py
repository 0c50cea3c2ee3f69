"""Preflight against a real local HTTP server: each cause named, one request per distinct endpoint;
and the outage summary's grouping."""

import asyncio

import pytest

from agentmill.models.outages import endpoint_and_cause, outage_lines
from agentmill.models.preflight import PreflightError, Probe, preflight, probe_endpoint
from tests.helpers.chat_server import ChatServer, Reply


def cause_of(reply: Reply | None, *, tools: bool = False, key_env: str | None = None) -> str | None:
    with ChatServer(lambda r: Reply("unused")) as server:
        if reply is not None:
            server.probe_reply = reply
        cause = asyncio.run(probe_endpoint(Probe("teacher", server.base_url, "m", key_env, tools=tools)))
        assert server.requests == []  # a probe, never work
        return cause


def test_a_served_model_passes():
    assert cause_of(None) is None


@pytest.mark.parametrize(
    "reply, expected",
    [
        (Reply(status=401, error="invalid api key"), "the key was refused (HTTP 401)"),
        (Reply(status=404, error="The model `m` does not exist"), "model 'm' is not served here (HTTP 404)"),
        (Reply(status=404, raw_body=b"Not Found"), "no chat endpoint there (does the URL need /v1?)"),
        (Reply(status=200, raw_body=b"<html>welcome</html>"), "not a chat completion"),
        (Reply(status=503, error="loading"), "HTTP 503"),
    ],
)
def test_each_cause_is_named(reply, expected):
    assert expected in cause_of(reply)


def test_a_role_that_calls_tools_is_refused_where_tools_are_not_served():
    refusal = Reply(status=400, error="tools are not supported by this server")
    assert "refused tool calling" in cause_of(refusal, tools=True)


def probe_json(reply: Reply | None, **answer_patch):
    """(cause, the probe requests the server saw) for a role that reads JSON replies."""
    with ChatServer(lambda r: Reply("unused")) as server:
        if reply is not None:
            server.probe_reply = reply
        cause = asyncio.run(probe_endpoint(Probe("critic", server.base_url, "m", json=True)))
        assert server.requests == []
        return cause, server.probes


def test_a_role_that_reads_json_is_refused_where_the_reply_is_not_json():
    # a server that ignores response_format and answers prose: every reply of this role would fail to parse
    cause, probes = probe_json(Reply(content="Sure! ok"))
    assert cause is not None and "asked for a JSON object (response_format json_schema)" in cause
    assert "'Sure! ok'" in cause and "JSON mode" in cause
    (sent,) = probes  # one request, in the endpoint's JSON mode, asking for a small object
    assert sent["response_format"]["type"] == "json_schema" and sent["max_tokens"] <= 16
    assert "JSON object" in sent["messages"][0]["content"]


def test_a_role_that_reads_json_passes_where_json_mode_works():
    cause, probes = probe_json(None)  # the honest twin: a served model in JSON mode answers the object
    assert cause is None and probes[0]["response_format"]["type"] == "json_schema"
    assert probe_json(Reply(content='```json\n{"ok": true}\n```'))[0] is None  # a fenced object is one too
    assert "it answered '[1, 2]'" in probe_json(Reply(content="[1, 2]"))[0]  # JSON, but not an object


def test_a_json_dialect_the_endpoint_refuses_is_followed_by_the_next(monkeypatch):
    from tests.helpers import chat_server

    def llama_cpp_style(body):  # takes json_object with a schema, refuses json_schema
        if body["response_format"]["type"] == "json_schema":
            return Reply(status=400, error="response_format json_schema is not supported")
        return Reply(content='{"ok": true}')

    monkeypatch.setattr(chat_server, "probe_answer", llama_cpp_style)
    cause, probes = probe_json(None)
    assert cause is None and [p["response_format"]["type"] for p in probes] == ["json_schema", "json_object"]


def test_a_role_that_does_not_read_json_is_not_asked_for_it():
    with ChatServer(lambda r: Reply("unused")) as server:
        server.probe_reply = Reply(content="ok")
        assert asyncio.run(probe_endpoint(Probe("target", server.base_url, "m"))) is None
        assert "response_format" not in server.probes[0] and server.probes[0]["max_tokens"] == 1


def test_an_unset_key_is_found_before_any_request(monkeypatch):
    monkeypatch.delenv("AGENTMILL_TEST_KEY", raising=False)
    probe = Probe("judge", "http://127.0.0.1:9/v1", "m", "AGENTMILL_TEST_KEY", key_hint="[roles.judge] api_key_env")
    assert (
        asyncio.run(probe_endpoint(probe))
        == "[roles.judge] api_key_env: environment variable AGENTMILL_TEST_KEY is not set"
    )


def test_one_request_per_distinct_endpoint_naming_every_role_behind_it():
    with ChatServer(lambda r: Reply("unused")) as server:
        server.probe_reply = Reply(status=401, error="no")
        probes = [Probe(role, server.base_url, "m") for role in ("critic", "judge")] + [
            Probe("target", server.base_url, "t")
        ]
        with pytest.raises(PreflightError) as e:
            asyncio.run(preflight(probes))
        assert len(server.probes) == 2  # critic and judge share one endpoint and model
    assert f"critic, judge endpoint {server.base_url} (model m): the key was refused" in str(e.value)
    assert f"target endpoint {server.base_url} (model t)" in str(e.value)


def test_outage_lines_group_by_endpoint_with_the_most_common_cause():
    errors = ["http://a:1/v1: ConnectionError (after 7 attempts)"] * 3 + [
        "http://a:1/v1: TimeoutError (after 2 attempts)",
        "http://b/v1: HTTP 503: overloaded (after 3 attempts)",
        "harness error: boom",
    ]
    assert outage_lines(errors) == [
        "http://a:1/v1: 4 failed; most common: ConnectionError (3), and 1 other cause",
        "http://b/v1: 1 failed; most common: HTTP 503: overloaded (1)",
        "no endpoint named: 1 failed; most common: harness error: boom (1)",
    ]
    assert endpoint_and_cause("infra: generator http://h:8/v1: HTTP 401: no") == ("http://h:8/v1", "HTTP 401: no")
