"""Each gate's own checks, with the defect planted: structural lint (tools, arguments, SQL names,
entities, seed), the semantic judge, candidate parsing and the critic's fallback."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentmill.images import ImageBuilder
from agentmill.models.client import ModelClient
from agentmill.synth.candidate import Candidate, CandidateParseError, GymSet, apply_repair, parse_body, parse_partial
from agentmill.synth.config import SynthConfig
from agentmill.synth.critic import criticise
from agentmill.synth.gates import SemanticCheck, StructuralLint
from agentmill.synth.gates.base import GateContext, GateResult
from agentmill.synth.gates.lint import sql_name_problems
from agentmill.tasks.tool_task import load_tool_task
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer, Reply
from tests.synth.scripted import FINAL, GYM

COLUMNS = {
    "tickets": {"id", "title", "status", "priority", "assignee_id", "resolution"},
    "users": {"id", "name", "team"},
}


@pytest.mark.parametrize(
    "sql, problems",
    [
        ("SELECT status FROM tickets WHERE id = 1", []),
        ("SELECT t.status, u.name FROM tickets t JOIN users u ON u.id = t.assignee_id", []),
        ("SELECT COUNT(*) AS n FROM tickets WHERE status = 'open'", []),
        ("SELECT n FROM (SELECT COUNT(*) AS n FROM tickets) WHERE n > 0", []),
        ("WITH c AS (SELECT id FROM tickets) SELECT COUNT(*) FROM c", []),
        ("SELECT state FROM tickets", ["no column 'state' in tickets"]),
        ("SELECT t.owner FROM tickets t", ["no column 'tickets.owner'"]),
        ("SELECT COUNT(*) FROM incidents", ["no table 'incidents'"]),
    ],
)
def test_verifier_sql_names_real_tables_and_columns(sql, problems):
    assert sql_name_problems(sql, COLUMNS) == problems


def test_candidate_parsing_never_raises_anything_but_a_parse_error():
    good = json.dumps(FINAL["good"])
    assert parse_body(f"Here you go:\n```json\n{good}\n```").prompt.startswith("[good]")
    for bad in (
        "no json at all",
        '{"system": "x"',
        json.dumps({**FINAL["good"], "calls": []}),
        json.dumps({**FINAL["good"], "surprise": 1}),
        "[1, 2]",
    ):
        with pytest.raises(CandidateParseError):
            parse_body(bad)
    with pytest.raises(CandidateParseError, match="not asked to"):
        parse_partial(json.dumps({"verifiers": [], "prompt": "sneaky"}), ["verifiers"])
    body = parse_body(good)
    assert apply_repair(body, {"prompt": "new"}).calls == body.calls


def _config(judge_url: str = "http://127.0.0.1:9/v1") -> SynthConfig:
    role = {"base_url": judge_url, "model": "m", "max_retries": 0}
    return SynthConfig.model_validate(
        {
            "env": {"gym_dir": GYM},
            "synth": {"cards": "x.jsonl"},
            "ballot": {"enabled": False},
            "roles": {r: role for r in ("generator", "critic", "judge")},
        }
    )


def _ctx(tmp_path, config: SynthConfig, clients=None, **changes) -> GateContext:
    cand = Candidate(candidate_id="cand", card_id="c", body={**FINAL["good"], **changes})
    from agentmill.synth.candidate import write_task_folder

    folder = write_task_folder(cand, tmp_path / "cand", GymSet(gym_dir=GYM))
    return GateContext(
        candidate=cand,
        task=load_tool_task(folder),
        task_dir=folder,
        work_dir=tmp_path,
        builder=ImageBuilder(),
        clients=clients or {},
        settings=config,
    )


@sandbox
def test_structural_lint_fires_on_each_planted_defect(tmp_path):
    config = _config()
    cases = {
        "unknown_tool": {"calls": [{"tool": "delete_ticket", "arguments": {"ticket_id": 10}}]},
        "bad_arguments": {"calls": [{"tool": "close_ticket", "arguments": {"ticket_id": "ten", "resolution": "x"}}]},
        "verifier_sql": {
            "verifiers": [
                {
                    "name": "v",
                    "verifier_type": "database_state",
                    "validation_config": {
                        "query": "SELECT state FROM tickets WHERE id = 10",
                        "expected_value": "closed",
                    },
                }
            ]
        },
        "missing_entity": {"entities": [{"table": "tickets", "column": "id", "value": 99}]},
        "unknown_entity_column": {"entities": [{"table": "tickets", "column": "serial", "value": 1}]},
        "seed_error": {"seed_sql": "INSERT INTO tickets (id, title, status, priority) VALUES (10, 'x', 'bogus', 2);"},
    }

    async def go():
        out = {}
        for code, change in cases.items():
            out[code] = await StructuralLint().run(_ctx(tmp_path / code, config, **change))
        out["ok"] = await StructuralLint().run(_ctx(tmp_path / "ok", config))
        return out

    results = asyncio.run(go())
    assert results["ok"].passed, results["ok"]
    for code in cases:
        assert (results[code].passed, results[code].code) == (False, code), results[code]
    assert results["missing_entity"].category == "state_mismatch"
    assert results["unknown_tool"].category == "impossible_workflow"
    assert "'ten' is not of type 'integer'" in results["bad_arguments"].message


def test_semantic_check_rejects_arbitrary_constraints_and_survives_a_confused_judge(tmp_path):
    replies = iter(
        [
            Reply(json.dumps({"realistic": True, "arbitrary_constraints": [], "score": 9, "reason": "fine"})),
            Reply(
                json.dumps({"realistic": True, "arbitrary_constraints": ["notes must be exactly 17 words"], "score": 7})
            ),
            Reply(
                json.dumps({"realistic": False, "arbitrary_constraints": [], "score": 2, "reason": "nobody asks this"})
            ),
            Reply("Looks good to me!"),
        ]
    )
    with ChatServer(lambda r: next(replies)) as server:
        config = _config(server.base_url)

        async def go():
            client = ModelClient(base_url=server.base_url, model="judge", max_retries=0)
            ctx = _ctx(tmp_path, config, clients={"judge": client})
            return [await SemanticCheck().run(ctx) for _ in range(4)]

        ok, arbitrary, unrealistic, confused = asyncio.run(go())
        sent = server.requests[0]["messages"][1]["content"]
    assert ok.passed
    assert (arbitrary.code, arbitrary.category) == ("arbitrary_constraint", "bad_task_composition")
    assert unrealistic.code == "unrealistic" and not unrealistic.passed
    assert (confused.passed, confused.code, confused.fault) == (False, "judge_unparseable", "infra")
    assert "[good]" in sent and "close_ticket" in sent  # the judge saw the prompt and the reference calls


def test_critic_reply_that_is_not_a_diagnosis_falls_back_to_the_gate(tmp_path):
    failed = GateResult(
        gate="negative",
        passed=False,
        code="mutant_survived",
        category="weak_verifier",
        components=["verifiers"],
        message="wrong_record survived",
    )
    replies = iter(
        [
            Reply(json.dumps({"category": "bad_reference", "components": ["calls"], "explanation": "x"})),
            Reply(json.dumps({"category": "made_up", "components": ["calls"]})),
            Reply(json.dumps({"category": "bad_reference", "components": ["database"]})),
        ]
    )
    with ChatServer(lambda r: next(replies)) as server:

        async def go():
            client = ModelClient(base_url=server.base_url, model="critic", max_retries=0)
            body = parse_body(json.dumps(FINAL["good"]))
            return [await criticise(client, {}, body, failed) for _ in range(3)]

        critic, invented, bad_component = asyncio.run(go())
    assert (critic.category, critic.components, critic.by) == ("bad_reference", ["calls"], "critic")
    for d in (invented, bad_component):
        assert (d.category, d.components, d.by) == ("weak_verifier", ["verifiers"], "gate")


@pytest.mark.parametrize("min_score", [6.0, 7.5])
def test_semantic_min_score_decides_just_below_and_just_above(tmp_path, min_score):
    """A realistic verdict with no arbitrary constraint passes only when its score reaches the threshold;
    and the judge reads the whole candidate: entities, reference answer and verifiers as well."""
    scores = [min_score - 0.01, min_score, min_score + 0.01]
    replies = iter(
        Reply(json.dumps({"realistic": True, "arbitrary_constraints": [], "score": s, "reason": "ok"})) for s in scores
    )
    with ChatServer(lambda r: next(replies)) as server:
        config = _config(server.base_url)
        config.synth.semantic_min_score = min_score

        async def go():
            client = ModelClient(base_url=server.base_url, model="judge", max_retries=0)
            ctx = _ctx(tmp_path, config, clients={"judge": client})
            return [await SemanticCheck().run(ctx) for _ in scores]

        below, at, above = asyncio.run(go())
        sent = server.requests[0]["messages"][1]["content"]
    assert (below.passed, below.code, below.details["score"]) == (False, "unrealistic", min_score - 0.01)
    assert at.passed and above.passed
    good = FINAL["good"]
    for part in (
        "Verifiers:",
        good["verifiers"][1]["validation_config"]["query"],
        "entities",
        good["answer"],
        '"column": "id"',
    ):
        assert part in sent, part
