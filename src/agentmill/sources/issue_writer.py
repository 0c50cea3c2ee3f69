"""A teacher rewrites a repo_bugs task's template issue as a user's bug report.

The teacher sees only what the template already shows (the failing tests' names and assertion
text, the project's name), never the patch. Its text is used only if it still hides the bug: it
must not name the changed file, quote a changed line or show a diff; otherwise the template stays
and the report counts the refusal."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from agentmill.models.client import ModelClient

SYSTEM = """You turn a failing-test summary into a short GitHub issue written by a user of the library.
Describe the observed symptom and what you expected, quoting the failing assertion if useful.
Do not guess where the bug is or how to fix it; do not mention file names or line numbers.
End with: "Please fix the library so the test suite passes again (the tests must not be changed)."
Reply with the issue text only (Markdown)."""


def leaks(text: str, patch: str) -> str | None:
    """Why a teacher's issue gives the bug away, or None."""
    files = set(re.findall(r"^\+\+\+ b/(\S+)", patch, re.M))
    for f in files:
        if f in text or Path(f).name in text:
            return f"names the changed file {f}"
    changed = [ln[1:].strip() for ln in patch.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
    for line in changed:
        if len(line) > 8 and line in text:
            return f"quotes a changed line: {line[:60]}"
    if "@@ " in text or re.search(r"\bline \d+", text):
        return "shows a diff or a line number"
    return None


async def rewrite_issues(task_dirs: list[Path], client: ModelClient) -> dict[str, str]:
    """Rewrite each task's instruction.md in place; returns {task name: why the template was kept}."""
    kept: dict[str, str] = {}

    async def one(task: Path) -> None:
        template = (task / "instruction.md").read_text(encoding="utf-8")
        try:
            reply = await client.chat([{"role": "system", "content": SYSTEM}, {"role": "user", "content": template}])
        except Exception as e:  # noqa: BLE001 - the endpoint's failure: the template stays
            kept[task.name] = f"endpoint: {e}"
            return
        text = (reply.content or "").strip()
        why = "empty reply" if not text else leaks(text, (task / "solution" / "fix.patch").read_text(encoding="utf-8"))
        if why:
            kept[task.name] = why
            return
        (task / "instruction.md").write_text(text + "\n", encoding="utf-8")

    await asyncio.gather(*(one(t) for t in task_dirs))
    return kept
