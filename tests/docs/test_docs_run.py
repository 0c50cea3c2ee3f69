"""Every command and code example in README.md and docs/*.md parses, validates, or runs (see doc_blocks.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.docs.doc_blocks import (
    ROOT,
    SHELLS,
    Block,
    blocks,
    check_command,
    check_python,
    check_toml,
    doc_files,
    inline_commands,
    shell_commands,
)

BLOCKS = [b for f in doc_files() for b in blocks(f) if b.mark != "skip"]
COMMANDS = [(f"{b.where}", c) for b in BLOCKS if b.lang in SHELLS for c in shell_commands(b)] + [
    (w, c) for f in doc_files() for w, c in inline_commands(f)
]


def _ids(items):
    return [i[0] if isinstance(i, tuple) else i.where for i in items]


def test_the_docs_have_examples_to_check():
    assert len(COMMANDS) > 50 and any(b.lang == "toml" for b in BLOCKS) and any(b.mark == "run" for b in BLOCKS)


@pytest.mark.parametrize("where,command", COMMANDS, ids=_ids(COMMANDS))
def test_every_agentmill_command_in_the_docs_parses(where, command):
    _, problem = check_command(command)
    assert problem is None, f"{where}: `{command}`: {problem}"


def test_every_command_the_docs_name_prints_its_help():
    """Cheap to run for every command path the docs use: the command exists and its help renders."""
    paths = {tuple(check_command(c)[0]) for _, c in COMMANDS}
    from agentmill.cli import app

    runner = CliRunner()
    for path in sorted(paths):
        r = runner.invoke(app, [*path, "--help"], prog_name="agentmill")
        assert r.exit_code == 0 and "Usage:" in r.output, f"agentmill {' '.join(path)} --help: {r.output[-500:]}"


PYTHON = [b for b in BLOCKS if b.lang == "python"]


@pytest.mark.parametrize("block", PYTHON, ids=_ids(PYTHON))
def test_python_examples_compile_and_their_imports_resolve(block):
    assert check_python(block) is None, f"{block.where}: {check_python(block)}"


TOML = [b for b in BLOCKS if b.lang == "toml"]


@pytest.mark.parametrize("block", TOML, ids=_ids(TOML))
def test_toml_examples_validate_against_their_schemas(block, tmp_path):
    problem = check_toml(block, tmp_path)
    assert problem is None, f"{block.where}: {problem}"


JSON = [b for b in BLOCKS if b.lang == "json" and "..." not in b.text]


@pytest.mark.parametrize("block", JSON, ids=_ids(JSON))
def test_json_examples_parse(block):
    json.loads(block.text)


RUN = [b for b in BLOCKS if b.mark == "run"]


def _scratch(tmp_path: Path) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name in ("recipes", "src", "examples", ".venv"):
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


@pytest.mark.parametrize("block", RUN, ids=_ids(RUN))
def test_runnable_examples_run(block, tmp_path):
    r = _run(block, _scratch(tmp_path))
    assert r.returncode == 0, f"{block.where} exited {r.returncode}:\n{r.stdout[-1500:]}\n{r.stderr[-3000:]}"


def _run(block: Block, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    if block.lang == "python":
        script = cwd / "example.py"
        script.write_text(block.text)
        r = subprocess.run([sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    else:
        assert block.lang in SHELLS, f"{block.where}: only shell and python blocks can be marked run"
        r = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block.text],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    return r


# ---------------------------------------------------------------- the checks can fail: planted defects


def _doc(tmp_path: Path, text: str) -> list[Block]:
    path = tmp_path / "planted.md"
    path.write_text(text)
    return blocks(path)


def test_planted_bad_commands_are_caught():
    assert (
        check_command("agentmill export RUN --format trl --out x.jsonl --min-turn 3")[1]
        == "'agentmill export' has no option --min-turn"
    )
    assert "no command 'exprt'" in check_command("agentmill exprt RUN")[1]
    assert "no subcommand bogus" in check_command("agentmill ground run|bogus ...")[1]
    assert check_command("agentmill import harbor JOB --out RUN")[1] is None
    assert check_command("agentmill sandbox run --timeout 5 -- ls --not-an-agentmill-flag")[1] is None


def test_planted_bad_blocks_are_caught(tmp_path):
    fence = "```"
    found = _doc(
        tmp_path,
        f"<!-- doc-test: skip output -->\n{fence}bash\nagentmill nope\n{fence}\n\n"
        f"{fence}bash\nagentmill status RUN \\\n  --jsn  # comment --ignored\n{fence}\n\n"
        f"{fence}python\nfrom agentmill import no_such_name\n{fence}\n\n"
        f'{fence}toml\n[[sources]]\nname = "a"\nsample = true\n[mix]\ntop_m = 2\n{fence}\n\n'
        f'{fence}toml\n[grid]\n"teacher.model" = ["a", "b"]\n{fence}\n',
    )
    skipped, shell, py, recipe, grid = found
    assert skipped.mark == "skip"
    assert (
        shell_commands(shell) == ["agentmill status RUN --jsn"]
        and "no option --jsn" in check_command(shell_commands(shell)[0])[1]
    )
    assert check_python(py) == "agentmill has no no_such_name"
    assert "mix.top_m" in check_toml(recipe, tmp_path / "r")
    assert "teacher" in check_toml(grid, tmp_path / "g")


def test_a_planted_failing_runnable_block_fails(tmp_path):
    fence = "```"
    (shell, py) = _doc(
        tmp_path,
        f"<!-- doc-test: run -->\n{fence}bash\nagentmill status nowhere\necho never\n{fence}\n\n"
        f"<!-- doc-test: run -->\n{fence}python\nimport agentmill\nagentmill.no_such_name\n{fence}\n",
    )
    assert shell.mark == py.mark == "run"
    r = _run(shell, _scratch(tmp_path / "a"))
    assert r.returncode != 0 and "never" not in r.stdout
    assert _run(py, _scratch(tmp_path / "b")).returncode != 0


def test_shell_substitutions_are_values_not_options():
    assert check_command('agentmill status $(python -c "print(f(g()))") --json')[1] is None
    assert "no option --jsn" in check_command("agentmill status `ls -d runs/*` --jsn")[1]
