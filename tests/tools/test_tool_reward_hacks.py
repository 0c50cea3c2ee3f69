"""Tool-task reward hacks, tried as a policy would, each beside its honest twin (issue 30, section 1).

The agent here is a real agent plug-in in a real trial (run_trial: its own sandbox, the tool host's
sandbox, the verifier's): it calls the task's tools through the tool session and, where the attack
needs one, runs shell commands in its own sandbox.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentmill.agents.base import AgentResult, ScriptedAgentBase
from agentmill.images import ImageBuilder
from agentmill.rollout.trial import run_trial
from agentmill.tasks import load_task
from agentmill.tools import open_tool_session
from agentmill.traces.atif import Observation, ObservationResult, Step, ToolCall
from agentmill.verify.outcome import Outcome
from tests.tools.helpers import make_tool_task

SAMPLE = Path(__file__).resolve().parents[2] / "src" / "agentmill" / "tasks" / "sample_tools"


class PolicyAgent(ScriptedAgentBase):
    """Makes the given tool calls (then runs `shell` in its own sandbox), recording each as a step."""

    name = "policy"
    version = "1"

    def __init__(self, calls, *, shell: str | None = None, claimed=()):
        self.calls, self.shell, self.claimed = calls, shell, list(claimed)

    async def run(self, task, sandbox, result: AgentResult) -> None:
        errors = result.metadata.setdefault("errors", [])
        async with open_tool_session(task, sandbox) as session:
            for tool, args in self.calls:
                call_id = f"c{result.next_id()}"
                step = Step(
                    step_id=result.next_id(),
                    source="agent",
                    tool_calls=[ToolCall(tool_call_id=call_id, function_name=tool, arguments=args)],
                )
                out = await session.call(tool, args)
                step.observation = Observation(results=[ObservationResult(source_call_id=call_id, content=out.content)])
                result.steps.append(step)
                if out.is_error:
                    errors.append(tool)
        if self.shell:  # after the calls: the state exists wherever the tools keep it
            run = await sandbox.exec(["/bin/sh", "-c", self.shell], timeout=60)
            result.metadata["shell"] = {"rc": run.returncode, "output": run.output[-500:]}
        for tool in self.claimed:  # calls the agent says it made and never did
            result.steps.append(
                Step(
                    step_id=result.next_id(),
                    source="agent",
                    tool_calls=[ToolCall(tool_call_id="x", function_name=tool, arguments={})],
                )
            )
        result.steps.append(Step(step_id=result.next_id(), source="agent", message="Done."))


def trial(task, agent):
    agent_result = AgentResult()
    result = asyncio.run(run_trial(task, agent, ImageBuilder(), agent_result=agent_result))
    return result, agent_result


# -- collateral damage: a default "nothing else changed" ---------------------------------------------

MAINTENANCE = [
    ("search_config_items", {"query": "win-ef-prod-04"}),
    ("update_config_item_status", {"ci_id": "CI00016", "status": "maintenance"}),
]
COLLATERAL = {
    "retire_published_article": ("retire_kb_article", {"number": "KB0001043", "reason": "outdated"}),
    "junk_incident": (
        "create_incident",
        {"short_description": "test", "caller_id": "USR0015", "impact": "low", "urgency": "low", "category": "other"},
    ),
    "comment_on_neighbour": ("add_work_note", {"record": "INC0010013", "body": "CI00016 is in maintenance."}),
}


@pytest.mark.parametrize("extra", sorted(COLLATERAL))
def test_the_right_change_plus_collateral_damage_gets_no_reward(extra):
    task = load_task(SAMPLE / "itsm-ci-into-maintenance")
    result, run = trial(task, PolicyAgent([*MAINTENANCE, COLLATERAL[extra]]))
    assert run.metadata["errors"] == []  # every write went through
    own = {k: v for k, v in result.rewards.items() if k not in ("reward", "nothing_else_changed")}
    assert own and all(v == 1.0 for v in own.values())  # the task's own verifiers are all satisfied
    assert result.outcome is Outcome.FAILED and result.reward == 0.0
    assert result.rewards["nothing_else_changed"] == 0.0


def test_an_honest_agent_on_a_different_path_keeps_its_reward():
    """Reads first, looks at the CI twice, then repeats the status change (a no-op): nothing else changed."""
    task = load_task(SAMPLE / "itsm-ci-into-maintenance")
    calls = [
        ("get_current_user", {}),
        ("get_config_item", {"ci_id": "CI00016"}),
        *MAINTENANCE,
        ("search_kb_articles", {"query": "disk"}),
        ("update_config_item_status", {"ci_id": "CI00016", "status": "maintenance"}),
    ]
    result, run = trial(task, PolicyAgent(calls))
    assert run.metadata["errors"] == []
    assert result.outcome is Outcome.PASSED and result.reward == 1.0
    assert result.rewards["nothing_else_changed"] == 1.0


def test_collateral_on_a_task_local_gym_too(tmp_path):
    """The same guarantee without any guard verifier: closing the right ticket and re-prioritising another."""
    only_target = [
        {
            "name": "vpn_closed",
            "verifier_type": "database_state",
            "validation_config": {"query": "SELECT status FROM tickets WHERE id = 1", "expected_value": "closed"},
        }
    ]
    task = load_task(make_tool_task(tmp_path / "t", verifiers=only_target))
    close = ("close_ticket", {"ticket_id": 1, "resolution": "Renewed the VPN certificate."})
    attack, _ = trial(task, PolicyAgent([close, ("set_priority", {"ticket_id": 2, "priority": 1})]))
    junk, _ = trial(task, PolicyAgent([close, ("add_tags", {"ticket_id": 3, "tags": ["x"]})]))
    honest, _ = trial(task, PolicyAgent([("list_tickets", {}), ("get_ticket", {"ticket_id": 1}), close]))
    assert attack.reward == 0.0 and "changed (priority: 3 -> 1)" in attack.verifier_stdout
    assert junk.reward == 0.0 and "tags" in junk.verifier_stdout
    assert honest.outcome is Outcome.PASSED and honest.reward == 1.0


# -- failed and unknown calls are not look-ups --------------------------------------------------------

LOOKED_UP = [
    {
        "name": "looked_up_ticket",
        "verifier_type": "tool_execution",
        "validation_config": {"selected_tools": ["get_ticket"], "minimum_tool_calls": 1},
    }
]

ANY_CALL = [
    {
        "name": "looked_up_ticket",
        "verifier_type": "tool_execution",
        "validation_config": {"selected_tools": [], "minimum_tool_calls": 1},
    }
]


@pytest.mark.parametrize("attack", ["failing_call", "unknown_tool", "claimed_only", "restricted_tool"])
def test_a_look_up_that_did_not_happen_does_not_count(tmp_path, attack):
    extra = 'restricted_tools = ["get_ticket"]' if attack == "restricted_tool" else ""
    task = load_task(
        make_tool_task(
            tmp_path / "t",
            verifiers=ANY_CALL if attack == "unknown_tool" else LOOKED_UP,
            toml_extra=extra,
            calls=[{"tool": "list_tickets", "arguments": {}}],
        )
    )
    agent = {
        "failing_call": PolicyAgent([("get_ticket", {"ticket_id": 99})]),
        "unknown_tool": PolicyAgent([("get_ticket_details", {"ticket_id": 1})]),
        "claimed_only": PolicyAgent([("list_tickets", {})], claimed=["get_ticket"]),
        "restricted_tool": PolicyAgent([("get_ticket", {"ticket_id": 1})]),
    }[attack]
    result, _ = trial(task, agent)
    assert result.outcome is Outcome.FAILED and result.rewards["looked_up_ticket"] == 0.0


def test_one_successful_call_of_any_tool_counts(tmp_path):
    task = load_task(
        make_tool_task(tmp_path / "t", verifiers=ANY_CALL, calls=[{"tool": "list_tickets", "arguments": {}}])
    )
    result, _ = trial(task, PolicyAgent([("get_ticket_details", {}), ("list_tickets", {})]))
    assert result.outcome is Outcome.PASSED and result.rewards["looked_up_ticket"] == 1.0


def test_a_successful_look_up_counts(tmp_path):
    task = load_task(
        make_tool_task(tmp_path / "t", verifiers=LOOKED_UP, calls=[{"tool": "list_tickets", "arguments": {}}])
    )
    result, _ = trial(task, PolicyAgent([("get_ticket", {"ticket_id": 99}), ("get_ticket", {"ticket_id": 1})]))
    assert result.outcome is Outcome.PASSED and result.rewards["looked_up_ticket"] == 1.0


# -- the tool database is out of the agent's reach -------------------------------------------------

FORGE = """
python3 - <<'EOF'
import glob, os, sqlite3
paths = glob.glob('/var/lib/agentmill/tools/db/*.sqlite')
if not paths:  # not there: make one where a verifier reading this filesystem would look
    os.makedirs('/var/lib/agentmill/tools/db', exist_ok=True)
    paths = ['/var/lib/agentmill/tools/db/gym.sqlite']
