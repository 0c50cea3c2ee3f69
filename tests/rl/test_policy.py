"""Completions as trainers hand them over become the agent's turns: text, messages, tool calls."""

from __future__ import annotations

import asyncio

import pytest

from agentmill.rl.policy import PolicyClient, PolicyExhaustedError, PolicyTurn, scripted, turns_from_completion


def test_text_completion_with_reasoning_and_hermes_tool_calls():
    [turn] = turns_from_completion(
        '<think>plan it</think>Let me look.<tool_call>{"name": "get", "arguments": {"id": 3}}'
        "</tool_call><tool_call>not json</tool_call>"
    )
    assert turn.reasoning == "plan it" and turn.content == "Let me look."
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("get", '{"id": 3}'), ("", "not json")]


def test_message_lists_openai_and_parsed_tool_calls():
    turns = turns_from_completion(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
                    {"type": "function", "function": {"name": "g", "arguments": {"y": [1, 2]}}},
                ],
            },
            {"role": "tool", "content": "ignored"},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        ]
    )
    assert [(c.id, c.name, c.arguments) for c in turns[0].tool_calls] == [
        ("a", "f", '{"x": 1}'),
        ("policy_call_2", "g", '{"y": [1, 2]}'),
    ]
    assert turns[1].content == "done" and not turns[1].tool_calls
    # a text outside any <tool_call> block is never read as a call
    assert turns_from_completion('{"name": "f", "arguments": {}}')[0].tool_calls == []
    with pytest.raises(TypeError, match="a completion must be"):
        turns_from_completion(42)


def test_policy_client_answers_then_ends_the_episode():
    client = PolicyClient(scripted([PolicyTurn("one"), PolicyTurn("two")]))

    async def talk():
        got = [(await client.chat([{"role": "user", "content": "go"}])).content for _ in range(2)]
        with pytest.raises(PolicyExhaustedError):
            await client.chat([])
        return got

    assert asyncio.run(talk()) == ["one", "two"]
