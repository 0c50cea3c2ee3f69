"""The test-script verifier's verdict rules (verify/test_script.py), one rule at a time.

The trials in test_trials.py and test_reward_hacks.py show the verifier end to end; these pin the
rules it applies to what the run left: how a reward becomes an outcome, when the supervisor's marks
are tamper, when evidence withholds a reward, and the verifier's home and folders.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agentmill.sandbox.command import CommandResult
from agentmill.verify import Outcome
from agentmill.verify.tamper import Tamper, TamperKind
from agentmill.verify.test_script import VerifierResult, _fresh, _judge, _seed_home, _supervision, withhold_for_tamper

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
    [(b"1", Outcome.PASSED), (b"0.9999999999", Outcome.PASSED), (b"2", Outcome.PASSED), (b"0.999999", Outcome.FAILED)],
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
