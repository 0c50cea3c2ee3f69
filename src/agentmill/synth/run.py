"""The deterministic controller of `agentmill synth run`: cards -> scheduler -> Target boxes (parallel
workers) with meta-reviews -> Multiply boxes -> accepted task folders and JSONL. Resumable: a rerun on
the same output folder picks up where a killed run stopped (see store.py)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.images import ImageBuilder
from agentmill.synth.box import BoxEnv, run_box
from agentmill.synth.budget import Budget
from agentmill.synth.candidate import CallSpec, Candidate, CandidateBody, GymSet, write_task_folder
from agentmill.synth.cards import cards_from_diagnosis, read_cards
from agentmill.synth.clients import open_role_clients
from agentmill.synth.config import SynthConfig
from agentmill.synth.decontam import eval_sets
from agentmill.synth.gates import default_gates
from agentmill.synth.meta_review import review_if_due
from agentmill.synth.output import materialize
from agentmill.synth.scheduler import CardQuota, Scheduler, run_workers
from agentmill.synth.store import SynthStore
from agentmill.synth.user_cards import barrier_user_cards
from agentmill.tasks.tool_task import load_tool_task
from agentmill.tools.sandboxed import task_sandbox
from agentmill.tools.state import prepare_tool_state, require_spec, tool_schemas


async def describe_environment(env: GymSet, builder: ImageBuilder, work: Path) -> str:
    """The gyms' schema SQL and tool signatures, as the generator reads them. The tools are introspected
    inside a sandbox (tools.py is task code)."""
    probe = Candidate(
        candidate_id="probe",
        card_id="probe",
        body=CandidateBody(
            system="-",
            prompt="-",
            calls=[CallSpec(tool="-")],
            verifiers=[{"name": "probe", "verifier_type": "tool_execution", "validation_config": {}}],
        ),
    )
    task = load_tool_task(write_task_folder(probe, work / "probe", env))
    async with task_sandbox(task, builder=builder) as sb:
        await prepare_tool_state(task, sb)
        tools = await tool_schemas(task, sb)
    parts = []
    for g in require_spec(task).gyms:
        parts.append(f"## gym '{g.name}' tables (schema.sql)\n{(g.path / 'schema.sql').read_text()}")
    parts.append(
        "## tools\n"
        + "\n".join(
            f"- {t['name']}({', '.join(t['parameters'].get('properties', {}))}): "
            f"{t['description'].splitlines()[0] if t['description'] else ''}"
            for t in tools
        )
    )
    return "\n\n".join(parts)


def _same_environment(store: SynthStore, config: SynthConfig) -> None:
    """A resumed run must generate for the environment the folder's accepted tasks were made for."""
    env = config.env.model_dump_json()
    before = store.get_meta("env")
    if before is None:
        store.set_meta("env", env)
    elif before != env:
        raise AgentmillError(f"{store.out}: made for env {before}, but this config says {env}; use another --out")


async def load_cards(config: SynthConfig, store: SynthStore, clients) -> list[str]:
    """Cards into the store (once); returns the problems met (bad lines, barrier rejections)."""
    if store.get_meta("cards_loaded"):
        return []
    if config.synth.cards is not None:
        cards, problems = read_cards(config.synth.cards)
        cards, notes = barrier_user_cards(cards, config, store)  # user cards meet the barrier as written ones do
        problems += notes
    else:
        cards, problems = await cards_from_diagnosis(config, clients, store)
    for card in cards:
        store.add_card(card, config.synth.target_per_card)
    store.set_meta("cards_loaded", "1")
    store.set_meta("card_problems", "\n".join(problems))
    return problems


