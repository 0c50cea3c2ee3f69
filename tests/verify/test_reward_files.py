"""The reward files are read as hostile input, on the host, from the verifier's log folder.

Each test puts something other than a plain file at the reward file itself: a link to a host file
that says 1, a FIFO (a reader without O_NONBLOCK would hang), a hard link to a file elsewhere. None
may yield a reward; each is tamper evidence. The honest twin: a plain file is read as written.
"""

from __future__ import annotations

import os
import socket

from agentmill.verify.reward_files import MAX_BYTES, read_reward_files, rewritten
from agentmill.verify.tamper import TamperKind


def _logs(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    return logs


def test_a_plain_reward_file_is_read_as_written(tmp_path):
    logs = _logs(tmp_path)
    (logs / "reward.txt").write_text("0.5\n")
    files = read_reward_files(logs)
    assert files.data("reward.txt") == b"0.5\n" and files.evidence == []


def test_a_link_at_the_reward_file_is_not_followed(tmp_path):
    host = tmp_path / "host-secret"
    host.write_text("1\n")  # a host file whose content would read as a passing reward
    logs = _logs(tmp_path)
    (logs / "reward.txt").symlink_to(host)
    files = read_reward_files(logs)
    assert files.data("reward.txt") is None
    assert [(t.kind, t.path) for t in files.evidence] == [(TamperKind.REWARD_FILE, "/logs/verifier/reward.txt")]
    assert "link" in files.evidence[0].detail and str(host) in files.evidence[0].detail


def test_a_fifo_at_the_reward_file_neither_hangs_nor_counts(tmp_path):
    logs = _logs(tmp_path)
    os.mkfifo(logs / "reward.txt")
    files = read_reward_files(logs)  # returns: opened non-blocking, and refused as not a regular file
    assert files.data("reward.txt") is None
    assert [t.detail for t in files.evidence] == ["not a regular file"]


def test_a_hard_link_at_the_reward_file_is_evidence(tmp_path):
    logs = _logs(tmp_path)
    elsewhere = tmp_path / "kept-by-the-agent"
    elsewhere.write_text("1\n")
    os.link(elsewhere, logs / "reward.json")
    files = read_reward_files(logs)
    assert [t.detail for t in files.evidence] == ["hard-linked (2 names)"]


def test_a_read_only_reward_file_and_folder_are_evidence(tmp_path):
    logs = _logs(tmp_path)
    (logs / "reward.txt").write_text("1")
    (logs / "reward.txt").chmod(0o444)
    assert "pinned read-only" in read_reward_files(logs).evidence[0].detail
    logs.chmod(0o555)
    try:
        assert any(t.path == "/logs/verifier" for t in read_reward_files(logs).evidence)
    finally:
        logs.chmod(0o755)


def test_a_rewrite_after_the_script_ended_is_evidence(tmp_path):
    logs = _logs(tmp_path)
    (logs / "reward.txt").write_text("0")
    at_exit = read_reward_files(logs)
    assert rewritten(at_exit, read_reward_files(logs)) == []  # honest: unchanged
    (logs / "reward.txt").write_text("1")
    assert [t.path for t in rewritten(at_exit, read_reward_files(logs))] == ["/logs/verifier/reward.txt"]


def _tampered(outcome, reward):
    from agentmill.verify.tamper import Tamper
    from agentmill.verify.test_script import VerifierResult

    return VerifierResult(
        outcome,
        reward=reward,
        rewards={} if reward is None else {"reward": reward},
        tamper=[Tamper(kind=TamperKind.REWARD_FILE, path="/logs/verifier/reward.txt", detail="x")],
    )


def test_tamper_evidence_demotes_a_verifier_error_to_the_agents_failure():
    # a broken reward file the agent arranged must not read as the verifier's fault (not rerun, not excluded)
    from agentmill.verify.outcome import Outcome
    from agentmill.verify.test_script import withhold_for_tamper

    for outcome, reward in ((Outcome.VERIFIER_ERROR, None), (Outcome.PASSED, 1.0), (Outcome.FAILED, 0.0)):
        result = _tampered(outcome, reward)
        withhold_for_tamper(result)
        assert (result.outcome, result.reward, result.rewards) == (Outcome.FAILED, 0.0, {}), outcome
        assert "tamper evidence (1)" in result.error


def test_without_evidence_the_verdict_stands_and_a_timeout_stays_a_timeout():
    from agentmill.verify.outcome import Outcome
    from agentmill.verify.test_script import withhold_for_tamper

    for outcome, reward in ((Outcome.VERIFIER_ERROR, None), (Outcome.PASSED, 1.0)):
        result = _tampered(outcome, reward)
        result.tamper = []
        withhold_for_tamper(result)
        assert (result.outcome, result.reward) == (outcome, reward)
    timed_out = _tampered(Outcome.VERIFIER_TIMEOUT, None)
    withhold_for_tamper(timed_out)
    assert timed_out.outcome is Outcome.VERIFIER_TIMEOUT


def test_a_reward_folder_that_is_not_a_folder_is_one_piece_of_evidence(tmp_path):
    logs = tmp_path / "logs"
    logs.write_text("1\n")  # the mount point replaced by a file
    files = read_reward_files(logs)
    assert [(t.kind, t.path, t.detail) for t in files.evidence] == [
        (TamperKind.REWARD_FILE, "/logs/verifier", "unreadable: Not a directory")
    ]
    assert files.files == {}


def test_a_reward_folder_that_is_a_link_is_not_followed(tmp_path):
    real = _logs(tmp_path)
    (real / "reward.txt").write_text("1\n")
    (tmp_path / "linked").symlink_to(real, target_is_directory=True)
    files = read_reward_files(tmp_path / "linked")
    assert files.data("reward.txt") is None
    assert [(t.path, t.detail) for t in files.evidence] == [("/logs/verifier", "unreadable: Not a directory")]


def test_a_socket_at_the_reward_file_is_unreadable_evidence(tmp_path, monkeypatch):
    logs = _logs(tmp_path)
    monkeypatch.chdir(logs)  # a short relative name: socket paths are limited to 108 bytes
    with socket.socket(socket.AF_UNIX) as s:
        s.bind("reward.txt")
        files = read_reward_files(logs)
    assert files.data("reward.txt") is None
    assert [(t.kind, t.path, t.detail) for t in files.evidence] == [
        (TamperKind.REWARD_FILE, "/logs/verifier/reward.txt", "unreadable: No such device or address")
    ]


def test_a_huge_reward_file_is_read_up_to_the_cap(tmp_path):
    logs = _logs(tmp_path)
    (logs / "reward.json").write_bytes(b"7" * (MAX_BYTES + 5))
    assert read_reward_files(logs).data("reward.json") == b"7" * MAX_BYTES


def test_a_rewrite_is_named_with_what_happened(tmp_path):
    logs = _logs(tmp_path)
    at_exit = read_reward_files(logs)
    (logs / "judge_input.json").write_text("{}")
    assert [(t.kind, t.path, t.detail) for t in rewritten(at_exit, read_reward_files(logs))] == [
        (
            TamperKind.REWARD_FILE,
            "/logs/verifier/judge_input.json",
            "changed after the test script ended (a leftover process wrote it)",
        )
    ]
