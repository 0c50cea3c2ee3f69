"""The verifier's environment and pinned pytest options (verify/isolation.py), exactly.

test_reward_hacks.py shows each defence stopping its attack through a real trial; these pin what the
module builds, field by field, including the task's own pytest configuration in /tests, which no
attack there ships (mutation testing found every branch of `task_ini` unprotected).
"""

from __future__ import annotations

import asyncio
import os

import pytest

from agentmill.verify.isolation import DROPPED, HOME, PIN, TRUSTED_PATH, task_ini, verifier_env, write_pin
from agentmill.verify.test_deps import SITE
from agentmill.verify.toolkit import LIB, MOUNT
from tests.conftest import sandbox, scratch_cache

GUARDED = f"-p agentmill_pytest_guard -p no:cacheprovider --rootdir=/tests --confcutdir=/tests -c {PIN}/pytest.ini"


# -- the task's own ini file ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pytest.ini", ""),  # any pytest.ini counts, even empty (as pytest reads it)
        (".pytest.ini", "[pytest]\n"),
        ("pyproject.toml", "[project]\nname = 'x'\n\n[tool.pytest.ini_options]\naddopts = '-q'\n"),
        ("pyproject.toml", "  [tool.pytest]\n"),  # pytest 9's table, indented
        ("tox.ini", "[tox]\nenvlist = py\n[pytest]\nmarkers = slow\n"),
        ("setup.cfg", "[metadata]\nname = x\n\t[tool:pytest]\n"),
    ],
)
def test_a_task_ini_with_its_pytest_section_is_used(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    assert task_ini(tmp_path) == f"/tests/{name}"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pyproject.toml", "[project]\nname = 'x'\n"),
        ("pyproject.toml", "# [tool.pytest.ini_options]\n"),  # a comment is not the section
        ("tox.ini", "[tox]\nenvlist = py\n"),
        ("tox.ini", "x [pytest]\n"),
        ("setup.cfg", "[pytest]\n"),  # setup.cfg's section is [tool:pytest]
    ],
)
def test_a_file_without_the_pytest_section_is_not_the_tasks_ini(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    assert task_ini(tmp_path) is None


def test_the_ini_files_are_taken_in_pytests_order(tmp_path):
    for name, text in [
        ("setup.cfg", "[tool:pytest]\n"),
        ("tox.ini", "[pytest]\n"),
        ("pyproject.toml", "[tool.pytest.ini_options]\n"),
        (".pytest.ini", ""),
        ("pytest.ini", ""),
    ]:
        (tmp_path / name).write_text(text)
        assert task_ini(tmp_path) == f"/tests/{name}"


def test_a_linked_or_folder_ini_is_not_read(tmp_path):
    outside = tmp_path / "outside.ini"
    outside.write_text("[pytest]\n")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "pytest.ini").symlink_to(outside)
    (tests / ".pytest.ini").mkdir()
    (tests / "tox.ini").symlink_to(outside)
    assert task_ini(tests) is None
    (tests / "setup.cfg").write_bytes(b"# \xff\xfe\n[tool:pytest]\n")  # undecodable bytes are replaced, not fatal
    assert task_ini(tests) == "/tests/setup.cfg"


def test_no_tests_folder_has_no_ini(tmp_path):
    assert task_ini(tmp_path / "absent") is None


# -- the pin ----------------------------------------------------------------------------------------


def test_the_pin_holds_an_empty_ini_and_the_options_readable_by_all(tmp_path):
    pin, tests = tmp_path / "pin", tmp_path / "tests"
    tests.mkdir()
    os.umask(0o077)  # what the host's umask would give must not decide the modes
    try:
        addopts = write_pin(pin, tests)
    finally:
        os.umask(0o022)
    assert addopts == GUARDED
    assert (pin / "pytest.ini").read_text() == "[pytest]\n"
    assert (pin / "addopts").read_text() == GUARDED
    assert sorted(p.name for p in pin.iterdir()) == ["addopts", "pytest.ini"]
    assert pin.stat().st_mode & 0o777 == 0o755
    assert {(p.name, p.stat().st_mode & 0o777) for p in pin.iterdir()} == {("addopts", 0o644), ("pytest.ini", 0o644)}


