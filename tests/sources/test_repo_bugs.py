"""`repo_bugs`: planted bugs in a project of our own (a local git checkout), found by its own tests.

The end-to-end run here is small (a five-function library, three tasks); the two real PyPI projects'
full runs are recorded in docs/sources.md.
"""

import asyncio
import difflib
import json
import subprocess
from pathlib import Path

import pytest

from agentmill.errors import AgentmillError
from agentmill.rollout.check import check_tasks
from agentmill.sources.mutations import mutations, still_parses
from agentmill.sources.repo_bugs import _symptom, generate
from agentmill.tasks import load_dataset, load_task
from tests.conftest import sandbox

LIB = '''"""A tiny text toolkit."""


def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def chunks(items, size):
    return [items[i:i + size] for i in range(0, len(items), size)]


def initials(name):
    return "".join(part[0].upper() for part in name.split() if part)


def percent(part, whole):
    if whole == 0:
        return 0.0
    return round(100 * part / whole, 1)


def between(x, lo, hi):
    return lo <= x and x <= hi
'''

TESTS = """import pytest

from textkit import between, chunks, clamp, initials, percent


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_clamp_low():
    assert clamp(-1, 0, 10) == 0


def test_clamp_high():
    assert clamp(11, 0, 10) == 10


def test_chunks():
    assert chunks([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]


def test_initials():
    assert initials("ada  lovelace") == "AL"


def test_percent():
    assert percent(1, 3) == 33.3
    assert percent(1, 0) == 0.0


def test_between():
    assert between(3, 1, 5) and between(1, 1, 5) and not between(6, 1, 5)


def test_already_broken():  # fails before any bug is planted: never part of a task
    assert initials("") == "?"


@pytest.mark.skip(reason="not run")
def test_skipped():
    assert False
"""


