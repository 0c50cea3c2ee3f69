"""The tiny real-model synthesis config: every role the embedded SmolLM2 (`model = "local"`), one card,
one slot, tight limits. Used by tests/synth/test_local_model.py, `benchmarks/synth.py --local-model`,
and quoted in docs/synth.md. SmolLM2-135M is a smoke-test model: it is expected to be rejected
everywhere; the point is that every role runs, every failure is typed and the report renders."""

from __future__ import annotations

import json
from pathlib import Path

ROLES = ("generator", "critic", "judge", "target", "solver")

CARDS = {
    "itsm": {
        "card_id": "itsm-route",
        "source_task": "hand-written",
        "capability": "route an open incident to the group that owns the affected configuration item",
        "tools": ["get_incident", "get_config_item", "assign_incident", "add_work_note"],
        "workflow": [
            "look the incident up",
            "find the configuration item's support group",
            "assign the incident to that group",
            "leave a work note saying why",
        ],
        "target_failure": "assigned the incident without checking which group owns the item",
        "teacher_success": "read the item's support group before assigning",
        "end_state_properties": [
            "the incident's group is the item's support group",
            "a work note explains the routing",
            "no other incident changed",
        ],
        "variable_dimensions": ["incident", "configuration item", "group", "wording"],
    },
    "helpdesk": {
        "card_id": "helpdesk-close",
        "source_task": "hand-written",
        "capability": "close a resolved helpdesk ticket with a resolution note after looking it up",
        "tools": ["get_ticket", "close_ticket"],
        "workflow": ["look the ticket up", "close it with a note"],
        "target_failure": "closed the wrong ticket",
        "teacher_success": "looked the ticket up first",
        "end_state_properties": ["only the named ticket is closed", "the note names the fix"],
        "variable_dimensions": ["ticket", "fault", "wording"],
    },
}


def write_config(
    dest: Path,
    *,
    gym: str = "itsm",
    gym_dir: Path | None = None,
    max_repairs: int = 1,
    generator_tokens: int = 768,
    diagnosis_task: Path | None = None,
) -> Path:
    """dest/cards.jsonl and dest/synth.toml; `gym_dir` (a gym folder) instead of the bundled `gym`.
    `diagnosis_task`: no cards file; the diagnosis runs the target and the teacher (both SmolLM2) on that one
    tool task and the card writer (SmolLM2) writes the cards (stretch included: a smoke-test model fails)."""
    dest.mkdir(parents=True, exist_ok=True)
    card = CARDS["helpdesk" if gym_dir is not None else gym]
    env = f'gym_dir = "{gym_dir}"' if gym_dir is not None else f'gyms = ["{gym}"]'
    if diagnosis_task is None:
        (dest / "cards.jsonl").write_text(json.dumps(card) + "\n")
        source = ['cards = "cards.jsonl"']
        diagnosis = []
    else:
        import shutil

        shutil.copytree(diagnosis_task, dest / "eval-tasks" / diagnosis_task.name, dirs_exist_ok=True)
        source = []
        diagnosis = [
            "",
            "[diagnosis]",
            'tasks = "eval-tasks"',
            'target_run = "runs/target"',
            'teacher_run = "runs/teacher"',
            "run_rollouts = true",
            "attempts = 1",
            "include_stretch = true",
        ]
    lines = [
        "[synth]",
        *source,
        "workers = 1",
        "max_slots = 1",
        "target_per_card = 1",
        f"max_repairs = {max_repairs}",
        "multiply_per_target = 1",
        "meta_review_every = 1",
        "outage_pause_s = 1.0",
        "outage_retries = 1",
        "",
        "[env]",
        env,
        "",
        "[ballot]",
        "k = 1",
        "target_max_solves = 0",
        "solver_min_solves = 1",
        "max_turns = 3",
        "concurrency = 1",
        *diagnosis,
    ]
    for role in ROLES + (("card_writer", "teacher") if diagnosis_task is not None else ()):
        tokens = generator_tokens if role == "generator" else 192
        lines += [
            "",
            f"[roles.{role}]",
            'model = "local"',
            "temperature = 0.0",
            f"max_tokens = {tokens}",
            "max_retries = 1",
            "timeout = 900",
        ]
    (dest / "synth.toml").write_text("\n".join(lines) + "\n")
    return dest / "synth.toml"


def typed_outcome_problems(out: Path) -> list[str]:
    """What is not a typed outcome in a finished run's store (empty when every failure says what and whose)."""
    from agentmill.synth.gates.base import CATEGORIES
    from agentmill.synth.store import SynthStore

    problems: list[str] = []
    store = SynthStore.open_existing(out)
    try:
        cands = store.rows("SELECT candidate_id, state, reason FROM candidates")
        if not cands:
            problems.append("no candidate was started")
        problems += [
            f"{c['candidate_id']}: left {c['state']}"
            for c in cands
            if c["state"] not in ("accepted", "rejected", "interrupted")
        ]
        problems += [
            f"{c['candidate_id']}: {c['state']} without a reason"
            for c in cands
            if c["state"] in ("rejected", "interrupted") and not c["reason"]
        ]
        diagnosed = {r["attempt_id"]: r["category"] for r in store.rows("SELECT attempt_id, category FROM diagnoses")}
        for g in store.rows("SELECT attempt_id, gate, passed, code, fault FROM gate_results"):
            if not g["code"] or g["fault"] not in ("candidate", "infra"):
                problems.append(f"attempt {g['attempt_id']}: untyped {g['gate']} verdict {g}")
            elif not g["passed"] and g["fault"] == "candidate" and diagnosed.get(g["attempt_id"]) not in CATEGORIES:
                problems.append(f"attempt {g['attempt_id']}: {g['gate']} {g['code']} has no diagnosis")
        problems += [
            f"attempt {a['attempt_id']}: no candidate and no error"
            for a in store.rows("SELECT attempt_id, body, error FROM attempts")
            if a["body"] is None and not a["error"]
        ]
    finally:
        store.close()
    return problems
