"""Bugs a teacher writes: it rewrites one function of the library with a subtle bug.

The teacher sees one function's source (and the project's name), never the tests. Its reply is
parsed into a `Mutation` of the same shape as the AST mutations' (mutations.py): the function's
exact lines replaced by the rewritten ones, re-indented to where the function sits. The mining
loop (repo_bugs.py) then runs it through exactly the same keep rule as an AST mutant (at least
one passing test fails, the rest still pass; reverting restores every test), and drops it as a
duplicate when its patch equals an earlier candidate's.

A reply is refused before any test runs (`TeacherBugError`, its code first) when it holds no
parsable function of that name (`bad_reply`), changes nothing (`no_change`: the same syntax tree)
or rewrites more than a slip's worth of lines (`not_subtle`).
"""

from __future__ import annotations

import ast
import difflib
import re
import textwrap
from dataclasses import dataclass

from agentmill.errors import AgentError
from agentmill.sources.mutations import Mutation, _is_stub

OPERATOR = "teacher"
MAX_CHANGED_LINES = 6  # removed + added lines of the function: a slip, not a rewrite

SYSTEM = """You plant one subtle bug in a Python function, the kind a careful developer could write by mistake:
an off-by-one, a flipped comparison, a forgotten case, a wrong variable or argument, a misplaced return.
The code must still run; only some inputs should give a wrong result.
Keep the name, signature, docstring, comments and formatting; change one or two lines only, and add no
comment or name that hints at the change.
Reply with the whole rewritten function in one ```python code block and nothing else."""


class TeacherBugError(AgentError, ValueError):
    """A teacher's reply that cannot become a candidate; the message starts with its reason code."""


@dataclass(frozen=True)
class FunctionSite:
    qualname: str
    start: int  # character offsets of the function's whole lines (from `def`, decorators excluded)
    end: int
    indent: str
    text: str  # source[start:end]


def function_sites(source: str) -> list[FunctionSite]:
    """Every function and method that does something (no stubs), in source order; [] if it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    found: list[FunctionSite] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and child.end_lineno:
                if child.body and not _is_stub(child):
                    s, e = starts[child.lineno - 1], starts[min(child.end_lineno, len(starts) - 1)]
                    text = source[s:e]
                    indent = text[: len(text) - len(text.lstrip(" \t"))]
                    found.append(FunctionSite(f"{prefix}{child.name}", s, e, indent, text))
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(tree, "")
    return found


def bug_messages(site: FunctionSite, project: str) -> list[dict]:
    user = (
        f"Project: {project}\nFunction: {site.qualname}\n\n```python\n{textwrap.dedent(site.text).rstrip()}\n```\n\n"
        "Rewrite this function with one subtle bug."
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S)


def _why(e: SyntaxError | ValueError) -> str:
    """Why ast.parse refused: a ValueError (a lone surrogate in the reply's text) has no `msg`."""
    return e.msg if isinstance(e, SyntaxError) else str(e)


def parse_bug(reply: str, site: FunctionSite, source: str) -> Mutation:
    """The teacher's rewrite of `site` as a Mutation of `source`, or TeacherBugError saying why not."""
    blocks = _BLOCK.findall(reply or "")
    code = textwrap.dedent(blocks[0] if blocks else (reply or "")).strip("\n")
    name = site.qualname.rsplit(".", 1)[-1]
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as e:
        raise TeacherBugError(f"bad_reply: the code does not parse ({_why(e)})") from None
    fns = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
    if len(fns) != 1:
        raise TeacherBugError(f"bad_reply: no single function named {name} in the reply")
    lines = code.splitlines(keepends=True)
    fn = fns[0]
    body = "".join(lines[fn.lineno - 1 : fn.end_lineno])  # from `def` (decorators the reply repeats are not ours)
    replacement = "".join(site.indent + ln if ln.strip() else ln for ln in body.splitlines(keepends=True))
    if not replacement.endswith("\n"):
        replacement += "\n"
    mutation = Mutation(OPERATOR, site.qualname, site.start, site.end, replacement)
    buggy = mutation.apply(source)
    try:
        new_tree = ast.parse(buggy)
    except (SyntaxError, ValueError) as e:
        raise TeacherBugError(f"bad_reply: the module no longer parses ({_why(e)})") from None
    if ast.dump(new_tree) == ast.dump(ast.parse(source)):
        raise TeacherBugError("no_change: the rewrite has the same syntax tree as the original")
    changed = [
        ln
        for ln in difflib.unified_diff(site.text.splitlines(), replacement.splitlines(), lineterm="", n=0)
        if ln[:1] in "+-" and ln[:3] not in ("+++", "---")
    ]
    if len(changed) > MAX_CHANGED_LINES:
        raise TeacherBugError(f"not_subtle: {len(changed)} lines changed (at most {MAX_CHANGED_LINES})")
    return mutation
