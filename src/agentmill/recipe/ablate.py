"""Ablation matrices: variants of a base recipe, each built into a dataset and scored by an eval command.

matrix.toml:
    base = "recipe.toml"                      # relative to the matrix file
    eval = "python eval.py {dataset} --out {results}"   # also {variant}; run from the matrix's folder
    timeout = 21600                           # optional: seconds per eval command
    [[variants]]                              # either explicit variants ...
    name = "top4"
    set = { "mix.top_n" = 4 }
    [grid]                                    # ... or the product of axes
    "mix.top_n" = [1, 2, 4]
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import shlex
import string
import subprocess
import sys
import time
import tomllib
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tomli_w

from agentmill.errors import AgentmillError
from agentmill.recipe.table import check_scores
from agentmill.runtime.atomic import write_json_atomic

PLACEHOLDERS = {"dataset", "variant", "results"}
DEFAULT_TIMEOUT = 6 * 3600.0
Build = Callable[[str, dict, Path], Path]
Validate = Callable[[str, dict], object]  # (variant name, recipe) -> anything; raises AgentmillError if invalid


class MatrixError(AgentmillError):
    def __init__(self, path: Path, key: str, problem: str):
        super().__init__(f"{path}: {key}: {problem}")


@dataclass
class Variant:
    name: str
    recipe: dict
    overrides: dict  # dotted key -> value, as written in the matrix

    @property
    def folder(self) -> str:
        return safe_name(self.name)


@dataclass
class Matrix:
    path: Path
    eval: str
    timeout: float
    variants: list[Variant]


def safe_name(name: str) -> str:
    """A folder name for a variant: grid names carry '=' and ',', which are fine; '/' and spaces are not."""
    return re.sub(r"[^A-Za-z0-9._=,+-]", "_", name).strip(".") or "_"


def set_dotted(recipe: dict, key: str, value, *, where: str = "") -> None:
    """recipe["a"]["b"]["c"] = value for key "a.b.c"; a numeric part indexes an array of tables.

    Missing tables are created (a variant may switch on an optional section); the recipe loader of
    the build step is what rejects misspelt keys.
    """
    parts = key.split(".")
    if not all(parts):
        raise ValueError(f"{where}{key!r}: empty part in dotted key")
    node = recipe
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        here = ".".join(parts[: i + 1])
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ValueError(f"{where}{key!r}: {here!r} is not an index of the {len(node)}-element array")
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
        else:
            raise ValueError(f"{where}{key!r}: {'.'.join(parts[:i])!r} is a {type(node).__name__}, not a table")


def _value_name(value) -> str:
    """How a grid value reads in a variant name: as TOML would write it, minus string quotes."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def load_matrix(path: Path) -> Matrix:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise AgentmillError(f"{path}: cannot read matrix: {e}") from e
    unknown = set(data) - {"base", "eval", "timeout", "variants", "grid"}
    if unknown:
        raise MatrixError(path, sorted(unknown)[0], "unknown key (expected base, eval, timeout, variants or grid)")
    base_key = data.get("base")
    if not isinstance(base_key, str) or not base_key:
        raise MatrixError(path, "base", "required: the base recipe's path, relative to the matrix file")
    base_path = path.parent / base_key
    try:
        base = tomllib.loads(base_path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise MatrixError(path, "base", f"cannot read {base_path}: {e}") from e
    template = data.get("eval")
    if not isinstance(template, str) or not template.strip():
        raise MatrixError(path, "eval", 'required: the eval command, e.g. "python eval.py {dataset} --out {results}"')
    _check_template(path, template)
    timeout = data.get("timeout", DEFAULT_TIMEOUT)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise MatrixError(path, "timeout", "expected a positive number of seconds")
    if ("variants" in data) == ("grid" in data):
        raise MatrixError(path, "variants", "give either [[variants]] or [grid], exactly one of them")
    overrides = _explicit(path, data["variants"]) if "variants" in data else _grid(path, data["grid"])
    variants: list[Variant] = []
    folders: dict[str, str] = {}
    for name, sets in overrides:
        recipe = copy.deepcopy(base)
        for key, value in sets.items():
            try:
                set_dotted(recipe, key, value)
            except ValueError as e:
                raise MatrixError(path, f"variant {name!r}", str(e)) from e
        v = Variant(name, recipe, sets)
        if v.folder in folders:
            raise MatrixError(path, f"variant {name!r}", f"same name or folder as variant {folders[v.folder]!r}")
        folders[v.folder] = name
        variants.append(v)
    return Matrix(path, template, float(timeout), variants)


def expand_matrix(path: Path) -> list[Variant]:
    return load_matrix(path).variants


def _check_template(path: Path, template: str) -> None:
    try:
        argv = shlex.split(template)
        names = {f for arg in argv for _, f, _, _ in string.Formatter().parse(arg) if f is not None}
    except ValueError as e:
        raise MatrixError(path, "eval", str(e)) from e
    if names - PLACEHOLDERS:
        raise MatrixError(
            path,
            "eval",
            f"unknown placeholder {{{sorted(names - PLACEHOLDERS)[0]}}} (use {{dataset}}, {{variant}}, {{results}})",
        )
    if "results" not in names:
        raise MatrixError(path, "eval", "must contain {results}: the JSON file the command writes its scores to")


def _explicit(path: Path, items) -> list[tuple[str, dict]]:
    if not isinstance(items, list) or not items:
        raise MatrixError(path, "variants", "expected a non-empty array of tables [[variants]]")
    out = []
    for i, item in enumerate(items):
        key = f"variants[{i}]"
        if not isinstance(item, dict):
            raise MatrixError(path, key, "expected a table with name and set")
        if set(item) - {"name", "set"}:
            raise MatrixError(
                path, f"{key}.{sorted(set(item) - {'name', 'set'})[0]}", "unknown key (expected name, set)"
            )
        name, sets = item.get("name"), item.get("set", {})
        if not isinstance(name, str) or not name.strip():
            raise MatrixError(path, f"{key}.name", "required: a non-empty string")
        if not isinstance(sets, dict):
            raise MatrixError(path, f"{key}.set", 'expected an inline table {"dotted.key" = value, ...}')
        out.append((name, sets))
    return out


def _grid(path: Path, grid) -> list[tuple[str, dict]]:
    if not isinstance(grid, dict) or not grid:
        raise MatrixError(path, "grid", 'expected a table of axes "dotted.key" = [values]')
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise MatrixError(path, f"grid.{key!r}", "expected a non-empty array of values")
    leaves = [k.rsplit(".", 1)[-1] for k in grid]
    # Short names ("top_n=4") unless two axes end in the same word; then the full dotted key.
    labels = leaves if len(set(leaves)) == len(leaves) else list(grid)
    out = []
    for combo in itertools.product(*grid.values()):
        name = ",".join(f"{label}={_value_name(v)}" for label, v in zip(labels, combo))
        out.append((name, dict(zip(grid, combo))))
    return out


def run_ablation(
    matrix_path: Path,
    out_dir: Path,
    build: Build,
    *,
    log: Callable[[str], None] | None = None,
    validate: Validate | None = None,
) -> dict[str, dict[str, list[float]]]:
    """Build and evaluate every variant; results.json gets the ones that succeeded, failures.json the rest.

    Every variant's recipe is validated first (`validate(name, recipe)` raises on a bad setting): one
    bad variant stops the matrix before anything is built or written. After that, a variant whose
    build or eval fails is reported and left out, so one failure does not cost the others (each may
    take hours).
    """
    log = log or (lambda msg: print(msg, file=sys.stderr))
    matrix = load_matrix(Path(matrix_path))
    if validate is not None:
        check_variants(matrix, validate)
    out_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, list[float]]] = {}
    failures: dict[str, str] = {}
    for v in matrix.variants:
        vdir = out_dir / v.folder
        vdir.mkdir(parents=True, exist_ok=True)
        (vdir / "recipe.toml").write_text(tomli_w.dumps(v.recipe))  # the recipe as this variant ran it
        try:
            dataset = Path(build(v.name, copy.deepcopy(v.recipe), vdir))
        except Exception as e:  # noqa: BLE001 - any build failure skips this variant only
            (vdir / "build.log").write_text(traceback.format_exc())
            failures[v.name] = f"build failed: {type(e).__name__}: {e}"
        else:
            try:
                results[v.name] = run_eval(matrix, v, dataset, vdir)
            except AgentmillError as e:
                failures[v.name] = str(e)
        if v.name in failures:
            log(f"ablate: variant {v.name!r} left out: {failures[v.name]}")
        else:
            log(f"ablate: variant {v.name!r} done: {', '.join(results[v.name])}")
        _write_json(out_dir / "results.json", results)  # after each variant: progress is visible and kept
    if failures:
        _write_json(out_dir / "failures.json", failures)
    else:
        (out_dir / "failures.json").unlink(missing_ok=True)
    return results


