"""A teacher rewrites a repo_bugs task's template issue as a user's bug report.

The teacher sees only what the template already shows (the failing tests' names and assertion
text, the project's name), never the patch. Its text is used only if it still hides the bug: it
must not name the changed file, quote a changed line, the mutated expression or the changed
function's body, or show a diff or a line number; otherwise the template stays and the report
says why, per task."""

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


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


_LEAD = re.compile(r"^(?:(?:el)?if|while|return|assert|yield|not|for .+? in|with)\s+")


def _expression(line: str) -> str:
    """The expression a changed line holds: without its keyword, assignment target and trailing colon."""
    line = line.strip().rstrip(":").strip()
    line = _LEAD.sub("", line)
    target = re.match(r"^[\w.\[\]]+\s*[-+*/%|&^]?=(?!=)\s*", line)
    return line[target.end() :] if target else line


def leaks(text: str, patch: str, function_source: str = "") -> str | None:
    """Why a teacher's issue gives the bug away, or None: it names the changed file, quotes a changed
    line or the mutated expression (either version, spacing aside), quotes a line of the changed
    function's body, or shows a diff or a line number."""
    files = set(re.findall(r"^\+\+\+ b/(\S+)", patch, re.M))
    for f in files:
        if f in text or Path(f).name in text:
            return f"names the changed file {f}"
    changed = [ln[1:].strip() for ln in patch.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
    for line in changed:
        if len(line) > 8 and line in text:
            return f"quotes a changed line: {line[:60]}"
    squeezed = _squeeze(text)
    for line in changed:
        expr = _squeeze(_expression(line))
        if len(expr) >= 4 and not re.fullmatch(r"[\w.]+", expr) and expr in squeezed:  # a bare name says nothing
            return f"quotes the mutated expression: {_expression(line)[:60]}"
    for line in function_source.splitlines():
        body = line.strip()
        if len(body) > 12 and not body.startswith(("def ", "async def ", "@", "#")) and body in text:
            return f"quotes the changed function's code: {body[:60]}"
    if "@@ " in text or re.search(r"\bline \d+", text):
        return "shows a diff or a line number"
    return None


def changed_function(task: Path) -> str:
    """The changed function's source as the agent's copy has it (the buggy file), or '' if not found."""
    import tomllib

    from agentmill.sources.teacher_bugs import function_sites

    patch = (task / "solution" / "fix.patch").read_text(encoding="utf-8")
    found = re.search(r"^\+\+\+ b/(\S+)", patch, re.M)
    try:
        name = tomllib.loads((task / "task.toml").read_text(encoding="utf-8"))["metadata"]["function"]
        source = (task / "environment" / "project" / found.group(1)).read_text(encoding="utf-8") if found else ""
    except (OSError, KeyError, ValueError):
        return ""
    return next((site.text for site in function_sites(source) if site.qualname == name), "")


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
        patch = (task / "solution" / "fix.patch").read_text(encoding="utf-8")
        why = "empty reply" if not text else leaks(text, patch, changed_function(task))
        if why:
            kept[task.name] = why
            return
        (task / "instruction.md").write_text(text + "\n", encoding="utf-8")

    await asyncio.gather(*(one(t) for t in task_dirs))
    return kept
