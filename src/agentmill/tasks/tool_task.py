"""The tool-task kind: read a tool-task folder into the Task record.

    instruction.md            the user prompt
    system.md                 the system specification (role, policies)
    task.toml                 [environment] kind = "tools", gyms = ["itsm", ...]
    environment/seed.sql      the task's own state over the gyms' base data (optional)
    environment/gym/          a task-local gym: schema.sql, seed.sql (optional), tools.py
    tests/verifiers.json      EnterpriseOps-Gym verifiers
    solution/calls.json       reference calls: [{tool, arguments}] or {"calls": [...], "answer": "..."}

Gym names in `gyms` resolve to `environment/gyms/<name>/`, else the bundled gym of that name
(`agentmill/tools/gyms/<name>/`). `environment/gym/` is the first named gym (overriding a bundled
one of that name), or the task's only gym, named "gym", when `gyms` is empty.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from agentmill.errors import TaskError
from agentmill.tasks.hashing import hash_tree
from agentmill.tasks.io import parse_config, read_text
from agentmill.tasks.model import Task
from agentmill.tasks.tool_spec import GymRef, ReferenceCall, ToolSpec, Verifier

BUNDLED_GYMS = Path(__file__).resolve().parent.parent / "tools" / "gyms"
_VERIFIER = TypeAdapter(Verifier)


def bundled_gym_names() -> list[str]:
    if not BUNDLED_GYMS.is_dir():
        return []
    return sorted(p.name for p in BUNDLED_GYMS.iterdir() if (p / "schema.sql").is_file())


def load_tool_task(root: Path) -> Task:
    root = Path(root).resolve()
    instruction = read_text(root / "instruction.md", what="instruction")
    toml_path = root / "task.toml"
    try:
        raw = tomllib.loads(read_text(toml_path, what="task config"))
    except tomllib.TOMLDecodeError as e:
        raise TaskError(toml_path, f"invalid TOML: {e}") from None
    config, warnings = parse_config(raw, toml_path)
    env = config.environment
    system = read_text(root / "system.md", what="system specification") if (root / "system.md").exists() else None
    if system is None:
        warnings.append(f"{root / 'system.md'}: missing: the agent gets no system specification")
    gyms = resolve_gyms(root, env.gyms, toml_path)
    seeds = tuple(p for p in [root / "environment" / "seed.sql"] if p.is_file())
    verifiers = load_verifiers(root / "tests" / "verifiers.json")
    calls_path = root / "solution" / "calls.json"
    calls, answer = load_calls(calls_path) if calls_path.is_file() else (None, None)
    if calls is None:
        warnings.append(f"{calls_path}: missing: no reference solution")
    spec = ToolSpec(
        gyms=gyms,
        seeds=seeds,
        verifiers=tuple(verifiers),
        calls=calls,
        answer=answer,
        selected_tools=tuple(env.tools),
        restricted_tools=tuple(env.restricted_tools),
        tool_timeout_sec=env.tool_timeout_sec,
    )
    env_dir = root / "environment"
    return Task(
        name=root.name,
        path=root,
        format="harbor",
        instruction=instruction,
        config=config,
        content_hash=_content_hash(root, gyms),
        environment_dir=env_dir if env_dir.is_dir() else None,
        dockerfile=None,
        tests_sources=(root / "tests",),
        test_script="verifiers.json",
        solution_sources=(root / "solution",) if calls is not None else (),
        solution_script="calls.json" if calls is not None else None,
        warnings=tuple(warnings),
        kind="tools",
        system=system,
        tool_spec=spec,
    )


def _content_hash(root: Path, gyms: tuple[GymRef, ...]) -> str:
    """The task's files plus every bundled gym it uses: a changed gym changes the task."""
    from agentmill.tasks.hashing import hash_text

    parts = [hash_tree(root)] + [f"{g.name}:{hash_tree(g.path)}" for g in gyms if g.bundled]
    return parts[0] if len(parts) == 1 else hash_text(*parts)


