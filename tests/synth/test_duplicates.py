"""Duplicates: a generator that repeats itself fills the output with one task, not six. Exact and near
repeats are refused (before any sandbox, and again at acceptance, where two workers race), a Multiply
variant must change one of the declared axes of its parent, and the meta-review reports repetition
and the capability dimensions no accepted sample covers."""

from __future__ import annotations

import json
from contextlib import ExitStack

from typer.testing import CliRunner

from agentmill.cli import app
from agentmill.synth.candidate import Candidate, CandidateBody
from agentmill.synth.coverage import coverage
from agentmill.synth.dedupe import changed_axes, check, similarity
from agentmill.synth.store import SynthStore
from tests.conftest import sandbox
from tests.helpers.chat_server import Reply
from tests.synth.scripted import GOOD, _body, card_line, config_text, role_servers


def _cand(body: dict, cid: str = "c", parent: str | None = None) -> Candidate:
    return Candidate(
        candidate_id=cid,
        card_id="card",
        kind="multiply" if parent else "target",
        parent_id=parent,
        body=CandidateBody.model_validate(body),
    )


def test_exact_and_near_repeats_are_refused_and_a_different_task_is_not():
    accepted = [_cand(GOOD, "first")]
    # the same task with other casing, spacing and punctuation: an exact repeat after normalisation
    same = {**GOOD, "prompt": GOOD["prompt"].upper().replace(" ", "  "), "seed_sql": GOOD["seed_sql"].lower()}
    r = check(_cand(same), accepted, 0.85)
    assert (r.passed, r.code, r.details["of"]) == (False, "duplicate", "first")
    # one word of the request changed: a near repeat
    near = {**GOOD, "prompt": GOOD["prompt"].replace("Please close", "Kindly close")}
    r = check(_cand(near), accepted, 0.85)
    assert (r.passed, r.code) == (False, "near_duplicate") and 0.85 <= r.details["similarity"] < 1
    # ... which a threshold above its similarity lets through (the threshold is what decides)
    assert check(_cand(near), accepted, min(1.0, r.details["similarity"] + 0.01)).passed
    # honest twin: another ticket, another fault, same template: not a repeat
    other = _body("good", 27, "Printer jams on tray 2", "roller")
    assert similarity(CandidateBody.model_validate(other), CandidateBody.model_validate(GOOD)) < 0.85
    assert check(_cand(other), accepted, 0.85).passed


def test_a_variant_must_change_a_declared_axis_of_its_parent():
    parent = _cand(GOOD, "p")
    r = check(_cand(GOOD, "v", parent="p"), [parent], 0.99)
    assert (r.passed, r.code) == (False, "variant_unchanged")
    # only the verifiers changed: an axis changed, but the request, state and calls repeat the parent
    stricter = {**GOOD, "verifiers": GOOD["verifiers"][:2]}
    assert changed_axes(CandidateBody.model_validate(stricter), parent.body) == ["verifiers"]
    assert check(_cand(stricter, "v", parent="p"), [parent], 0.85).code == "duplicate"
    moved = _body("good", 31, "Badge reader dead at door B", "reader board")
    assert set(changed_axes(CandidateBody.model_validate(moved), parent.body)) == {
        "request",
        "state",
        "entities",
        "reference",
        "verifiers",
    }
    assert check(_cand(moved, "v", parent="p"), [parent], 0.85).passed


class Repeater:
    """A generator that answers every request, generate, multiply or repair, with the same task."""

    def __call__(self, request: dict) -> Reply:
        system = request["messages"][0]["content"]
        if "You repair" in system:
            user = request["messages"][1]["content"]
            keys = [k.strip() for k in user.rsplit("each a corrected replacement:", 1)[1].split(",")]
            return Reply(json.dumps({k: GOOD[k] for k in keys}))
        return Reply(json.dumps(GOOD))


@sandbox
def test_a_generator_that_repeats_itself_gets_one_task_accepted_through_the_cli(tmp_path):
    cards = tmp_path / "cards.jsonl"
    lines = []
    for n in range(3):  # three cards, each naming a tool the repeated task never calls
        card = json.loads(card_line("good"))
        card["card_id"] = f"card-{n}"
        card["tools"] = card["tools"] + ["set_priority"]
        lines.append(json.dumps(card))
    cards.write_text("\n".join(lines) + "\n")
    with ExitStack() as stack:
        servers = {r: stack.enter_context(s) for r, s in role_servers(generator=Repeater()).items()}
        (tmp_path / "synth.toml").write_text(config_text(servers, cards, max_slots=3, multiply_per_target=1))
        result = CliRunner().invoke(
            app, ["synth", "run", str(tmp_path / "synth.toml"), "--out", str(tmp_path / "out"), "--no-report"]
        )
        generator_requests = list(servers["generator"].requests)
    assert result.exit_code == 0, result.output
    assert "accepted 1 target samples and 0 variants" in result.output
    out = tmp_path / "out"
    assert len(list((out / "tasks").iterdir())) == 1
    assert len((out / "accepted.jsonl").read_text().splitlines()) == 1
    store = SynthStore.open_existing(out)
    codes = [r["code"] for r in store.rows("SELECT code FROM gate_results WHERE passed = 0")]
    # every other box was refused as a repeat: the targets as duplicates, the variant as unchanged
    assert codes and set(codes) <= {"duplicate", "near_duplicate", "variant_unchanged"}, codes
    assert "variant_unchanged" in codes
    states = [r["state"] for r in store.rows("SELECT state FROM candidates")]
    assert states.count("accepted") == 1 and states.count("rejected") == len(states) - 1 >= 3
    # the meta-review reports the repetition and the dimension no accepted sample covers ...
    review = json.loads(store.rows("SELECT review FROM meta_reviews ORDER BY n DESC LIMIT 1")[0]["review"])
    assert sum(review["repeats"].values()) >= 2
    accepted_card = store.accepted()[0].card_id
    assert coverage(store)["unused_tools"] == {accepted_card: ["set_priority"]}
    assert review["unused_tools"] == {accepted_card: ["set_priority"]} and "set_priority" in review["guidance"]
    # ... and its guidance crossed the wire to the generator
    assert any("repeated accepted samples" in json.dumps(r["messages"]) for r in generator_requests)
