"""What every generator shares: where its output lives, admission by `check`, and its report.

A generator writes candidate task folders into `<out>/candidates/`; `admit` checks them all
(oracle must pass, nop must fail, in the real sandbox) and moves the admitted ones to
`<out>/tasks/`. Everything else is dropped with its reason, in `<out>/report.json`, so a recipe
reads `<out>/tasks` as an ordinary folder of task folders.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
import time
from collections import Counter
from collections.abc import Coroutine
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentmill.errors import AgentmillError
from agentmill.runtime.paths import cache_dir
from agentmill.tasks.hashing import hash_text

REPORT = "report.json"
DONE = ".done"  # written last: an output folder without it is regenerated


@dataclass
class Drop:
    name: str
    reason: str  # a short code first ("reference_fails: ..."), so reasons can be counted
    detail: str = ""


@dataclass
class SourceReport:
    kind: str
    candidates: int = 0
    kept: list[str] = field(default_factory=list)
    dropped: list[Drop] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # kind-specific (per-project throughput, ...)

    def drop(self, name: str, reason: str, detail: str = "") -> None:
        self.dropped.append(Drop(name, reason, detail[:2000]))

    @property
    def reasons(self) -> dict[str, int]:
        return dict(Counter(d.reason.split(":")[0] for d in self.dropped))

    @property
    def tasks_per_minute(self) -> float:
        return 60.0 * len(self.kept) / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict:
        return {**asdict(self), "reasons": self.reasons, "tasks_per_minute": round(self.tasks_per_minute, 2)}

    def write(self, out: Path) -> None:
        (out / REPORT).write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")


def slug(text: str, limit: int = 60) -> str:
    """A task folder name from free text: lowercase letters, digits and dashes."""
    out = "".join(c if c.isalnum() else "-" for c in text.lower().encode("ascii", "ignore").decode())
    return "-".join(p for p in out.split("-") if p)[:limit].strip("-") or "task"


def heredoc(path: str, text: str) -> str:
    """A shell line writing `text` to `path` verbatim (a quoted delimiter no line of it equals)."""
    tag = "AGENTMILL_" + hash_text(text)[:12].upper()
    return f"cat > {path} <<'{tag}'\n{text if text.endswith(chr(10)) else text + chr(10)}{tag}\n"


def cached_output(kind: str, *identity: str) -> Path:
    """The content-addressed output folder of a generator run inside a recipe (input + options)."""
    return cache_dir() / "sources" / kind / hash_text(kind, *identity)[:24]


def is_done(out: Path) -> bool:
    return (out / DONE).is_file() and (out / "tasks").is_dir()


def mark_done(out: Path) -> None:
    (out / "tasks").mkdir(parents=True, exist_ok=True)
    (out / DONE).write_text("", encoding="utf-8")


def fresh_output(out: Path) -> Path:
    """An empty output folder; refuses to clear a folder that is not a generator's output."""
    if out.exists() and any(out.iterdir()):
        if not ((out / REPORT).is_file() or (out / "candidates").is_dir()):
            raise AgentmillError(f"{out}: exists and is not a sources output folder; choose an empty or new --out")
        shutil.rmtree(out)
    (out / "candidates").mkdir(parents=True)
    (out / "tasks").mkdir()
    return out


def run_sync(coro: Coroutine) -> Any:
    """Run a coroutine from synchronous code, also when an event loop is already running here
    (a recipe's sources stage resolves its folders from inside the pipeline's loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target():
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=target, name="agentmill-sources")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def admit(
    out: Path, report: SourceReport, *, concurrency: int = 4, builder=None, why: dict[str, str] | None = None
) -> None:
    """Check every candidate in `<out>/candidates` (oracle 1, nop 0); move the admitted to `<out>/tasks`.

    `why` maps a verdict to the reason a kind reports for it (functions: unsolvable -> the
    reference fails its own tests)."""
    from agentmill.rollout.check import check_tasks
    from agentmill.tasks import load_dataset

    ds = load_dataset(out / "candidates")
    for err in ds.errors:
        report.drop(err.path.name, "broken", str(err.problem))
    results = await check_tasks(ds.tasks, concurrency=concurrency, builder=builder) if ds.tasks else []
    for r in sorted(results, key=lambda r: r.task.name):
        if r.verdict == "ok":
            shutil.move(str(r.task.path), str(out / "tasks" / r.task.name))
            report.kept.append(r.task.name)
        else:
            report.drop(r.task.name, (why or {}).get(r.verdict, r.verdict), r.reason)
    shutil.rmtree(out / "candidates", ignore_errors=True)


def timed(report: SourceReport):
    """Context manager adding the elapsed seconds to the report."""

    class _T:
        def __enter__(self):
            self.t0 = time.monotonic()

        def __exit__(self, *exc):
            report.seconds += time.monotonic() - self.t0

    return _T()
