import pytest

from agentmill.errors import TaskError
from agentmill.tasks import TaskConfig, load_dataset, load_task, write_task
from agentmill.tasks.hashing import hash_tree
from tests.conftest import simple_task


def test_harbor_roundtrip(tmp_path):
    cfg = TaskConfig.model_validate(
        {
            "agent": {"timeout_sec": 42},
            "environment": {"memory_mb": 512, "cpus": 2},
            "verifier": {"timeout_sec": 7, "env": {"A": "b"}},
            "metadata": {"difficulty": "easy"},
        }
    )
    root = write_task(
        tmp_path / "t",
        instruction="Do it.",
        config=cfg,
        test_sh="exit 0\n",
        solve_sh="true\n",
        environment_files={"app/data.txt": "x"},
    )
    task = load_task(root)
    assert task.format == "harbor" and task.name == "t"
    assert task.instruction == "Do it."
    assert task.config.agent.timeout_sec == 42 and task.config.environment.memory_mb == 512
    assert task.config.verifier.env == {"A": "b"} and task.config.metadata["difficulty"] == "easy"
    assert task.dockerfile == root / "environment" / "Dockerfile"
    assert task.tests_sources == (root / "tests",) and task.test_script == "test.sh"
    assert task.solution_script == "solve.sh"
    assert task.warnings == ()


def test_content_hash_stable_and_sensitive(tmp_path):
    a = simple_task(tmp_path / "a")
    b = simple_task(tmp_path / "b")
    assert load_task(a).content_hash == load_task(b).content_hash  # same files, other place
    h = load_task(a).content_hash
    assert load_task(a).content_hash == h  # stable on reload
    (a / "tests" / "test.sh").write_text((a / "tests" / "test.sh").read_text() + " ")
    assert load_task(a).content_hash != h  # one byte changed
    h2 = load_task(a).content_hash
    (a / "environment" / "Dockerfile").chmod(0o755)
    assert load_task(a).content_hash != h2  # executable bit matters


def test_hash_ignores_pycache(tmp_path):
    root = simple_task(tmp_path)
    h = hash_tree(root)
    (root / "tests" / "__pycache__").mkdir()
    (root / "tests" / "__pycache__" / "x.pyc").write_bytes(b"junk")
    assert hash_tree(root) == h


@pytest.mark.parametrize(
    "breaker, file, problem",
    [
        (lambda r: (r / "instruction.md").unlink(), "instruction.md", "missing instruction"),
        (lambda r: (r / "instruction.md").write_text("  \n"), "instruction.md", "empty instruction"),
        (lambda r: (r / "task.toml").write_text("[agent\ntimeout_sec = 1"), "task.toml", "invalid TOML"),
        (
            lambda r: (r / "task.toml").write_text('[agent]\ntimeout_sec = "soon"\n'),
            "task.toml",
            "field 'agent.timeout_sec'",
        ),
        (
            lambda r: (r / "task.toml").write_text("[environment]\nmemory_mb = -5\n"),
            "task.toml",
            "field 'environment.memory_mb'",
        ),
        (lambda r: (r / "tests" / "test.sh").unlink(), "test.sh", "missing"),
        (lambda r: (r / "instruction.md").write_bytes(b"\xff\xfe bad"), "instruction.md", "not UTF-8"),
    ],
)
def test_malformed_task_one_clear_line(tmp_path, breaker, file, problem):
    root = simple_task(tmp_path)
    breaker(root)
    with pytest.raises(TaskError) as err:
        load_task(root)
    msg = str(err.value)
    assert "\n" not in msg
    assert str(err.value.path).endswith(file), msg
    assert problem in msg


def test_unknown_keys_warn_not_fail(tmp_path):
    root = simple_task(tmp_path)
    (root / "task.toml").write_text("shiny = 1\n[agent]\ntimeout_sec = 5\nturbo = true\n")
    task = load_task(root)
    assert task.config.agent.timeout_sec == 5
    assert any("'shiny'" in w for w in task.warnings) and any("'agent.turbo'" in w for w in task.warnings)


def test_missing_solution_is_a_warning(tmp_path):
    task = load_task(simple_task(tmp_path, solve_sh=None))
    assert task.solution_script is None and any("no oracle solution" in w for w in task.warnings)


def test_dataset_reports_every_broken_task_and_keeps_good(tmp_path):
    for i in range(5):
        simple_task(tmp_path, f"good{i}")
    (simple_task(tmp_path, "bad-toml") / "task.toml").write_text("= nope")
    (simple_task(tmp_path, "bad-tests") / "tests" / "test.sh").unlink()
    (tmp_path / "not-a-task").mkdir()
    ds = load_dataset(tmp_path)
    assert sorted(t.name for t in ds.tasks) == [f"good{i}" for i in range(5)]
    assert sorted(e.path.parent.name if e.path.name != "not-a-task" else e.path.name for e in ds.errors) == [
        "bad-toml",
        "not-a-task",
        "tests",
    ]


def test_single_task_folder_is_a_dataset(tmp_path):
    root = simple_task(tmp_path)
    assert [t.name for t in load_dataset(root).tasks] == ["hello"]


def test_terminal_bench_legacy(tmp_path):
    root = tmp_path / "legacy"
    (root / "tests").mkdir(parents=True)
    (root / "task.yaml").write_text(
        "instruction: |\n  Create /app/done.\nmax_agent_timeout_sec: 120\nmax_test_timeout_sec: 30\n"
        "difficulty: easy\nparser_name: pytest\nweird_key: 1\n"
    )
    (root / "Dockerfile").write_text("FROM python:3.11-slim\nWORKDIR /app\n")
    (root / "solution.sh").write_text("touch /app/done\n")
    (root / "run-tests.sh").write_text("test -f /app/done\n")
    (root / "tests" / "test_outputs.py").write_text("")
    task = load_task(root)
    assert task.format == "terminal-bench"
    assert task.instruction.strip() == "Create /app/done."
    assert task.config.agent.timeout_sec == 120 and task.config.verifier.timeout_sec == 30
    assert task.config.verifier.env["TEST_DIR"] == "/tests"
    assert task.test_script == "run-tests.sh" and root / "run-tests.sh" in task.tests_sources
    assert task.solution_script == "solution.sh"
    assert any("weird_key" in w for w in task.warnings)


def test_terminal_bench_bad_yaml(tmp_path):
    root = tmp_path / "legacy"
    root.mkdir()
    (root / "task.yaml").write_text("instruction: [unclosed\n")
    with pytest.raises(TaskError, match="task.yaml: invalid YAML"):
        load_task(root)
    (root / "task.yaml").write_text("max_agent_timeout_sec: 5\n")
    with pytest.raises(TaskError, match="field 'instruction'"):
        load_task(root)
