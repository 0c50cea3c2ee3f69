"""EnterpriseOps-Gym config rows <-> tool-task folders.

A row: `system_prompt`, `user_prompt`, `verifiers`, `gym_servers_config` (each `{mcp_server_name,
mcp_server_url, mcp_endpoint, seed_database_file, context?}`), `selected_tools`, `restricted_tools`,
and whatever else the row carries. Lists may arrive as JSON strings (the Hugging Face dataset
stores them so); the folder keeps which ones did, and every other key, under task.toml
`[metadata.eog]`, so export gives the row back exactly. Gyms are named by `mcp_server_name`; an
imported task loads once those gyms exist here (bundled, or in its environment/gyms/<name>/).
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from agentmill.errors import TaskError
from agentmill.runtime.atomic import write_text_atomic
from agentmill.tasks.tool_task import load_calls, parse_verifier

KNOWN = ("system_prompt", "user_prompt", "verifiers", "gym_servers_config", "selected_tools", "restricted_tools")
_LISTS = ("verifiers", "gym_servers_config", "selected_tools", "restricted_tools")
DEFAULT_SERVER = {"mcp_server_url": "http://localhost:8000", "mcp_endpoint": "/mcp", "seed_database_file": ""}


@dataclass
class ImportReport:
    written: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # one line per skipped row: line number and problem


def _decode(row: dict, key: str, where: str) -> tuple[Any, bool]:
    value = row.get(key)
    if isinstance(value, str):
        try:
            return json.loads(value), True
        except json.JSONDecodeError as e:
            raise TaskError(where, f"'{key}' is a string but not JSON: {e.msg}") from None
    return value, False


def _task_name(row: dict, index: int) -> str:
    for key in ("task_id", "id", "name"):
        if isinstance(row.get(key), (str, int)):
            name = re.sub(r"[^A-Za-z0-9._-]+", "-", str(row[key])).strip("-")
            if name:
                return name
    digest = hashlib.sha256(json.dumps(row, sort_keys=True).encode()).hexdigest()[:8]
    return f"eog-{index:05d}-{digest}"


def row_to_task(row: dict, dest: Path, *, where: str) -> Path:
    """Write one row as a tool-task folder under `dest`. Raises TaskError naming the row and field."""
    if not isinstance(row, dict):
        raise TaskError(where, "not a JSON object")
    for key in ("system_prompt", "user_prompt"):
        if not isinstance(row.get(key), str) or not row[key].strip():
            raise TaskError(where, f"'{key}' must be a non-empty string")
    decoded, encoded = {}, []
    for key in _LISTS:
        value, was_string = _decode(row, key, where)
        if was_string:
            encoded.append(key)
        decoded[key] = value
    verifiers = decoded["verifiers"] or []
    if not isinstance(verifiers, list):
        raise TaskError(where, "'verifiers' must be a list")
    for i, v in enumerate(verifiers):
        parse_verifier(v, f"{where}: verifiers", i)
    servers = decoded["gym_servers_config"] or []
    if not isinstance(servers, list) or not all(
        isinstance(s, dict) and isinstance(s.get("mcp_server_name"), str) for s in servers
    ):
        raise TaskError(where, "'gym_servers_config' must be a list of objects with 'mcp_server_name'")
    gyms = [s["mcp_server_name"] for s in servers]
    root = dest
    root.mkdir(parents=True, exist_ok=True)
    (root / "instruction.md").write_text(row["user_prompt"], encoding="utf-8")
    (root / "system.md").write_text(row["system_prompt"], encoding="utf-8")
    env: dict[str, Any] = {"kind": "tools", "gyms": gyms}
    if decoded["selected_tools"]:
        env["tools"] = list(decoded["selected_tools"])
    if decoded["restricted_tools"]:
        env["restricted_tools"] = list(decoded["restricted_tools"])
    eog = {
        "gym_servers_config": servers,
        "encoded": encoded,
        "present": [k for k in KNOWN if k in row],
        "nulls": [k for k in KNOWN if k in row and row[k] is None],
        "extra_json": json.dumps({k: v for k, v in row.items() if k not in KNOWN}, ensure_ascii=False),
    }
    toml = {"version": "1.0", "metadata": {"source": "enterpriseops-gym", "eog": eog}, "environment": env}
    (root / "task.toml").write_text(tomli_w.dumps(toml), encoding="utf-8")
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "verifiers.json").write_text(
        json.dumps(verifiers, indent=1, ensure_ascii=False), encoding="utf-8"
    )
    return root


def import_eog(jsonl: Path, out: Path) -> ImportReport:
    """Every row of an EnterpriseOps-Gym JSONL file as a task folder under `out`; bad rows reported, skipped."""
    report = ImportReport()
    out.mkdir(parents=True, exist_ok=True)
    names: set[str] = set()
    with open(jsonl, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{jsonl}:{lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                report.errors.append(f"{where}: not JSON: {e.msg}")
                continue
            name = _task_name(row, lineno) if isinstance(row, dict) else f"row-{lineno}"
            if name in names:
                name = f"{name}-{lineno}"
            try:
                report.written.append(row_to_task(row, out / name, where=where))
                names.add(name)
            except TaskError as e:
                report.errors.append(str(e))
    return report


def task_to_row(root: Path) -> dict:
    """A tool-task folder as an EnterpriseOps-Gym row (file level: the gyms need not exist here)."""
    toml_path = root / "task.toml"
    try:
        cfg = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise TaskError(toml_path, f"unreadable: {e}") from None
    env = cfg.get("environment", {})
    if env.get("kind") != "tools":
        raise TaskError(toml_path, 'not a tools task ([environment] kind = "tools")')
    eog = cfg.get("metadata", {}).get("eog", {})
    verifiers_path = root / "tests" / "verifiers.json"
    try:
        verifiers = json.loads(verifiers_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise TaskError(verifiers_path, f"unreadable: {e}") from None
    for i, v in enumerate(verifiers):
        parse_verifier(v, verifiers_path, i)
    system = root / "system.md"
    selected = env.get("tools") or []
    if not selected and (root / "solution" / "calls.json").is_file():  # EOG's oracle config: the tools needed
        calls, _ = load_calls(root / "solution" / "calls.json")
        selected = sorted({c.tool for c in calls})
    row: dict[str, Any] = {
        "system_prompt": system.read_text(encoding="utf-8") if system.is_file() else "",
        "user_prompt": (root / "instruction.md").read_text(encoding="utf-8"),
        "verifiers": verifiers,
        "gym_servers_config": eog.get("gym_servers_config")
        or [{"mcp_server_name": g, **DEFAULT_SERVER} for g in env.get("gyms", []) or ["gym"]],
        "selected_tools": selected,
        "restricted_tools": env.get("restricted_tools") or [],
    }
    present = eog.get("present")
    if present is not None:  # an imported row: only the keys it had, in their original encoding
        row = {k: v for k, v in row.items() if k in present}
    for key in eog.get("nulls", []):
        row[key] = None
    for key in eog.get("encoded", []):
        if key in row:
            row[key] = json.dumps(row[key], ensure_ascii=False)
    row.update(json.loads(eog.get("extra_json") or "{}"))
    if present is None:
        row["task_id"] = root.name
    return row


def export_eog(dataset: Path, out: Path) -> tuple[int, list[str]]:
    """Every tools task folder under `dataset` (or `dataset` itself) as one JSONL row each."""
    roots = (
        [dataset]
        if (dataset / "task.toml").is_file()
        else sorted(p for p in dataset.iterdir() if (p / "task.toml").is_file())
    )
    rows, errors = [], []
    for root in roots:
        try:
            rows.append(task_to_row(root))
        except TaskError as e:
            errors.append(str(e))
    write_text_atomic(out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return len(rows), errors
