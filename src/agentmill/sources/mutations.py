"""Bugs a person could plausibly write, as AST edits of one function at a time.

Each `Mutation` replaces one span of the source text (the exact characters of one expression or
statement) so the diff stays small and reads like a human slip: a flipped comparison, an
off-by-one, swapped operands, a dropped branch, a removed `return`, swapped call arguments, `and`
for `or`. The rest of the file keeps its formatting byte for byte.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

FLIP = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
NON_COMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift)


@dataclass(frozen=True)
class Mutation:
    operator: str  # flip_comparison, off_by_one, swap_operands, drop_branch, remove_return, swap_arguments, bool_op
    function: str  # the enclosing function's qualified name
    start: int  # character offsets of the replaced span in the source text
    end: int
    replacement: str

    def apply(self, source: str) -> str:
        return source[: self.start] + self.replacement + source[self.end :]


class _Offsets:
    def __init__(self, source: str):
        self.source = source
        self.line_starts = [0]
        for line in source.splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))

    def span(self, node: ast.expr | ast.stmt) -> tuple[int, int]:
        # ast offsets are UTF-8 byte columns; convert through the line's bytes
        def at(line: int, col: int) -> int:
            start = self.line_starts[line - 1]
            text = self.source[start : self.line_starts[line]] if line < len(self.line_starts) else self.source[start:]
            return start + len(text.encode("utf-8")[:col].decode("utf-8", "ignore"))

        return at(node.lineno, node.col_offset), at(*_end(node))

    def line_span(self, node: ast.stmt) -> tuple[int, int]:
        """Whole lines of a statement, with its indentation and newline."""
        return self.line_starts[node.lineno - 1], self.line_starts[min(_end(node)[0], len(self.line_starts) - 1)]


def _end(node: ast.expr | ast.stmt) -> tuple[int, int]:
    """(line, byte column) where the node ends: ast.parse sets both on every node it makes."""
    if node.end_lineno is None or node.end_col_offset is None:
        raise TypeError(f"{type(node).__name__} at line {node.lineno} has no end position (not from ast.parse)")
    return node.end_lineno, node.end_col_offset


OP_TEXT = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}


def _between(off: _Offsets, a: ast.expr, b: ast.expr) -> tuple[int, int]:
    return off.span(a)[1], off.span(b)[0]


def _swap(off: _Offsets, a: ast.expr, b: ast.expr, operator: str, qual: str) -> Mutation | None:
    """`a <middle> b` -> `b <middle> a`, keeping the text between them as written."""
    (a0, a1), (b0, b1) = off.span(a), off.span(b)
    text_a, text_b, middle = off.source[a0:a1], off.source[b0:b1], off.source[a1:b0]
    if text_a == text_b or "\n" in text_a + text_b:
        return None
    return Mutation(operator, qual, a0, b1, text_b + middle + text_a)


def _sites(fn: ast.FunctionDef | ast.AsyncFunctionDef, qual: str, off: _Offsets):
    src = off.source
    off_by_one_sites: set[int] = set()  # ids of the constants a parent marked (walk yields parents first)
    for node in ast.walk(fn):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in FLIP:
            s, e = _between(off, node.left, node.comparators[0])
            old = OP_TEXT[type(node.ops[0])]
            if " ".join(src[s:e].split()) == old:  # the operator alone between them (no comments, parens)
                new = OP_TEXT[FLIP[type(node.ops[0])]]
                yield Mutation(
                    "flip_comparison",
                    qual,
                    s,
                    e,
                    src[s:e].replace(old, new)
                    if old != "in" or "not" in src[s:e]
                    else src[s:e].replace("in", "not in"),
                )
        elif (
            isinstance(node, ast.Constant)
            and type(node.value) is int
            and 0 <= node.value <= 64
            and id(node) in off_by_one_sites
        ):
            s, e = off.span(node)
            if src[s:e] == str(node.value):
                yield Mutation("off_by_one", qual, s, e, str(node.value + 1))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, NON_COMMUTATIVE):
            yield _swap(off, node.left, node.right, "swap_operands", qual)
        elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
            s, e = _between(off, node.values[0], node.values[1])
            old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            if src[s:e].strip() == old:
                yield Mutation("bool_op", qual, s, e, src[s:e].replace(old, new))
        elif (
            isinstance(node, ast.Call)
            and len(node.args) >= 2
            and not any(isinstance(a, ast.Starred) for a in node.args)
        ):
            yield _swap(off, node.args[0], node.args[1], "swap_arguments", qual)
        # off-by-one sites: integers added or subtracted, slice bounds, range() bounds
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            off_by_one_sites.add(id(node.right))
        elif isinstance(node, ast.Slice):
            for bound in (node.lower, node.upper):
                if bound is not None:
                    off_by_one_sites.add(id(bound))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
            for arg in node.args:
                off_by_one_sites.add(id(arg))
        if isinstance(node, ast.Return) and node.value is not None:  # the value computed, then dropped
            s, e = off.span(node)
            if src.startswith("return ", s):
                yield Mutation("remove_return", qual, s, s + len("return "), "")
        yield from _statement_sites(node, qual, off)


def _statement_sites(node: ast.AST, qual: str, off: _Offsets):
    """Dropped branches: a whole `if` without `else` inside a block of two or more statements."""
    for body in (getattr(node, "body", None), getattr(node, "orelse", None)):
        if not isinstance(body, list) or len(body) < 2:
            continue
        for stmt in body:
            if isinstance(stmt, ast.If) and not stmt.orelse:
                start, end = off.line_span(stmt)
                yield Mutation("drop_branch", qual, start, end, "")


def mutations(source: str) -> list[Mutation]:
    """Every candidate mutation of `source`'s functions, in source order; [] when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    off = _Offsets(source)
    found: list[Mutation] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = f"{prefix}{child.name}"
                if child.body and not _is_stub(child):
                    found.extend(m for m in _sites(child, qual, off) if m is not None)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(tree, "")
    unique = {(m.start, m.end, m.replacement): m for m in found}
    return sorted(unique.values(), key=lambda m: (m.start, m.end, m.replacement))


def _is_stub(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return not body or all(isinstance(s, (ast.Pass, ast.Raise)) for s in body)


def still_parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True
