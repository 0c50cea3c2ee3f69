"""Cards a user wrote (`synth.cards`) meet the information barrier as written ones do: a card whose
`source_task` is found among the evaluation tasks (the `[diagnosis] tasks` folder, a `synth.benchmarks`
folder, or beside the cards file) is checked against it, and a card that leaks it is refused and
recorded (`barrier` table), never shown to the generator. A card whose source task is found nowhere
is used, with a note saying the barrier could not check it."""

from __future__ import annotations

from pathlib import Path

from agentmill.synth.barrier import BarrierConfig, check_card_against_task
from agentmill.synth.card import CapabilityCard
from agentmill.synth.store import SynthStore


def source_folder(card: CapabilityCard, config) -> Path | None:
    roots = [config.diagnosis.tasks] if config.diagnosis is not None else []
    roots += list(config.synth.benchmarks)
    if config.synth.cards is not None:
        roots.append(config.synth.cards.parent)
    for root in roots:
        folder = Path(root) / card.source_task
        if (
            card.source_task not in ("", ".", "..")
            and "/" not in card.source_task
            and (folder / "instruction.md").is_file()
        ):
            return folder
    return None


def barrier_user_cards(
    cards: list[CapabilityCard], config, store: SynthStore
) -> tuple[list[CapabilityCard], list[str]]:
    kept, notes = [], []
    for card in cards:
        folder = source_folder(card, config)
        if folder is None:
            notes.append(
                f"{card.card_id}: source task {card.source_task!r} not found among the evaluation tasks; "
                "the information barrier could not check this card"
            )
            kept.append(card)
            continue
        leaks = check_card_against_task(card, folder, config.barrier or BarrierConfig())
        if leaks:
            store.barrier_rejection(card, [leak.model_dump() for leak in leaks])
            notes.append(
                f"{card.card_id}: card rejected by the information barrier: {leaks[0].kind} "
                f"{leaks[0].value!r} in {leaks[0].field} (from {card.source_task})"
            )
            continue
        kept.append(card)
    return kept, notes
