"""One error vocabulary (agentmill/errors.py): every exception class agentmill defines is an
AgentmillError, so a caller can catch what agentmill raises in one clause and read whose fault it is
from the class. Two kinds of code stand outside it, each named here with the reason."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import agentmill
from agentmill.errors import AgentmillError

PACKAGE = Path(agentmill.__file__).parent

# Code that runs inside the sandbox on the guest's own python3, where agentmill cannot be imported.
# Files outside any package (sandbox/guest/, tools/guest/, gym tools, task folders) are guest code by
# their place; these modules are host modules as well, and copied into tasks as they are.
GUEST_MODULES = {
    "agentmill.grounded.artifacts": "each grounded task's tests/check_artifacts.py (standard library only)",
}

# Private control-flow signals: raised and caught inside one module, never an error anyone sees.
CONTROL_FLOW = {
    "agentmill.traces.writer._Empty": "zero rows: discards the temporary file, caught by write_rows",
    "agentmill.images.build._NetworkRetry": "starts a host build over, caught by _host_build",
}


def _module_name(path: Path, package: Path) -> str | None:
    """The module's import name, or None for a file outside any package (guest code, task data)."""
    rel = path.relative_to(package.parent).with_suffix("")
    folders = rel.parts[:-1]
    if not all((package.parent.joinpath(*folders[: i + 1]) / "__init__.py").exists() for i in range(len(folders))):
        return None
    return ".".join(folders if rel.name == "__init__" else rel.parts)


def _class_names(tree: ast.Module) -> list[str]:
    """Qualified names of the classes a module defines at its top level or inside its classes."""
    out: list[str] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                out.append(prefix + node.name)
                visit(node.body, f"{prefix}{node.name}.")

    visit(tree.body, "")
    return out


def exception_classes(package: Path = PACKAGE) -> tuple[dict[str, type], list[str]]:
    """Every exception class defined in the package's modules ("module.Qual.Name" -> class), and the
    guest files (outside any package) that were not imported."""
    found: dict[str, type] = {}
    guest: list[str] = []
    for path in sorted(package.rglob("*.py")):
        name = _module_name(path, package)
        if name is None:
            guest.append(str(path.relative_to(package)))
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes = _class_names(tree)
        if not classes:
            continue
        module = importlib.import_module(name)
        for qual in classes:
            obj: object = module
            for part in qual.split("."):
                obj = getattr(obj, part)
            if isinstance(obj, type) and issubclass(obj, BaseException) and obj.__module__ == name:
                found[f"{name}.{qual}"] = obj
    return found, guest


def outside_the_vocabulary(found: dict[str, type]) -> list[str]:
    return sorted(
        name
        for name, cls in found.items()
        if not issubclass(cls, AgentmillError)
        and name not in CONTROL_FLOW
        and name.rpartition(".")[0] not in GUEST_MODULES
    )


def test_every_exception_class_is_an_agentmill_error():
    found, _ = exception_classes()
    assert len(found) > 40  # the walk reached the package's modules
    assert outside_the_vocabulary(found) == []


def test_the_exemptions_are_still_what_they_say():
    found, guest = exception_classes()
    for name in CONTROL_FLOW:  # still defined, still private
        assert name in found and name.rpartition(".")[2].startswith("_"), name
    for module in (*GUEST_MODULES, *(f"agentmill/{g}" for g in guest)):
        path = PACKAGE.parent / (module.replace(".", "/") + ".py" if not module.endswith(".py") else module)
        imports = [
            node
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, (ast.Import, ast.ImportFrom))
        ]
        names = [a.name for n in imports if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in imports if isinstance(n, ast.ImportFrom)]
        assert not any(n.split(".")[0] == "agentmill" for n in names), f"{module} imports agentmill: not guest code"
    assert any(g.startswith("sandbox/guest/") for g in guest)  # the guest server is found as guest code


def test_a_new_exception_outside_the_vocabulary_is_caught(tmp_path, monkeypatch):
    pkg = tmp_path / "planted"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(
        "from agentmill.errors import SandboxError\n"
        "class GoodError(SandboxError): ...\n"
        "class Holder:\n    class Inner(ValueError): ...\n"
        "class Bare(Exception): ...\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    found, _ = exception_classes(pkg)
    assert set(found) == {"planted.mod.GoodError", "planted.mod.Holder.Inner", "planted.mod.Bare"}
    assert outside_the_vocabulary(found) == ["planted.mod.Bare", "planted.mod.Holder.Inner"]


def test_callers_that_catch_value_error_still_catch_the_errors_that_were_value_errors():
    from agentmill.agents.terminus.parse import ReplyError
    from agentmill.sandbox.tmux_channel import NotSendableError
    from agentmill.verify.outcome import RewardError

    for cls in (ReplyError, NotSendableError, RewardError):
        assert issubclass(cls, ValueError) and issubclass(cls, AgentmillError)