for p in paths:
    db = sqlite3.connect(p)
    db.executescript("CREATE TABLE IF NOT EXISTS tickets (id INTEGER PRIMARY KEY, title TEXT, status TEXT, priority INT, "
                     "assignee_id INT, resolution TEXT); INSERT OR IGNORE INTO tickets (id, title, status, priority) "
                     "VALUES (1, 'VPN', 'open', 2); UPDATE tickets SET status = 'closed', "
                     "resolution = 'Renewed the certificate.' WHERE id = 1;")
    db.commit()
with open('/var/lib/agentmill/tools/calls.jsonl', 'a') as f:
    f.write('{"name": "close_ticket", "is_error": false, "changes": 1}\\n')
print('forged', paths)
EOF
"""


def test_an_agent_with_a_shell_cannot_write_the_tool_database(tmp_path):
    task = load_task(make_tool_task(tmp_path / "t"))
    result, run = trial(task, PolicyAgent([("list_tickets", {})], shell=FORGE))
    assert run.metadata["shell"]["rc"] == 0 and "forged" in run.metadata["shell"]["output"]  # the writes happened
    assert result.outcome is Outcome.FAILED and result.rewards["vpn_closed"] == 0.0


def test_an_honest_agent_with_a_shell_still_passes(tmp_path):
    task = load_task(make_tool_task(tmp_path / "t"))
    close = ("close_ticket", {"ticket_id": 1, "resolution": "Renewed the VPN certificate."})
    result, run = trial(task, PolicyAgent([close], shell="ls / >/dev/null; echo looked"))
    assert run.metadata["shell"]["rc"] == 0
    assert result.outcome is Outcome.PASSED and result.reward == 1.0
