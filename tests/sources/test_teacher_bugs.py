"""`repo_bugs` with a teacher: a scripted teacher (a real local HTTP chat server) rewrites functions
with bugs, which go through the same keep rule as the AST mutants; it also writes the issues, which
are refused when they give the bug away. What crossed the wire is checked, and every rejection's reason."""

import json
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentmill.errors import AgentmillError
from agentmill.sources.issue_writer import SYSTEM as ISSUE_SYSTEM
from agentmill.sources.repo_bugs import generate
from agentmill.sources.teacher_bugs import TeacherBugError, function_sites, parse_bug
from agentmill.tasks import load_dataset
from tests.conftest import sandbox
from tests.helpers.chat_server import ChatServer, Reply

LIB = '''"""Numbers, checked."""


def _check(x):
    if not isinstance(x, (int, float)):
        raise TypeError("a number, please")
    return x


def double(x):
    return 2 * _check(x)


def half(x):
    return _check(x) / 2


def clamp(x, lo, hi):
    x = _check(x)
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def sign(x):
    x = _check(x)
    if x > 0:
        return 1
    if x < 0:
        return -1
    return 0
'''

TESTS = """from numkit import clamp, double, half, sign


def test_double():
    assert double(4) == 8


def test_half():
    assert half(4) == 2


def test_clamp():
    assert clamp(-1, 0, 10) == 0 and clamp(11, 0, 10) == 10 and clamp(5, 0, 10) == 5


def test_sign_positive():
    assert sign(7) == 1


def test_sign_negative():
    assert sign(-1) == -1


def test_sign_zero():
    assert sign(0) == 0
"""

# The teacher's bugs, by function: one keeps (a real slip), one breaks nothing, one breaks every test,
# one reply holds no code, one changes nothing.
BUGS = {
    "sign": LIB.split("def sign")[1].replace("if x < 0:", "if x < -1:"),
    "clamp": LIB.split("def clamp")[1].split("\n\n\n")[0].replace("if x > hi:", "if x >= hi:"),
    "_check": LIB.split("def _check")[1].split("\n\n\n")[0].replace("return x", "return None"),
    "half": LIB.split("def half")[1].split("\n\n\n")[0],
}
LEAKY_ISSUE = "sign(-1) gives 0. I think the test `x < -1` in sign is the problem; it should compare with 0."
HONEST_ISSUE = (
    "Since upgrading, some results are wrong; see the failing test. "
    "Please fix the library so the test suite passes again (the tests must not be changed)."
)


def teacher(request):
    system, user = request["messages"][0]["content"], request["messages"][1]["content"]
    if system == ISSUE_SYSTEM:  # the issue writer: leaks for the teacher's own bug, honest for the rest
        return Reply(content=LEAKY_ISSUE if "test_sign_negative" in user else HONEST_ISSUE)
    name = user.split("Function: ")[1].split("\n")[0]
    if name == "double":
        return Reply(content="Sure! I made `double` subtly wrong, as you asked.")
    return Reply(content=f"```python\ndef {name}{BUGS[name].rstrip()}\n```")


