import json
from pathlib import Path

import pytest

from agentmill.errors import AgentmillError
from agentmill.synth.barrier import BarrierConfig, check_card, check_card_against_task, load_original
from agentmill.synth.card import CapabilityCard

PROMPT = (
    "I have two invitations clashing on Wednesday afternoon. Please accept the incident review "
    "about the VPN outage and decline the vendor demo, then tell the organiser politely why."
)
SEED = """
UPDATE collab_context SET value = 'priya.raman@corvid-logistics.com' WHERE key = 'current_user';
INSERT INTO events (id, organizer, title, starts_at, status) VALUES
  ('EVT900030', 'marcus.lindqvist@corvid-logistics.com', 'Vendor demo: service desk chatbot', '2026-03-18T14:00:00Z', 'confirmed');
INSERT INTO event_attendees (event_id, address, response) VALUES ('EVT900031', (SELECT owner FROM calendars WHERE id = 'CAL7781'), 'needs_action');
"""
VERIFIERS = [
    {
        "name": "declined",
        "verifier_type": "database_state",
        "gym_name": "collab",
        "validation_config": {
            "query": "SELECT COUNT(*) FROM event_attendees ea WHERE ea.event_id = 'EVT900030' "
            "AND ea.response = 'declined' AND ea.note LIKE '%QX-4471%'",
            "expected_value": 1,
            "comparison_type": "equals",
        },
    },
    {"name": "answer", "verifier_type": "response_check", "validation_config": {"expected": "ok"}},
]


@pytest.fixture
def task(tmp_path) -> Path:
    (tmp_path / "environment").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "instruction.md").write_text(PROMPT)
    (tmp_path / "environment" / "seed.sql").write_text(SEED)
    (tmp_path / "tests" / "verifiers.json").write_text(json.dumps(VERIFIERS))
    return tmp_path


def clean_card(**override) -> CapabilityCard:
    fields = dict(
        card_id="c1",
        source_task="collab-answer-clashing-invites",
        capability="Resolve a scheduling conflict between two invitations by answering each one differently.",
        tools=["list_events", "respond_to_event", "send_mail"],
        workflow=[
            "find the current user's pending invitations",
            "detect the overlapping pair",
            "accept one and decline the other",
            "notify the organiser of the declined one",
        ],
        target_failure="The target answered only the first invitation and never declined the other.",
        teacher_success="The teacher listed both events first and answered each with the right response.",
        end_state_properties=[
            "exactly one of the clashing invitations is accepted",
            "the other is declined",
            "responses of other attendees are unchanged",
        ],
        variable_dimensions=["day and time of the clash", "which meeting wins", "organisers"],
    )
    fields.update(override)
    return CapabilityCard(**fields)


def test_loads_the_protected_material(task):
    o = load_original(task)
    assert "EVT900030" in o.seed_values and "CAL7781" in o.seed_values
    assert "priya.raman@corvid-logistics.com" in o.seed_values  # from the UPDATE too
    assert "Vendor demo: service desk chatbot" in o.seed_values
    assert "needs_action" not in o.seed_values and "confirmed" not in o.seed_values  # gym vocabulary
    assert set(o.verifier_references) == {
        "event_attendees.event_id",
        "event_attendees.response",
        "event_attendees.note",
    }
    assert "%QX-4471%" in o.verifier_values
    assert len(o.verifier_queries) == 1


def test_clean_card_passes(task):
    assert check_card_against_task(clean_card(), task) == []


@pytest.mark.parametrize(
    "field,text,kind,value",
    [
        ("target_failure", "It wrote to EVT900030 instead.", "seed_value", "EVT900030"),
        (
            "capability",
            "Help PRIYA.RAMAN@corvid-logistics.com with invites",
            "seed_value",
            "priya.raman@corvid-logistics.com",
        ),
        (
            "teacher_success",
            "It found 'vendor demo:  service desk chatbot' first.",
            "seed_value",
            "Vendor demo: service desk chatbot",
        ),
        ("capability", "Answer the invite in calendar CAL7781.", "seed_value", "CAL7781"),
        ("target_failure", "The note must mention %QX-4471%.", "verifier_value", "%QX-4471%"),
        (
            "teacher_success",
            "Check event_attendees.response afterwards.",
            "verifier_reference",
            "event_attendees.response",
        ),
        (
            "target_failure",
            "please accept the incident review about the VPN outage quickly",
            "prompt_ngram",
            "please accept the incident review about the vpn outage",
        ),
    ],
)
def test_each_planted_leak_is_caught(task, field, text, kind, value):
    leaks = check_card_against_task(clean_card(**{field: text}), task)
    assert any(l.kind == kind and l.value == value and l.field == field for l in leaks), leaks


def test_leak_in_a_list_field_names_the_item(task):
    card = clean_card(workflow=["step one", "then look up EVT900031"])
    leaks = check_card_against_task(card, task)
    assert [(l.kind, l.field, l.source) for l in leaks] == [("seed_value", "workflow[1]", "environment/seed.sql")]


def test_whole_verifier_query_is_caught(task):
    card = clean_card(end_state_properties=[VERIFIERS[0]["validation_config"]["query"]])
    kinds = {l.kind for l in check_card_against_task(card, task)}
    assert {"verifier_query", "verifier_value", "seed_value"} <= kinds


def test_ngram_length_is_configurable(task):
    seven = "two invitations clashing on wednesday afternoon please"  # 7 prompt words in a row
    card = clean_card(capability=seven)
    assert check_card_against_task(card, task) == []
    leaks = check_card_against_task(card, task, BarrierConfig(ngram=7))
    assert [l.value for l in leaks] == [seven]


def test_provenance_is_not_checked_and_not_shown(task):
    card = clean_card(source_task="EVT900030")
    assert check_card_against_task(card, task) == []
    assert "source_task" not in card.generator_view()


def test_unparseable_seed_names_the_file(task):
    (task / "environment" / "seed.sql").write_text("INSERT INTO (((")
    with pytest.raises(AgentmillError, match="seed.sql"):
        load_original(task)


def test_missing_prompt_is_a_clear_error(tmp_path):
    with pytest.raises(AgentmillError, match="instruction.md"):
        load_original(tmp_path)


def test_bundled_task_loads_and_prompt_copy_is_caught():
    task = Path(__file__).parents[2] / "src/agentmill/tasks/sample_tools/collab-answer-clashing-invites"
    o = load_original(task)
    assert o.seed_values and o.verifier_references
    assert check_card(clean_card(), o) == []
    leaked = clean_card(capability=o.prompt)
    assert any(l.kind == "prompt_ngram" for l in check_card(leaked, o))