def test_the_pin_names_the_tasks_ini_and_can_be_written_again(tmp_path):
    pin, tests = tmp_path / "deep" / "pin", tmp_path / "tests"
    tests.mkdir()
    (tests / "tox.ini").write_text("[pytest]\npython_files = check_*.py\n")
    write_pin(pin, tests)
    addopts = write_pin(pin, tests)  # a second verification of the same trial
    assert addopts == GUARDED.replace(f"{PIN}/pytest.ini", "/tests/tox.ini")
    assert (pin / "addopts").read_text() == addopts


# -- the environment --------------------------------------------------------------------------------


def test_the_environment_replaces_the_images_and_keeps_the_tasks():
    image = {"PATH": "/opt/app/bin:/usr/bin:/.agentmill/tk/bin:/root/.local/bin::/bin", "LANG": "fr_FR.UTF-8", "X": "1"}
    task = {"X": "2", "PYTHONPATH": "/app/src::/app/lib", "TERM": "dumb"}
    env = verifier_env(image, task, GUARDED, toolkit=True)
    assert env == {
        "LANG": "fr_FR.UTF-8",
        "TERM": "dumb",
        "USER": "root",
        "X": "2",
        "PATH": ":".join([f"{MOUNT}/bin", *TRUSTED_PATH, "/opt/app/bin", "/root/.local/bin"]),
        "HOME": HOME,
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": f"{LIB}:/app/src:/app/lib",
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_BREAK_SYSTEM_PACKAGES": "1",
        "PYTEST_ADDOPTS": GUARDED,
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }


def test_defaults_fill_an_empty_image_and_hooks_are_dropped_from_both():
    hooks = {key: "/tmp/evil" for key in DROPPED}
    env = verifier_env(hooks, {"HOME": "/root", "USER": "agent", **hooks}, GUARDED, toolkit=True)
    assert env["LANG"] == "C.UTF-8" and env["TERM"] == "xterm-256color" and env["USER"] == "agent"
    assert env["HOME"] == HOME
    assert env["PYTEST_ADDOPTS"] == GUARDED and env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"
    assert not [
        key for key in DROPPED if key in env and key not in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    ]
    assert env["PATH"] == ":".join([f"{MOUNT}/bin", *TRUSTED_PATH]) and env["PYTHONPATH"] == LIB


def test_without_the_toolkit_there_is_no_guard_to_load_and_autoload_is_not_pinned():
    env = verifier_env({"PATH": "/usr/bin"}, {}, GUARDED, toolkit=False)
    assert env["PATH"] == ":".join(TRUSTED_PATH)
    assert env["PYTEST_ADDOPTS"] == f"-p no:cacheprovider --rootdir=/tests --confcutdir=/tests -c {PIN}/pytest.ini"
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD" not in env


def test_the_test_deps_layer_comes_last_on_pythonpath():
    env = verifier_env({"PYTHONPATH": "/img"}, {}, GUARDED, toolkit=True, test_deps=True)
    assert env["PYTHONPATH"] == f"{LIB}:/img:{SITE}"


# -- through a real trial ---------------------------------------------------------------------------

CHECK = (
    "from pathlib import Path\n\ndef test_answer():\n    assert Path('/app/out.txt').read_text().strip() == 'hello'\n"
)


@sandbox
@pytest.mark.parametrize("ini", [True, False], ids=["task-ini", "no-ini"])
def test_the_verifier_runs_pytest_with_the_tasks_own_ini(tmp_path, ini):
    # the task's tests are check_*.py, which only its tox.ini tells pytest to collect: without the
    # ini file pytest collects nothing (exit 5) and the honest answer fails
    from agentmill.images import ImageBuilder
    from agentmill.rollout import run_trial
    from agentmill.verify import Outcome
    from tests.conftest import simple_task
    from tests.verify.test_reward_hacks import ShellAgent

    files = {"check_answer.py": CHECK}
    if ini:
        files["tox.ini"] = "[tox]\nenvlist = py\n\n[pytest]\npython_files = check_*.py\n"
    test_sh = "#!/bin/bash\npytest /tests -q -rA\nrc=$?\n[ $rc = 0 ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
    from agentmill.tasks import load_task

    task = load_task(simple_task(tmp_path, test_sh=test_sh, test_files=files))
    r = asyncio.run(
        run_trial(task, ShellAgent("echo hello > /app/out.txt"), ImageBuilder(cache=scratch_cache(tmp_path)))
    )
    if ini:
        assert r.outcome is Outcome.PASSED and "PASSED ../tests/check_answer.py::test_answer" in r.verifier_stdout, (
            r.verifier_stdout
        )
    else:
        assert r.outcome is Outcome.FAILED and "no tests ran" in r.verifier_stdout, r.verifier_stdout
