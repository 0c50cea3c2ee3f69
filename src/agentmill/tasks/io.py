"""Read and write task directories: Harbor's format, and legacy Terminal-Bench read into the same record."""

from __future__ import annotations

import tomllib
from collections.abc import Collection
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import ValidationError

from agentmill.errors import TaskError
from agentmill.tasks.hashing import hash_tree
from agentmill.tasks.kinds import task_kinds
from agentmill.tasks.model import Task, TaskConfig


def load_task(path: Path | str) -> Task:
    """Load one task directory, Harbor or legacy Terminal-Bench. Raises TaskError naming the file."""
    root = Path(path).resolve()
    if not root.is_dir():
        raise TaskError(root, "not a directory")
    for kind in task_kinds():
        if kind.detect(root):
            return kind.load(root)
    raise TaskError(root, "not a task: no task.toml/instruction.md (Harbor) or task.yaml (Terminal-Bench)")


def load_harbor(root: Path) -> Task:
    """A Harbor (terminal) task directory."""
    instruction = read_text(root / "instruction.md", what="instruction")
    toml_path = root / "task.toml"
    if not toml_path.exists():
        raise TaskError(toml_path, "missing")
    try:
        raw = tomllib.loads(read_text(toml_path, what="task config"))
    except tomllib.TOMLDecodeError as e:
        raise TaskError(toml_path, f"invalid TOML: {e}") from None
    config, warnings = parse_config(raw, toml_path)

    tests_dir = root / "tests"
    unverified = config.verifier.kind == "none"
    if not unverified and not (tests_dir / "test.sh").is_file():
        raise TaskError(
            tests_dir / "test.sh",
            'missing: the verifier entry point is required (or [verifier] kind = "none" for a task without one)',
        )
    env_dir = root / "environment"
    dockerfile = env_dir / "Dockerfile"
    solution_dir = root / "solution"
    has_solution = (solution_dir / "solve.sh").is_file()
    if not has_solution and not unverified:
        warnings.append(f"{solution_dir / 'solve.sh'}: missing: no oracle solution")
    return Task(
        name=root.name,
        path=root,
        format="harbor",
        instruction=instruction,
        config=config,
        content_hash=hash_tree(root),
        environment_dir=env_dir if env_dir.is_dir() else None,
        dockerfile=dockerfile if dockerfile.is_file() else None,
        tests_sources=() if unverified else (tests_dir,),
        test_script="" if unverified else "test.sh",
        solution_sources=(solution_dir,) if has_solution else (),
        solution_script="solve.sh" if has_solution else None,
        warnings=tuple(warnings),
    )


def read_text(path: Path, *, what: str) -> str:
    if not path.is_file():
        raise TaskError(path, f"missing {what}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise TaskError(path, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    if not text.strip():
        raise TaskError(path, f"empty {what}")
    return text


def parse_config(raw: dict[str, Any], where: Path) -> tuple[TaskConfig, list[str]]:
    """Validate a task.toml dict. Unknown keys are dropped with a warning; bad values raise TaskError."""
    warnings: list[str] = []
    cleaned = _drop_unknown(raw, TaskConfig, where, warnings, prefix="")
    try:
        return TaskConfig.model_validate(cleaned), warnings
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        value = err.get("input")
        raise TaskError(where, f"field '{field}': {err['msg']} (got {value!r})") from None


def _drop_unknown(raw: Any, model: Any, where: Path, warnings: list[str], prefix: str) -> Any:
    if not isinstance(raw, dict) or not hasattr(model, "model_fields"):
        return raw
    out = {}
    for key, value in raw.items():
        field = model.model_fields.get(key)
        if field is None:
            warnings.append(f"{where}: unknown key '{prefix}{key}' ignored (not in Harbor's schema)")
            continue
        sub = field.annotation
        out[key] = _drop_unknown(value, sub, where, warnings, prefix=f"{prefix}{key}.") if key != "metadata" else value
    return out


def write_task(
    dest: Path | str,
    *,
    instruction: str,
    config: TaskConfig | None = None,
    test_sh: str,
    solve_sh: str | None = None,
    dockerfile: str = "FROM debian:bookworm-slim\nWORKDIR /app\n",
    environment_files: dict[str, str | bytes] | None = None,
    test_files: dict[str, str | bytes] | None = None,
) -> Path:
    """Write a Harbor task directory. Returns its path. Used by generators and tests alike."""
    root = Path(dest)
    root.mkdir(parents=True, exist_ok=True)
    (root / "instruction.md").write_text(instruction, encoding="utf-8")
    cfg = (config or TaskConfig()).model_dump(mode="json")
    (root / "task.toml").write_text(tomli_w.dumps(cfg), encoding="utf-8")
    _write_files(root / "environment", {"Dockerfile": dockerfile, **(environment_files or {})})
    _write_files(root / "tests", {"test.sh": test_sh, **(test_files or {})}, executable={"test.sh"})
    if solve_sh is not None:
        _write_files(root / "solution", {"solve.sh": solve_sh}, executable={"solve.sh"})
    return root


def _write_files(base: Path, files: dict[str, str | bytes], executable: Collection[str] = frozenset()) -> None:
    for rel, content in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        if rel in executable:
            path.chmod(0o755)