def make_repo(root: Path) -> Path:
    (root / "numkit").mkdir(parents=True)
    (root / "numkit" / "__init__.py").write_text(LIB)
    (root / "tests").mkdir()
    (root / "tests" / "test_numkit.py").write_text(TESTS)
    git = ["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    return root


@pytest.fixture(scope="module")
def mined(tmp_path_factory):
    from agentmill.images import ImageBuilder

    root = tmp_path_factory.mktemp("tb")
    with ChatServer(teacher) as server:
        report = generate(
            root / "out",
            repos=[make_repo(root / "numkit")],
            max_tasks=4,
            seed=5,
            builder=ImageBuilder(),
            teacher={"name": "teacher", "base_url": server.base_url},
            teacher_bugs=5,
        )
    return root / "out", report, server


@sandbox
def test_the_teacher_saw_each_functions_source_and_each_failing_tests_output(mined):
    out, report, server = mined
    asks = [r["messages"][1]["content"] for r in server.requests if r["messages"][0]["content"] != ISSUE_SYSTEM]
    issues = [r["messages"][1]["content"] for r in server.requests if r["messages"][0]["content"] == ISSUE_SYSTEM]
    assert len(asks) == 5  # every function once: `--teacher-bugs 5`
    sign_ask = next(a for a in asks if "Function: sign" in a)
    assert "def sign(x):\n    x = _check(x)\n    if x > 0:" in sign_ask and "test_sign" not in sign_ask  # no tests
    assert len(issues) == report.candidates == 4  # one issue per valid candidate
    sign_issue = next(i for i in issues if "test_sign_negative" in i)
    assert "assert 0 == -1" in sign_issue  # the failing test's output
    assert "__init__.py" not in sign_issue and "x < -1" not in sign_issue  # never the file or the change


@sandbox
def test_teacher_bugs_go_through_the_keep_rule_and_each_rejection_says_why(mined):
    out, report, _ = mined
    teacher_drops = {d.name.split("-teacher-")[1]: d.reason for d in report.dropped if "-teacher-" in d.name}
    assert teacher_drops == {
        "clamp": "no_test_fails",  # breaks nothing
        "_check": "too_broad",  # breaks every test: no pass-to-pass
        "double": "bad_reply",  # no code in the reply
        "half": "no_change",  # the function as it was
    }, report.to_json()
    [project] = report.extra["projects"]
    assert project["teacher"] == {"asked": 5, "refused": 2, "tried": 3, "valid": 1, "kept": 1}
    ds = load_dataset(out / "tasks")
    origins = {t.name: t.config.metadata["origin"] for t in ds.tasks}
    [taught] = [t for t in ds.tasks if origins[t.name] == "teacher"]
    assert len(ds.tasks) == 4 and all(o == "teacher" or o.startswith("ast:") for o in origins.values())
    assert json.loads((taught.path / "tests" / "f2p.json").read_text()) == [
        "suite/tests/test_numkit.py::test_sign_negative"
    ]
    patch = (taught.path / "solution" / "fix.patch").read_text()
    assert "-    if x < -1:\n+    if x < 0:\n" in patch
    assert len({(t.path / "solution" / "fix.patch").read_text() for t in ds.tasks}) == 4  # no duplicates


@sandbox
def test_a_kept_teacher_bug_passes_agentmill_check(mined, tmp_path):
    out, _, _ = mined
    taught = next(p for p in (out / "tasks").iterdir() if "-teacher-" in p.name)
    alone = tmp_path / "tasks"
    shutil.copytree(taught, alone / taught.name)
    r = subprocess.run(
        [sys.executable, "-m", "agentmill.cli", "check", str(alone), "--json", str(tmp_path / "check.json")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    [row] = json.loads((tmp_path / "check.json").read_text())
    assert row["verdict"] == "ok" and row["oracle"]["reward"] == 1.0 and row["nop"]["reward"] == 0.0, row


@sandbox
def test_a_teachers_issue_that_quotes_the_mutated_expression_keeps_the_template(mined):
    out, report, _ = mined
    kept = report.extra["template_kept"]
    taught = next(p for p in (out / "tasks").iterdir() if "-teacher-" in p.name)
    assert kept == {taught.name: "quotes the mutated expression: x < -1"}
    text = (taught / "instruction.md").read_text()
    assert text.startswith("# `test_sign_negative` fails") and "x < -1" not in text
    others = [p for p in (out / "tasks").iterdir() if p != taught]
    assert all((p / "instruction.md").read_text().startswith("Since upgrading") for p in others)


def test_a_reply_becomes_a_small_patch_of_that_function_at_its_indentation():
    source = "class A:\n    def f(self, x):\n        if x > 0:\n            return 1\n        return 0\n"
    [site] = function_sites(source)
    assert site.qualname == "A.f" and site.indent == "    "
    reply = "Here:\n```python\ndef f(self, x):\n    if x >= 0:\n        return 1\n    return 0\n```\n"
    buggy = parse_bug(reply, site, source).apply(source)
    assert buggy == source.replace("x > 0", "x >= 0")
    for bad, why in [
        ("no code at all", "bad_reply"),
        ("```python\ndef g(self, x):\n    return 1\n```", "bad_reply"),  # another function
        ("```python\ndef f(self, x):\n    return '\ud800'\n```", "bad_reply"),  # a lone surrogate: ValueError
        ("```python\ndef f(self, x):\n    if x > 0:\n            return 1\n    return 0\n```", "no_change"),
        (
            "```python\ndef f(self, x):\n" + "".join(f"    y{i} = {i}\n" for i in range(8)) + "    return 0\n```",
            "not_subtle",
        ),
    ]:
        with pytest.raises(TeacherBugError, match=f"^{why}"):
            parse_bug(bad, site, source)


def _dead_url() -> str:
    with socket.socket() as s:  # a port nobody listens on once this closes
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_a_dead_teacher_is_one_clear_error_before_any_work(tmp_path):
    repo = make_repo(tmp_path / "numkit")
    out = tmp_path / "out"
    r = subprocess.run(
        [sys.executable, "-m", "agentmill.cli", "sources", "repo-bugs", "--repo", str(repo), "--out", str(out),
         "--model", "teacher", "--base-url", _dead_url()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr
    assert "preflight" in r.stderr and "cannot connect" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()  # nothing downloaded, mined or written


def test_a_recipe_teacher_is_preflighted_and_its_options_checked(tmp_path, monkeypatch, declared_source_kinds):
    from agentmill.models.preflight import PreflightError
    from agentmill.recipe.schema import load_recipe
    from agentmill.recipe.stages.sources import load_sources
    from tests.conftest import scratch_cache

    monkeypatch.setenv("AGENTMILL_CACHE", str(scratch_cache(tmp_path)))
    make_repo(tmp_path / "numkit")
    recipe = tmp_path / "r.toml"
    source = '[[sources]]\nname = "bugs"\nkind = "repo_bugs"\npath = "numkit"\n'
    recipe.write_text(source + f'params = {{ model = {{ name = "t", base_url = "{_dead_url()}" }} }}\n')
    with pytest.raises(PreflightError, match="teacher endpoint .* cannot connect"):
        load_sources(load_recipe(recipe)[0])
    recipe.write_text(source + "params = { teacher_bugs = 3 }\n")
    with pytest.raises(AgentmillError, match="teacher_bugs .* needs params.model"):
        load_sources(load_recipe(recipe)[0])
    recipe.write_text(source + 'params = { model = { name = "t" } }\n')
    with pytest.raises(AgentmillError, match="params.model needs name and base_url"):
        load_sources(load_recipe(recipe)[0])


def test_bugs_dict_is_what_the_teacher_sends():  # the fixtures above are the functions, edited in one line
    for name, rest in BUGS.items():
        original = LIB.split(f"def {name}")[1].split("\n\n\n")[0]
        changed = [a for a, b in zip(original.splitlines(), rest.rstrip().splitlines()) if a != b]
        assert len(changed) == (0 if name == "half" else 1), (name, textwrap.shorten(rest, 80))
