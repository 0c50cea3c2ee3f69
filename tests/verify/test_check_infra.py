"""`check` and `rollout` stand on infrastructure that must fail loudly, and on a one-way import graph."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import sandbox, scratch_cache, simple_task

CLI = [sys.executable, "-m", "agentmill.cli"]
SRC = Path(__file__).resolve().parents[2] / "src"


@sandbox
@pytest.mark.parametrize("verb", [["check"], ["rollout", "--agent", "oracle", "--out", "RUN"]])
def test_an_unbuildable_verifier_toolkit_stops_the_run_at_the_start(tmp_path, verb):
    data = tmp_path / "ds"
    simple_task(data, "t0")
    run = tmp_path / "run"
    args = [str(run) if a == "RUN" else a for a in verb]
    env = {
        **os.environ,
        "AGENTMILL_CACHE": str(scratch_cache(tmp_path) / "fresh"),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": "",
        "PIP_CONFIG_FILE": os.devnull,
    }  # no registry: the toolkit cannot be built
    r = subprocess.run([*CLI, *args, str(data)], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "the offline verifier toolkit could not be built" in r.stderr and "Nothing was verified" in r.stderr
    assert "Traceback" not in r.stderr
    assert not any((run / "trials").glob("*")) if run.exists() else True  # no trial was run without it


def module_imports(path: Path, module: str) -> set[tuple[str, tuple[str, ...]]]:
    """(module, names) imported at import time (module level, outside TYPE_CHECKING blocks)."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(body):
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for h in getattr(node, "handlers", []):
                    visit(h.body)
            elif isinstance(node, ast.Import):
                found.update((a.name, ()) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                found.add((base, tuple(a.name for a in node.names)))

    visit(tree.body)
    return found


def import_graph(src: Path, root: str) -> dict[str, set[str]]:
    modules = {}
    for path in (src / root).rglob("*.py"):
        rel = path.relative_to(src).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        modules[".".join(parts)] = path
    graph = {}
    for name, path in modules.items():
        deps = set()
        for base, names in module_imports(path, name):
            submodules = {f"{base}.{n}" for n in names if f"{base}.{n}" in modules}
            # `from pkg import submodule` needs the submodule; `from pkg import name` needs pkg's __init__
            deps |= submodules if submodules and len(submodules) == len(names) else submodules | {base}
        graph[name] = {m for m in deps if m in modules and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            strong(v)
    return out


def test_the_cycle_finder_finds_a_planted_cycle(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "verify").mkdir(parents=True)
    (pkg / "rollout").mkdir()
    for d in (pkg, pkg / "verify", pkg / "rollout"):
        (d / "__init__.py").write_text("")
    (pkg / "verify" / "check.py").write_text("from pkg.rollout.trial import run_trial\n")
    (pkg / "rollout" / "trial.py").write_text("from ..verify import check\n")
    assert cycles(import_graph(tmp_path, "pkg")) == [["pkg.rollout.trial", "pkg.verify.check"]]


def test_agentmill_has_no_import_cycles():
    found = cycles(import_graph(SRC, "agentmill"))
    assert found == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_verifier_never_imports_the_rollout_machinery():
    graph = import_graph(SRC, "agentmill")
    offenders = {
        m: sorted(d for d in deps if d.startswith("agentmill.rollout"))
        for m, deps in graph.items()
        if m.startswith("agentmill.verify")
    }
    assert {m: d for m, d in offenders.items() if d} == {}


def folder_graph(graph: dict[str, set[str]], depth: int = 2) -> dict[str, set[str]]:
    """The import graph between folders (`agentmill.verify`, `agentmill.rollout`, ...)."""
    out: dict[str, set[str]] = {}
    for module, deps in graph.items():
        a = ".".join(module.split(".")[:depth])
        out.setdefault(a, set())
        for d in deps:
            b = ".".join(d.split(".")[:depth])
            if a != b:
                out[a].add(b)
    return out


def test_folders_import_one_way():
    found = cycles(folder_graph(import_graph(SRC, "agentmill")))
    assert found == [], "folder cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_folder_check_finds_the_old_verify_rollout_cycle(tmp_path):
    pkg = tmp_path / "pkg"
    for d in (pkg, pkg / "verify", pkg / "rollout"):
        d.mkdir(exist_ok=True)
        (d / "__init__.py").write_text("")
    (pkg / "verify" / "check.py").write_text("from pkg.rollout.trial import run_trial\n")  # as verify/check.py did
    (pkg / "verify" / "test_script.py").write_text("def verify(): ...\n")
    (pkg / "rollout" / "trial.py").write_text("from pkg.verify.test_script import verify\n")
    graph = import_graph(tmp_path, "pkg")
    assert cycles(graph) == []  # no module-level cycle...
    assert cycles(folder_graph(graph)) == [["pkg.rollout", "pkg.verify"]]  # ...but the folders depend on each other