def resolve_gyms(root: Path, names: list[str], where: Path) -> tuple[GymRef, ...]:
    local = root / "environment" / "gym"
    if not names:
        if not local.is_dir():
            raise TaskError(where, "a tools task needs [environment] gyms = [...] or an environment/gym/ folder")
        names = ["gym"]
    if len(set(names)) != len(names):
        raise TaskError(where, f"field 'environment.gyms': duplicate gym names {names}")
    out = []
    for i, name in enumerate(names):
        if i == 0 and local.is_dir():
            path, bundled = local, False
        elif (root / "environment" / "gyms" / name).is_dir():
            path, bundled = root / "environment" / "gyms" / name, False
        elif (BUNDLED_GYMS / name).is_dir():
            path, bundled = BUNDLED_GYMS / name, True
        else:
            raise TaskError(
                where,
                f"field 'environment.gyms': unknown gym '{name}' (bundled: "
                f"{', '.join(bundled_gym_names()) or 'none'}; or add environment/gym/)",
            )
        if not (path / "schema.sql").is_file():
            raise TaskError(path / "schema.sql", f"missing: gym '{name}' needs a schema")
        out.append(GymRef(name=name, path=path.resolve(), bundled=bundled))
    return tuple(out)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise TaskError(path, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise TaskError(path, f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    tags = {"database_state", "response_check", "tool_execution"}  # the union's branch, not a field
    field = ".".join(str(p) for p in err["loc"] if str(p) not in tags)
    value = err.get("input")
    shown = (
        json.dumps(value)[:80]
        if isinstance(value, (str, int, float, list, dict, bool)) or value is None
        else repr(value)[:80]
    )
    return f"field '{field}': {err['msg']} (got {shown})" if field else f"{err['msg']} (got {shown})"


def load_verifiers(path: Path) -> list:
    """tests/verifiers.json: a list of verifiers, or an object with a "verifiers" list."""
    if not path.is_file():
        raise TaskError(path, "missing: a tools task is verified by tests/verifiers.json")
    data = _read_json(path)
    if isinstance(data, dict) and "verifiers" in data:
        data = data["verifiers"]
    if not isinstance(data, list):
        raise TaskError(path, "must be a JSON list of verifiers")
    return [parse_verifier(item, path, i) for i, item in enumerate(data)]


def parse_verifier(item: Any, path: Path | str, index: int):
    label = f"entry {index}"
    if isinstance(item, dict) and isinstance(item.get("name"), str):
        label += f" ('{item['name']}')"
    if isinstance(item, dict) and isinstance(item.get("validation_config"), str):
        try:  # EnterpriseOps-Gym rows sometimes carry the config as a JSON string
            item = {**item, "validation_config": json.loads(item["validation_config"])}
        except json.JSONDecodeError:
            raise TaskError(path, f"{label}: validation_config is not JSON") from None
    try:
        return _VERIFIER.validate_python(item)
    except ValidationError as e:
        raise TaskError(path, f"{label}: {_first_error(e)}") from None


def load_calls(path: Path) -> tuple[tuple[ReferenceCall, ...], str | None]:
    data = _read_json(path)
    answer = None
    if isinstance(data, dict):
        unknown = set(data) - {"calls", "answer"}
        if unknown:
            raise TaskError(path, f"unknown keys {sorted(unknown)} (expected 'calls' and optional 'answer')")
        answer = data.get("answer")
        if answer is not None and not isinstance(answer, str):
            raise TaskError(path, "'answer' must be a string")
        data = data.get("calls", [])
    if not isinstance(data, list):
        raise TaskError(path, 'must be a JSON list of {tool, arguments} (or {"calls": [...], "answer": ...})')
    calls = []
    for i, item in enumerate(data):
        try:
            calls.append(ReferenceCall.model_validate(item))
        except ValidationError as e:
            tool = f" ('{item['tool']}')" if isinstance(item, dict) and isinstance(item.get("tool"), str) else ""
            raise TaskError(path, f"entry {i}{tool}: {_first_error(e)}") from None
    return tuple(calls), answer