async def run_synth(config: SynthConfig, out: Path, *, builder: ImageBuilder | None = None, on_event=None) -> dict:
    started = time.monotonic()
    wall_start = time.time()
    store = SynthStore(out)
    try:
        _same_environment(store, config)  # before any model starts: a wrong folder is refused at once
        async with open_role_clients(config, on_event) as clients:
            try:
                summary = await _run(config, store, clients, builder or ImageBuilder(), on_event, started)
                summary["outages"] = store.interrupted_since(wall_start)  # boxes an endpoint failure ended
                return summary
            finally:
                for role, c in clients.items():
                    u = c.stats.usage
                    store.add_usage(role, c.stats.requests, u.prompt_tokens, u.completion_tokens, c.stats.cost_usd)
    finally:
        store.close()


async def _run(
    config: SynthConfig, store: SynthStore, clients: dict, builder: ImageBuilder, on_event, started: float
) -> dict:
    store.set_meta("config", config.model_dump_json())
    interrupted = store.interrupt_open()
    materialize(store, config.env)
    problems = await load_cards(config, store, clients)
    if not store.cards():
        raise AgentmillError("no usable capability cards" + (f": {problems[0]}" if problems else ""))
    environment = store.get_meta("environment")
    if environment is None:
        environment = await describe_environment(config.env, builder, store.out / "work")
        store.set_meta("environment", environment)
    env = BoxEnv(
        config=config,
        store=store,
        clients=clients,
        gates=default_gates(config.ballot.enabled, eval_sets(config)),
        builder=builder,
        environment=environment,
        on_event=on_event,
    )
    accepted = store.accepted_counts()
    scheduler = Scheduler(
        [
            CardQuota(
                card_id=c["card_id"],
                target_count=c["target_count"],
                accepted=accepted.get(c["card_id"], 0),
                multiplier=c["multiplier"],
            )
            for c in store.cards()
        ],
        seed=config.synth.seed,
    )
    scheduler.next_index = store.next_slot()
    lock = asyncio.Lock()

    def review() -> None:
        # at every multiple of meta_review_every finished target boxes, counted in the store: a review a
        # killed run owed is made before any new box starts (one, for the latest mark passed)
        done = review_if_due(store, scheduler, config.synth.meta_review_every, config.synth.flag_after_failures)
        if done is not None:
            env.emit("meta_review", review=done)

    review()

    async def target_box(slot) -> bool:
        ok = await run_box(env, slot.card_id, f"{slot.card_id}-s{slot.index:04d}", slot=slot.index)
        async with lock:
            review()
        return ok

    budget = Budget(config.synth, store, clients)
    # interrupted boxes gave their slots back (store.slots_used); slot indexes stay unique (next_index)
    await run_workers(
        scheduler,
        target_box,
        config.synth.workers,
        max(0, config.synth.max_slots - store.slots_used()),
        stop=budget.exhausted,
    )
    await _multiply(env, config, budget)
    seconds = time.monotonic() - started
    store.set_meta("seconds", str(float(store.get_meta("seconds") or 0) + seconds))
    return {
        "interrupted_before": interrupted,
        "card_problems": problems,
        "accepted": len(store.accepted("target")),
        "multiplied": len(store.accepted("multiply")),
        "gate_seconds": env.gate_seconds,
        "seconds": seconds,
        "budget_spent": budget.spent,
    }


async def _multiply(env: BoxEnv, config: SynthConfig, budget: Budget) -> None:
    """Variants of every accepted target sample (never of a variant: the store refuses that lineage)."""
    per = config.synth.multiply_per_target
    if per <= 0:
        return
    store = env.store
    gate = asyncio.Semaphore(config.synth.workers)

    async def for_parent(parent: Candidate) -> None:
        while True:
            async with gate:
                rows = store.rows("SELECT state FROM candidates WHERE parent_id = ?", (parent.candidate_id,))
                if sum(r["state"] in ("accepted", "rejected") for r in rows) >= per or len(rows) >= 3 * per:
                    return  # done, or boxes keep dying: the next run tries again
                if budget.exhausted():
                    return
                await run_box(env, parent.card_id, f"{parent.candidate_id}-m{len(rows)}", parent=parent)

    await asyncio.gather(*(for_parent(p) for p in store.accepted("target")))
