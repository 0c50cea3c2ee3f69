"""Row exports (trl, sharegpt, harbor) one trial folder at a time, in this process or spread over
worker processes, with the same rows in the same order, byte for byte.

`RowMaker.make` is everything the export does to one trial folder: read, filter, render, redact,
serialize. Single-process, the parent calls it on each folder in turn; with workers, each worker
calls it on a chunk of folders and the parent takes the chunks back in folder order, counts the
funnel and writes the lines. At most IN_FLIGHT chunks per worker are out at once, so memory stays
bounded whatever the number of rows. tests/traces/test_export_parallel.py compares the two paths.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentmill.traces.filters import FilterSpec, Funnel, Rule, rules
from agentmill.traces.formats import ROW_BUILDERS
from agentmill.traces.records import UNREADABLE, TraceRecord, load_trace, subagent_records, unreadable
from agentmill.traces.render import Reasoning, render
from agentmill.traces.tokens import TokenCounter
from agentmill.traces.writer import JsonLine, jsonl_line

CHUNK = 16  # trial folders per task: amortizes the round trip to a worker
IN_FLIGHT = 4  # chunks out per worker: keeps each busy while the parent writes, bounds memory
MIN_TRIALS = 400  # fewer trials than this: starting workers would cost more than they save
MAX_WORKERS = 8


def export_rules(spec: FilterSpec, counter: TokenCounter, fmt: str, reasoning: Reasoning) -> list[Rule]:
    """The trace filters of an export (max_tokens counts the rows as this export renders them)."""

    def rendered(r: TraceRecord):
        x = render(r.trajectory, reasoning=reasoning)
        return x.messages, x.tools or None

    return rules(spec, counter, rendered, prompt_rows=fmt == "rl")


@dataclass
class Made:
    """One trial folder, judged: how many rules it passed (None when unreadable: `skipped` says why)
    and, when it passed them all, its row's line and the secrets redacted in it."""

    passed: int | None
    line: JsonLine | None = None
    redactions: int = 0
    skipped: str | None = None


class RowMaker:
    """What a row export does to one trial folder; built alike in the parent and in each worker (from
    picklable settings: rules hold closures). Its funnel judges; the parent's alone counts."""

    def __init__(self, spec: FilterSpec, counter: TokenCounter, fmt: str, reasoning: Reasoning):
        self.funnel = Funnel(export_rules(spec, counter, fmt, reasoning))
        self.builder, self.reasoning = ROW_BUILDERS[fmt], reasoning

    def make(self, folder: Path) -> Made:
        """The trial's own record (without its subagents')."""
        try:
            rec = load_trace(folder)
        except UNREADABLE as e:
            return Made(None, skipped=unreadable(folder, e))
        return self._made(rec)

    def make_all(self, folder: Path) -> list[Made]:
        """The trial's record, then its subagents' (a context handoff's summaries, traces/handoff.py)."""
        try:
            rec = load_trace(folder)
        except UNREADABLE as e:
            return [Made(None, skipped=unreadable(folder, e))]
        try:
            subagents = subagent_records(rec)
        except UNREADABLE as e:  # a broken subagent record costs only itself
            return [self._made(rec), Made(None, skipped=unreadable(folder, e))]
        return [self._made(r) for r in (rec, *subagents)]

    def _made(self, rec: TraceRecord) -> Made:
        passed = self.funnel.passes(rec)
        if passed < len(self.funnel.active):
            return Made(passed)
        rendered = render(rec.trajectory, reasoning=self.reasoning)
        return Made(passed, jsonl_line(self.builder(rec, rendered)), rendered.redactions)


def worker_count(requested: int | None, trials: int) -> int:
    """`requested` when given; else one per core this process may run on, or 1 for a small run."""
    if requested is not None:
        return max(1, requested)
    if trials < MIN_TRIALS:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, MAX_WORKERS))


def made_in_order(folders: Sequence[Path], maker: RowMaker, maker_args: tuple, workers: int) -> Iterator[Made]:
    """`maker.make_all(folder)` for every folder (its records: the trial, then its subagents), in order: here, or over `workers` processes that each
    build `RowMaker(*maker_args)`. Forked when this process runs a single thread (nothing to import
    again), else spawned: forking a threaded process can copy a lock another thread holds."""
    pool = None
    if workers > 1:
        ctx = multiprocessing.get_context("fork" if threading.active_count() == 1 else "spawn")
        try:
            pool = ctx.Pool(workers, initializer=_start_worker, initargs=maker_args)
        except OSError:  # no process-shared semaphores here (some sandboxes): the same rows, in this process
            pool = None
    if pool is None:
        yield from (made for f in folders for made in maker.make_all(f))
        return
    with pool:
        pending: deque = deque()
        for i in range(0, len(folders), CHUNK):
            pending.append(pool.apply_async(_make_chunk, (folders[i : i + CHUNK],)))
            if len(pending) >= workers * IN_FLIGHT:
                yield from pending.popleft().get()
        while pending:
            yield from pending.popleft().get()


_maker: RowMaker | None = None  # a worker's own


def _start_worker(*maker_args) -> None:
    global _maker
    _maker = RowMaker(*maker_args)


def _make_chunk(folders: Sequence[Path]) -> list[Made]:
    assert _maker is not None
    return [made for f in folders for made in _maker.make_all(f)]