def check_variants(matrix: Matrix, validate: Validate) -> None:
    """Validate every variant's recipe before spending anything; one error lists every bad variant."""
    problems = []
    for v in matrix.variants:
        try:
            validate(v.name, copy.deepcopy(v.recipe))
        except AgentmillError as e:
            problems.append(str(e))
    if problems:
        raise AgentmillError(
            f"{matrix.path}: {len(problems)} of {len(matrix.variants)} variant(s) are invalid; nothing was "
            "built:\n  " + "\n  ".join(problems)
        )


def run_eval(matrix: Matrix, v: Variant, dataset: Path, vdir: Path) -> dict[str, list[float]]:
    results_path = (vdir / "eval_results.json").resolve()
    results_path.unlink(missing_ok=True)  # a stale file must not pass for this run's scores
    values = {"dataset": str(Path(dataset).resolve()), "variant": v.name, "results": str(results_path)}
    # Split first, then fill: a path with spaces stays one argument.
    argv = [arg.format(**values) for arg in shlex.split(matrix.eval)]
    log_path = vdir / "eval.log"
    start = time.monotonic()
    with open(log_path, "w") as fh:
        fh.write(f"$ {shlex.join(argv)}\n")
        fh.flush()
        try:
            proc = subprocess.run(
                argv,
                cwd=matrix.path.parent,
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=matrix.timeout,
            )
        except subprocess.TimeoutExpired:
            raise AgentmillError(f"eval timed out after {matrix.timeout:g}s (see {log_path})") from None
        except OSError as e:
            raise AgentmillError(f"eval could not start: {e}") from None
        fh.write(f"\n[exit {proc.returncode} after {time.monotonic() - start:.1f}s]\n")
    if proc.returncode != 0:
        raise AgentmillError(f"eval exited with status {proc.returncode} (see {log_path})")
    try:
        data = json.loads(results_path.read_text())
    except (OSError, ValueError) as e:
        raise AgentmillError(f"eval wrote no readable {results_path.name}: {e}") from None
    return check_scores(data, str(results_path))


def _write_json(path: Path, data) -> None:
    write_json_atomic(path, data, trailing_newline=True)
