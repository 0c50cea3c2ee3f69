"""Examples in README.md and docs/*.md, extracted and checked (the convention is in docs/api.md, "Docs that run").

- Fenced blocks are checked by language: `bash`/`sh`/`shell` (every `agentmill ...` command parses
  with the CLI), `python` (compiles; its `agentmill` imports resolve), `toml` (recipes, ablation
  matrices, ground configs and [filters] tables validate against their schemas), `json` (parses).
  Blocks without a language are text (trees, output) and are not checked.
- `<!-- doc-test: run -->` on the line before a fence: the block also runs (bash line by line, or
  the python block as a script) in a scratch folder that links the repository's recipes/, src/,
  examples/ and .venv/.
- `<!-- doc-test: skip REASON -->`: the block is not checked (say why).
- Inline code spans that start with `agentmill ` are commands too and must parse.
"""

from __future__ import annotations

import ast
import importlib
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

import typer

ROOT = Path(__file__).resolve().parents[2]
MARK = re.compile(r"<!--\s*doc-test:\s*(run|skip)\b[^>]*-->")
FENCE = re.compile(r"^(\s*)```\s*([\w+-]*)\s*$")
INLINE = re.compile(r"(?<!`)`(agentmill [^`\n]+)`(?!`)")
SHELLS = {"bash", "sh", "shell", "console"}


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    mark: str | None  # "run", "skip" or None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path}:{self.line}"


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and every docs/*.md that exists now (others' docs appear as they are written)."""
    return [p for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))] if p.is_file()]


def blocks(path: Path) -> list[Block]:
    out, lines = [], path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(2).lower()
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith("```"):
            j += 1
        prev = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        mark = MARK.search(prev)
        out.append(
            Block(path, start + 1, lang, "\n".join(lines[start + 1 : j]) + "\n", mark.group(1) if mark else None)
        )
        i = j + 1
    return out


def inline_commands(path: Path) -> list[tuple[str, str]]:
    """(where, command) for inline code spans outside fences that start with `agentmill `."""
    out, in_fence = [], False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip().startswith("```"):
            in_fence = not in_fence
            continue
        if not in_fence:
            out += [(f"{path.name}:{n}", m.group(1)) for m in INLINE.finditer(line)]
    return out


def shell_commands(block: Block) -> list[str]:
    """The agentmill commands of a shell block: continuations joined, comments dropped, `&&`/`;`/`|` split."""
    joined = re.sub(r"\\\n\s*", " ", block.text)
    cmds = []
    for line in joined.splitlines():
        tokens = _tokens(line)
        segment: list[str] = []
        for tok in [*tokens, "&&"]:
            if tok in ("&&", "||", ";", "|"):
                if segment and segment[0].split("/")[-1] == "agentmill":
                    cmds.append(" ".join(["agentmill", *segment[1:]]))
                segment = []
            else:
                segment.append(tok)
    return cmds


def _tokens(line: str) -> list[str]:
    line = _substituted(re.sub(r"`[^`]*`", "VALUE", line))
    try:
        lex = shlex.shlex(line, posix=True, punctuation_chars=False)
        lex.whitespace_split, lex.commenters = True, "#"
        return list(lex)
    except ValueError:  # an unbalanced quote in a synopsis: plain words, comment cut
        return line.split("#", 1)[0].split()


def _substituted(line: str) -> str:
    """`$(...)` (nested parentheses included) -> VALUE: a value the shell computes, not part of the command."""
    while (start := line.find("$(")) >= 0:
        depth, end = 0, len(line)
        for i in range(start + 1, len(line)):
            depth += {"(": 1, ")": -1}.get(line[i], 0)
            if depth == 0:
                end = i + 1
                break
        line = line[:start] + "VALUE" + line[end:]
    return line


def cli_group():
    """The CLI as a command tree (typer vendors its own click, so groups are found by their `commands`)."""
    from agentmill.cli import app

    return typer.main.get_command(app)


def check_command(command: str, group=None) -> tuple[list[str], str | None]:
    """(the command path, None) if `command` names a real command and only its options; else (path, problem)."""
    current = group or cli_group()
    tokens = _tokens(command)[1:]
    path: list[str] = []
    while tokens and hasattr(current, "commands"):
        word = tokens[0].strip("[]")
        if "|" in word and not word.startswith("-"):  # `ground run|report|arms`: every alternative must exist
            missing = [w for w in word.split("|") if w not in current.commands]
            return path, (
                f"no subcommand {', '.join(missing)} of 'agentmill {' '.join(path)}'".replace("  ", " ")
                if missing
                else None
            )
        if word in current.commands:
            current = current.commands[word]
            path.append(word)
            tokens.pop(0)
        elif word.startswith("-") or word.isupper() or not word.isidentifier():
            break  # an option, a placeholder or a value: the group itself (e.g. `agentmill images [--json]`)
        else:
            return path, f"no command '{word}' in 'agentmill {' '.join(path)}'".replace("  ", " ")
    known = {o for p in current.params for o in (*getattr(p, "opts", []), *getattr(p, "secondary_opts", []))} | {
        "--help"
    }
    for tok in tokens:
        if tok == "--":
            break  # what follows belongs to the command run (`sandbox run -- CMD`)
        for part in tok.strip("[](),").split("|"):
            part = part.strip("[](),")
            m = re.fullmatch(r"(--?[A-Za-z][\w-]*)(=.*)?", part)
            if m and m.group(1) not in known:
                return path, f"'agentmill {' '.join(path)}' has no option {m.group(1)}"
    return path, None


def check_python(block: Block) -> str | None:
    """Compiles, and every `agentmill` import names a module and attribute that exist."""
    try:
        tree = ast.parse(block.text)
    except SyntaxError as e:
        return f"python does not compile: {e.msg} (block line {e.lineno})"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "agentmill":
            try:
                module = importlib.import_module(node.module)
            except ImportError as e:
                return f"cannot import {node.module}: {e}"
            for alias in node.names:
                if not hasattr(module, alias.name):
                    try:
                        importlib.import_module(f"{node.module}.{alias.name}")
                    except ImportError:
                        return f"{node.module} has no {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "agentmill":
                    try:
                        importlib.import_module(alias.name)
                    except ImportError as e:
                        return f"cannot import {alias.name}: {e}"
    return None


def check_toml(block: Block, scratch: Path) -> str | None:
    """Parses; validates recipes, ablation matrices (and their [grid]/[[variants]] fragments), ground configs, [filters]."""
    try:
        data = tomllib.loads(block.text)
    except tomllib.TOMLDecodeError as e:
        return f"invalid TOML: {e}"
    from agentmill.errors import AgentmillError

    try:
        if "sources" in data:
            _validate_recipe(data, "recipe")
        elif {"base", "eval"} & set(data) or set(data) <= {"grid", "variants", "timeout"} and data:
            _validate_matrix(data, scratch)
        elif "env" in data or "diagnosis" in data:  # a synth config (or its [diagnosis] table)
            from agentmill.synth.config import DiagnosisConfig, SynthConfig

            DiagnosisConfig.model_validate(data["diagnosis"]) if set(data) == {
                "diagnosis"
            } else SynthConfig.model_validate(data)
        elif "roles" in data or "seeds" in data:
            from agentmill.grounded.roles import Roles
            from agentmill.grounded.run import GroundConfig

            roles = data.get("roles") or {}
            if roles:  # an example shows one role ("also: grapher, ..."): the others take its shape
                shown = next(iter(roles.values()))
                data = {
                    **data,
                    "roles": {
                        r: roles.get(r, shown) for r, f in Roles.model_fields.items() if f.is_required() or r in roles
                    },
                }
            GroundConfig.model_validate(data)
        elif "filters" in data:
            from agentmill.traces.filters import FilterSpec

            FilterSpec.model_validate(data["filters"])
    except (AgentmillError, ValueError) as e:
        return (
            str(e).strip().splitlines()[0]
            if "\n" not in str(e).strip()
            else " | ".join(str(e).strip().splitlines()[:4])
        )
    return None


# A stand-in for "your recipe" in matrix examples: the bundled smoke recipe with a teacher endpoint.
_TEACHER = '\n[model]\nname = "teacher"\nbase_url = "http://127.0.0.1:8000/v1"\n'


def _validate_recipe(data: dict, where: str) -> None:
    from agentmill.recipe.pipeline import build_stages
    from agentmill.recipe.schema import parse_recipe

    build_stages(parse_recipe(data, where=where, base_dir=ROOT / "recipes"), where=where)


def _validate_matrix(data: dict, scratch: Path) -> None:
    from agentmill.recipe.ablate import load_matrix

    smoke = (ROOT / "recipes" / "smoke.toml").read_text()
    base = re.sub(r"\n\[model\]\n(?:[^\[\n].*\n|\n)*", _TEACHER, smoke, count=1)
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "recipe.toml").write_text(base)
    matrix = {"base": "recipe.toml", "eval": "true {dataset} {results}", **data}
    matrix["base"] = "recipe.toml"  # the example's base file stands for the user's recipe: ours is the smoke one
    path = scratch / "matrix.toml"
    path.write_text(_dump_toml(matrix))
    for v in load_matrix(path).variants:
        _validate_recipe(v.recipe, f"variant {v.name!r}")


def _dump_toml(data: dict) -> str:
    """Just enough TOML writing for a matrix: top-level scalars, [grid], [[variants]]."""
    import json

    def value(v):
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + " }"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(v)

    lines = [f"{k} = {value(v)}" for k, v in data.items() if k not in ("grid", "variants")]
    if "grid" in data:
        lines += ["[grid]", *(f"{json.dumps(k)} = {value(v)}" for k, v in data["grid"].items())]
    for v in data.get("variants", []):
        lines += ["[[variants]]", *(f"{json.dumps(k)} = {value(x)}" for k, x in v.items())]
    return "\n".join(lines) + "\n"
