"""The test-script verifier's verdict rules (verify/test_script.py), one rule at a time.

The trials in test_trials.py and test_reward_hacks.py show the verifier end to end; these pin the
rules it applies to what the run left: how a reward becomes an outcome, when the supervisor's marks
are tamper, when evidence withholds a reward, and the verifier's home and folders.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from agentmill.sandbox.command import CommandResult
from agentmill.verify import Outcome
from agentmill.verify.tamper import Tamper, TamperKind
from agentmill.verify.test_script import VerifierResult, _fresh, _judge, _seed_home, _supervision, withhold_for_tamper
from tests.conftest import sandbox

TB = SimpleNamespace(format="terminal-bench")
HARBOR = SimpleNamespace(format="harbor")
EVIDENCE = Tamper(kind=TamperKind.SUPERVISOR, path="/tests", detail="x")


def judged(task, returncode: int, txt: bytes | None, js: bytes | None) -> VerifierResult:
    result = VerifierResult(Outcome.FAILED)
    _judge(task, result, returncode, txt, js)
    return result


# -- the verdict ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("returncode", "reward", "outcome"), [(0, 1.0, Outcome.PASSED), (1, 0.0, Outcome.FAILED)])
def test_terminal_bench_without_reward_files_is_judged_by_the_exit_status(returncode, reward, outcome):
    r = judged(TB, returncode, None, None)
    assert (r.outcome, r.reward, r.rewards, r.error) == (outcome, reward, {}, None)


def test_terminal_bench_with_a_reward_file_is_judged_by_the_file_not_the_exit_status():
    r = judged(TB, 0, b"0\n", None)
    assert (r.outcome, r.reward, r.rewards) == (Outcome.FAILED, 0.0, {"reward": 0.0})
    r = judged(TB, 1, None, b'{"a": 1, "b": 1}')
    assert (r.outcome, r.reward, r.rewards) == (Outcome.PASSED, 1.0, {"a": 1.0, "b": 1.0})


def test_harbor_without_reward_files_is_a_verifier_error_whatever_the_exit_status():
    r = judged(HARBOR, 0, None, None)
    assert r.outcome is Outcome.VERIFIER_ERROR and r.reward is None
    assert r.error == "the verifier wrote no /logs/verifier/reward.txt or reward.json"


def test_reward_txt_wins_over_reward_json():
    r = judged(HARBOR, 0, b"0", b'{"reward": 1}')
    assert (r.outcome, r.reward, r.rewards) == (Outcome.FAILED, 0.0, {"reward": 0.0})


@pytest.mark.parametrize(
    ("txt", "outcome"),
    [
        (b"1", Outcome.PASSED),
        (b"0.999999999", Outcome.PASSED),  # exactly 1 - 1e-9
        (b"2", Outcome.PASSED),
        (b"0.999999", Outcome.FAILED),
    ],
)
def test_a_pass_is_a_reward_of_one_within_float_noise(txt, outcome):
    assert judged(HARBOR, 0, txt, None).outcome is outcome


def test_an_unreadable_reward_is_a_verifier_error_with_its_reason():
    r = judged(HARBOR, 0, b"yes", None)
    assert (r.outcome, r.reward, r.error) == (Outcome.VERIFIER_ERROR, None, "reward.txt is not a number: 'yes'")


# -- tamper evidence withholds the reward ------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "reward", "said"),
    [(Outcome.PASSED, 1.0, "1"), (Outcome.FAILED, 0.25, "0.25"), (Outcome.VERIFIER_ERROR, None, "no reward")],
)
def test_evidence_makes_the_trial_the_agents_failure_with_no_reward(outcome, reward, said):
    r = VerifierResult(outcome, reward=reward, rewards={"reward": 1.0}, tamper=[EVIDENCE, EVIDENCE])
    withhold_for_tamper(r)
    assert (r.outcome, r.reward, r.rewards) == (Outcome.FAILED, 0.0, {})
    assert r.error == f"tamper evidence (2): reward withheld (the tests said {said})"


@pytest.mark.parametrize("outcome", [Outcome.VERIFIER_TIMEOUT, Outcome.SANDBOX_ERROR])
def test_evidence_leaves_a_timeout_or_a_sandbox_error_as_it_is(outcome):
    r = VerifierResult(outcome, error="kept", tamper=[EVIDENCE])
    withhold_for_tamper(r)
    assert (r.outcome, r.reward, r.error) == (outcome, None, "kept")


def test_without_evidence_nothing_changes():
    r = VerifierResult(Outcome.PASSED, reward=1.0, rewards={"reward": 1.0})
    withhold_for_tamper(r)
    assert (r.outcome, r.reward, r.rewards, r.error) == (Outcome.PASSED, 1.0, {"reward": 1.0}, None)


# -- the supervisor's marks -------------------------------------------------------------------------


def run(marks: str, timed_out: bool = False) -> CommandResult:
    return CommandResult(returncode=0, stdout="", stderr="", timed_out=timed_out, marks=marks)


@pytest.mark.parametrize(("marks", "timed_out"), [("sxe", False), ("sxe", True), ("s", True), ("sx", True)])
def test_the_supervisors_own_marks_are_not_tamper(marks, timed_out):
    assert _supervision(run(marks, timed_out)) == []


@pytest.mark.parametrize(
    ("marks", "timed_out"), [("", False), ("s", False), ("sx", False), ("sxee", False), ("sxxe", False), ("", True)]
)
def test_missing_or_extra_marks_are_supervisor_tamper(marks, timed_out):
    (t,) = _supervision(run(marks, timed_out))
    assert (t.kind, t.path) == (TamperKind.SUPERVISOR, "/tests")
    assert (
        t.detail == f"the verifier's supervisor reported {marks!r}, not 'sxe': it was killed or its marks were forged"
    )


# -- the verifier's home and folders ----------------------------------------------------------------


def image(rootfs, home: str | None = None):
    return SimpleNamespace(rootfs=rootfs, env={} if home is None else {"HOME": home})


def test_the_home_starts_as_the_images_home(tmp_path):
    (tmp_path / "root" / ".config").mkdir(parents=True)
    (tmp_path / "root" / ".gitconfig").write_text("[user]\n")
    (tmp_path / "root" / ".config" / "x").write_text("y")
    (tmp_path / "home" / "dev").mkdir(parents=True)
    (tmp_path / "home" / "dev" / ".profile").write_text("dev")
    home = tmp_path / "verifier-home"
    home.mkdir()
    _seed_home(image(tmp_path), home)
    assert (home / ".gitconfig").read_text() == "[user]\n" and (home / ".config" / "x").read_text() == "y"
    other = tmp_path / "other-home"
    other.mkdir()
    _seed_home(image(tmp_path, "/home/dev"), other)
    assert [p.name for p in other.iterdir()] == [".profile"]


def test_a_linked_or_missing_image_home_seeds_nothing(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret").write_text("s")
    (tmp_path / "root").symlink_to(tmp_path / "elsewhere")
    home = tmp_path / "verifier-home"
    home.mkdir()
    _seed_home(image(tmp_path), home)
    _seed_home(image(tmp_path, "/nowhere"), home)
    assert list(home.iterdir()) == []


def test_a_fresh_folder_is_empty_even_where_one_was(tmp_path):
    old = tmp_path / "a" / "logs"
    old.mkdir(parents=True)
    (old / "reward.txt").write_text("1")
    assert _fresh(old) == old and list(old.iterdir()) == []
    assert _fresh(tmp_path / "b" / "c").is_dir()


# -- verify() through a real trial: what crosses to the pre-pass, the run and back -------------------

MARKED = (
    "#!/bin/bash\nprintf 'no newline at the end' >&2\n"
    "printf 'AGENTMILL_TAMPER\\trunner_guard\\t/app/x\\tplanted\\n'\n"
    "printf '{\"deliverables\": 1}' > /logs/verifier/judge_input.json\n"
    "echo 0 > /logs/verifier/reward.txt\nexit 3\n"
)


def _trial(tmp_path, monkeypatch, test_sh: str, solve_sh: str = "echo hello > /app/out.txt\n", **task_kw):
    """Run one oracle trial, recording what verify() handed its parts and what it returned."""
    import asyncio

    from agentmill.agents import OracleAgent
    from agentmill.images import ImageBuilder
    from agentmill.rollout import run_trial
    from agentmill.tasks import load_task
    from agentmill.verify import test_script
    from tests.conftest import scratch_cache, simple_task

    seen: dict = {}
    real_harden, real_run, real_verify = test_script.harden, test_script.run_command, test_script.verify

    def harden(rootfs, template, quarantine, **kw):
        seen["harden"] = (rootfs, template, quarantine, kw)
        return real_harden(rootfs, template, quarantine, **kw)

    async def run_command(spec, argv, **kw):
        seen["run"] = (spec, argv, kw)
        return await real_run(spec, argv, **kw)

    async def verify(task, image, rootfs, scratch, limits):
        seen["image"], seen["scratch"], seen["limits"] = image, scratch, limits
        seen["result"] = await real_verify(task, image, rootfs, scratch, limits)
        return seen["result"]

    monkeypatch.setattr(test_script, "harden", harden)
    monkeypatch.setattr(test_script, "run_command", run_command)
    monkeypatch.setattr(test_script, "verify", verify)
    task = load_task(simple_task(tmp_path, test_sh=test_sh, solve_sh=solve_sh, **task_kw))
    asyncio.run(run_trial(task, OracleAgent(), ImageBuilder(cache=scratch_cache(tmp_path))))
    return task, seen


@sandbox
def test_verify_hands_its_parts_what_they_need_and_keeps_what_the_run_left(tmp_path, monkeypatch):

    from agentmill.tasks import TaskConfig
    from agentmill.verify.isolation import PIN
    from agentmill.verify.toolkit import MOUNT, ensure_toolkit

    config = TaskConfig.model_validate(
        {"environment": {"memory_mb": 1536, "cpus": 1.5}, "verifier": {"timeout_sec": 77}}
    )
    task, seen = _trial(
        tmp_path, monkeypatch, MARKED, solve_sh="echo hello > /app/out.txt; echo x > /app/conftest.py\n", config=config
    )
    image, scratch, r = seen["image"], seen["scratch"], seen["result"]
    rootfs, template, quarantine, kw = seen["harden"]
    spec, argv, run_kw = seen["run"]
    toolkit = ensure_toolkit(build=False)
    system = Path(getattr(spec, "system_root", None) or "/")
    # the pre-pass: this trial's tree, against the image's, into the trial's quarantine
    assert template == image.rootfs and quarantine == scratch / "quarantine"
    assert kw == {
        "workdir": image.workdir,
        "env": dict(image.env),
        "command_dirs": (system / "usr/bin", system / "usr/sbin", image.usr_local / "bin", toolkit / "bin"),
        "overlay": image.overlay,
    }
    # the run: the task's script, under the verifier's own environment, limits and mounts
    assert argv == ["/usr/bin/bash", "/tests/test.sh"]
    assert run_kw["env"] is spec.env and spec.env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"
    assert (run_kw["timeout"], run_kw["max_output"], run_kw["linger"]) == (
        task.config.verifier.timeout_sec,
        64 << 10,
        0.5,
    )
    assert callable(run_kw["at_exit"])
    assert spec.limits == seen["limits"] and (spec.limits.memory_mb, spec.limits.cpus) == (1536, 1.5)
    assert set(spec.ro_mounts) == {"/tests", PIN, MOUNT} and spec.ro_mounts[MOUNT] == toolkit
    assert spec.ro_mounts[PIN] == scratch / "verifier-pin"
    assert set(spec.rw_mounts) == {"/logs/verifier", "/.agentmill/home"}
    # back: the exit status, the outputs, the judge's input, the marker joined across the streams
    assert r.returncode == 3 and r.stderr == "no newline at the end" and r.judge_input == b'{"deliverables": 1}'
    # the pre-pass's evidence first, then what the run's markers said
    assert [(t.kind.value, t.path) for t in r.tamper] == [
        ("runner_config", "/app/conftest.py"),
        ("runner_guard", "/app/x"),
    ]
    assert r.tamper[1].detail == "planted"
    assert r.outcome is Outcome.FAILED and r.reward == 0.0
    assert r.error == "tamper evidence (2): reward withheld (the tests said 0)"
    assert 0 < r.seconds < 120


@sandbox
def test_a_failed_pre_pass_is_the_machinerys_error(tmp_path, monkeypatch):
    from agentmill.verify import test_script

    def broken(*args, **kw):
        raise OSError("disk gone")

    monkeypatch.setattr(test_script, "harden", broken)
    _, seen = _trial(tmp_path, monkeypatch, "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    r = seen["result"]
    assert (r.outcome, r.reward, r.error) == (Outcome.SANDBOX_ERROR, None, "pre-verification pass failed: disk gone")
    assert 0 < r.seconds < 60 and "run" not in seen


@sandbox
@pytest.mark.parametrize("agents_state", [True, False], ids=["agents-state", "machinery"])
def test_a_verifier_that_never_starts_is_blamed_by_the_pristine_control(tmp_path, monkeypatch, agents_state):
    from agentmill.errors import SandboxError
    from agentmill.verify import test_script

    attempts = []

    async def never(spec, argv, **kw):
        attempts.append(argv)
        raise SandboxError(f"cannot start {len(attempts)}")

    async def control(image, spec, scratch):
        return agents_state  # True: the task's own tree starts, so the agent's tree was the cause

    monkeypatch.setattr(test_script, "run_command", never)
    monkeypatch.setattr(test_script, "starts_over_pristine_tree", control)
    _, seen = _trial(tmp_path, monkeypatch, "#!/bin/bash\nexit 0\n", solve_sh="echo hi > /app/conftest.py\n")
    r = seen["result"]
    assert len(attempts) == 2  # a transient failure gets a second try, no more
    assert [t.path for t in r.tamper] == ["/app/conftest.py"]  # the pre-pass's evidence is kept either way
    assert 0 < r.seconds < 60
    if agents_state:
        assert (r.outcome, r.reward) == (Outcome.FAILED, 0.0)
        assert r.error == (
            "the verifier could not start over the agent's final state (it starts over the task's own): cannot start 2"
        )
    else:
        assert (r.outcome, r.reward, r.error) == (Outcome.SANDBOX_ERROR, None, "cannot start 2")


@sandbox
def test_packages_the_test_script_installs_come_from_the_test_deps_layer(tmp_path, monkeypatch):
    from agentmill.verify.test_deps import MOUNT, SITE

    test_sh = (
        "#!/bin/bash\npip install tomli-w==1.0.0\n"
        "python3 -c 'import tomli_w' && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
    )
    _, seen = _trial(tmp_path, monkeypatch, test_sh)
    spec, r = seen["run"][0], seen["result"]
    assert MOUNT in spec.ro_mounts and spec.env["PYTHONPATH"].split(":")[-1] == SITE
    assert r.outcome is Outcome.PASSED, (r.stdout, r.stderr)


@sandbox
def test_without_a_toolkit_the_script_runs_on_the_images_own_tools_unguarded(tmp_path, monkeypatch):
    from agentmill.verify import test_script
    from agentmill.verify.toolkit import MOUNT

    monkeypatch.setattr(test_script, "ensure_toolkit", lambda build=True: None)
    _, seen = _trial(tmp_path, monkeypatch, "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    spec, r = seen["run"][0], seen["result"]
    assert len(seen["harden"][3]["command_dirs"]) == 3  # no toolkit folder among the known commands
    assert MOUNT not in spec.ro_mounts and not spec.env["PATH"].startswith(MOUNT)
    assert "agentmill_pytest_guard" not in spec.env["PYTEST_ADDOPTS"]
    assert r.outcome is Outcome.PASSED


@sandbox
def test_a_verifier_past_its_time_is_a_timeout_that_says_so(tmp_path, monkeypatch):
    from agentmill.tasks import TaskConfig

    config = TaskConfig.model_validate({"verifier": {"timeout_sec": 1.5}})
    _, seen = _trial(tmp_path, monkeypatch, "#!/bin/bash\nsleep 30\n", config=config)
    r = seen["result"]
    assert (r.outcome, r.reward, r.error) == (Outcome.VERIFIER_TIMEOUT, None, "verifier exceeded 1.5s")