def make_repo(root: Path) -> Path:
    (root / "textkit").mkdir(parents=True)
    (root / "textkit" / "__init__.py").write_text(LIB)
    (root / "tests").mkdir()
    (root / "tests" / "test_textkit.py").write_text(TESTS)
    (root / "README.md").write_text("textkit\n")
    (root / "untracked_notes.py").write_text("x = 1\n")
    git = ["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "textkit", "tests", "README.md"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    return root


@pytest.fixture(scope="module")
def mined(tmp_path_factory):
    root = tmp_path_factory.mktemp("rb")
    repo = make_repo(root / "textkit")
    out = root / "out"
    report = generate(out, repos=[repo], max_tasks=3, seed=3)
    return out, report


@sandbox
def test_planted_bugs_become_checked_tasks(mined):
    out, report = mined
    assert len(report.kept) == 3, report.to_json()
    [project] = report.extra["projects"]
    assert project["passing_tests"] == 7  # the already-broken and the skipped test are not among them
    assert project["kept"] == 3 and project["tasks_per_minute"] > 0
    ds = load_dataset(out / "tasks")
    assert ds.errors == [] and len(ds.tasks) == 3
    patches = set()
    for task in ds.tasks:
        f2p = json.loads((task.path / "tests" / "f2p.json").read_text())
        p2p = json.loads((task.path / "tests" / "p2p.json").read_text())
        assert f2p and not set(f2p) & set(p2p) and len(f2p) + len(p2p) == 7
        assert not any("already_broken" in t or "skipped" in t for t in f2p + p2p)
        patch = (task.path / "solution" / "fix.patch").read_text()
        patches.add(patch)
        assert patch.startswith("--- a/textkit/__init__.py")
        # the issue names the symptom, never the file, the line or the fix
        text = task.instruction
        assert f2p[0].split("::")[-1] in text
        assert "__init__.py" not in text and "textkit/" not in text and "@@" not in text
        removed = [ln[1:].strip() for ln in patch.splitlines() if ln.startswith("-") and not ln.startswith("---")]
        assert not any(len(r) > 8 and r in text for r in removed)  # the buggy line is not quoted
        buggy = (task.path / "environment" / "project" / "textkit" / "__init__.py").read_text()
        assert buggy != LIB and not (task.path / "environment" / "project" / "untracked_notes.py").exists()
    assert len(patches) == 3  # distinct bugs


@sandbox
def test_a_fix_that_breaks_another_test_gets_no_reward_but_its_graded_share(mined, builder):
    """planted attack: fix the failing tests by breaking a passing one -> reward 0, f2p_fixed 1."""
    out, _ = mined
    task_dir = sorted((out / "tasks").iterdir())[0]
    p2p = json.loads((task_dir / "tests" / "p2p.json").read_text())
    broken = next(t.split("::")[-1] for t in p2p)
    target = {
        "test_clamp_inside": "clamp",
        "test_clamp_low": "clamp",
        "test_clamp_high": "clamp",
        "test_chunks": "chunks",
        "test_initials": "initials",
        "test_percent": "percent",
        "test_between": "between",
    }[broken]
    solve = task_dir / "solution" / "solve.sh"
    honest = solve.read_text()
    solve.write_text(
        honest + f"printf '\\n\\ndef {target}(*a, **k):\\n    return object()\\n' >> /app/textkit/__init__.py\n"
    )
    try:
        [r] = asyncio.run(check_tasks([load_task(task_dir)], builder=builder))
    finally:
        solve.write_text(honest)
    assert r.oracle.reward == 0.0
    assert r.oracle.rewards == {"reward": 0.0, "f2p_fixed": 1.0} or r.oracle.rewards.get("f2p_fixed") == 1.0


@sandbox
def test_editing_the_projects_own_test_copy_does_not_pass(mined, builder):
    """planted attack: the agent rewrites /app/tests so they pass; the verifier runs the pristine suite."""
    out, _ = mined
    task_dir = sorted((out / "tasks").iterdir())[1]
    solve = task_dir / "solution" / "solve.sh"
    honest = solve.read_text()
    solve.write_text(
        "#!/bin/bash\nfor f in /app/tests/test_*.py; do printf 'def test_ok():\\n    pass\\n' > $f; done\n"
    )
    try:
        [r] = asyncio.run(check_tasks([load_task(task_dir)], builder=builder))
    finally:
        solve.write_text(honest)
    assert r.oracle.reward == 0.0 and r.verdict == "unsolvable"


def test_mutations_are_small_human_slips_that_still_parse():
    found = mutations(LIB)
    ops = {m.operator for m in found}
    assert {"flip_comparison", "off_by_one", "drop_branch", "swap_operands", "bool_op", "remove_return"} <= ops
    for m in found:
        new = m.apply(LIB)
        assert still_parses(new) and new != LIB
        diff = [
            ln
            for ln in difflib.unified_diff(LIB.splitlines(), new.splitlines(), lineterm="", n=0)
            if ln[:1] in "+-" and ln[:3] not in ("---", "+++")
        ]
        assert 1 <= len(diff) <= 2, diff  # one line changed, or one small `if` dropped
    flip = next(m for m in found if m.operator == "flip_comparison")
    assert "if x <= lo:" in flip.apply(LIB)


def test_the_symptom_hides_paths_and_the_library_file():
    text = (
        "def test_x():\n>       assert f(1) == 2\nE       assert 3 == 2\nE        +  where 3 = f(1)\n\n"
        'textkit/__init__.py:12: AssertionError\nE   File "/app/textkit/__init__.py", line 4'
    )
    out = _symptom(text, ["textkit/__init__.py", "__init__.py"])
    assert out == "assert 3 == 2\n+  where 3 = f(1)"


def test_a_project_without_tests_or_a_pin_is_one_clear_error(tmp_path):
    with pytest.raises(AgentmillError, match="pinned NAME==VERSION"):
        generate(tmp_path / "o", pypi=["toolz"])
    bare = tmp_path / "bare"
    (bare / "pkg").mkdir(parents=True)
    (bare / "pkg" / "__init__.py").write_text("def f():\n    return 1\n")
    subprocess.run(["git", "-C", str(bare), "init", "-q"], check=True)
    subprocess.run(["git", "-C", str(bare), "add", "."], check=True)
    with pytest.raises(AgentmillError, match="no test suite"):
        generate(tmp_path / "o2", repos=[bare])


@sandbox
def test_a_recipe_source_of_kind_repo_bugs(tmp_path, monkeypatch, declared_source_kinds):
    from agentmill.recipe.schema import load_recipe
    from agentmill.recipe.stages.sources import load_sources
    from tests.conftest import scratch_cache

    monkeypatch.setenv("AGENTMILL_CACHE", str(scratch_cache(tmp_path)))
    make_repo(tmp_path / "textkit")
    recipe = tmp_path / "r.toml"
    recipe.write_text(
        '[[sources]]\nname = "bugs"\nkind = "repo_bugs"\npath = "textkit"\nparams = { max = 1, seed = 3 }\n'
    )
    tasks, report = load_sources(load_recipe(recipe)[0])
    assert len(tasks) == 1 and tasks[0].name.startswith("bugs/textkit-")
    recipe.write_text('[[sources]]\nname = "bugs"\nkind = "repo_bugs"\nparams = { pypi = "toolz" }\n')
    with pytest.raises(AgentmillError, match="pinned NAME==VERSION"):
        load_sources(load_recipe(recipe)[0])


@sandbox
def test_a_teacher_rewrites_the_issue_unless_it_gives_the_bug_away(tmp_path, builder):
    from tests.helpers.chat_server import ChatServer, Reply

    def teacher(request):
        shown = request["messages"][1]["content"]
        if "clamp" in shown:  # a leaky issue: names the file -> the template stays
            return Reply(content="The bug is in textkit/__init__.py, the comparison is wrong.")
        return Reply(
            content="Since upgrading, some results are wrong; see the failing test. "
            "Please fix the library so the test suite passes again (the tests must not be changed)."
        )

    repo = make_repo(tmp_path / "textkit")
    with ChatServer(teacher) as server:
        report = generate(
            tmp_path / "out",
            repos=[repo],
            max_tasks=3,
            seed=3,
            builder=builder,
            teacher={"name": "teacher", "base_url": server.base_url},
            teacher_bugs=0,  # the issues only (teacher-written bugs: test_teacher_bugs.py)
        )
    assert len(server.requests) == 3
    for r in server.requests:  # the teacher saw the symptom, never the patch
        assert "@@" not in r["messages"][1]["content"] and "fails" in r["messages"][1]["content"]
    ds = load_dataset(tmp_path / "out" / "tasks")
    by_teacher = [t for t in ds.tasks if t.instruction.startswith("Since upgrading")]
    kept = report.extra["template_kept"]
    assert len(by_teacher) + len(kept) == 3 and by_teacher and kept
    assert all("names the changed file textkit/__init__.py" == why for why in kept.values())
    assert all(not t.instruction.startswith("Since upgrading") for t in ds.tasks if t.name in kept)


def test_a_teachers_issue_that_names_the_file_or_quotes_the_change_is_refused():
    from agentmill.sources.issue_writer import leaks

    patch = "--- a/textkit/__init__.py\n+++ b/textkit/__init__.py\n@@ -5,7 +5,7 @@\n-    if x <= lo:\n+    if x < lo:\n"
    assert leaks("Look at textkit/__init__.py please", patch) == "names the changed file textkit/__init__.py"
    assert leaks("in __init__.py something is off", patch).startswith("names the changed file")
    assert leaks("the code says `if x <= lo:` which is wrong", patch).startswith("quotes a changed line")
    assert leaks("see line 12", patch) == "shows a diff or a line number"
    assert leaks("clamp(-1, 0, 10) returns -1 instead of 0", patch) is None
