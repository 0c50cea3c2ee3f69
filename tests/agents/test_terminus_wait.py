"""The model's `duration` is an upper bound: a one-line command's wait ends when the shell's prompt is
back, and the model still sees the command's whole output."""

import time

from agentmill.verify import Outcome
from tests.agents.test_terminus import run_terminus
from tests.conftest import sandbox
from tests.helpers.chat_server import Reply, queue, terminus_json

pytestmark = sandbox


def test_a_finished_command_does_not_wait_out_its_duration(tmp_path):
    policy = queue(
        Reply(terminus_json([("sleep 0.4; echo hello > /app/out.txt; echo wrote-it\n", 40)])),
        Reply(terminus_json(complete=True)),
    )
    started = time.monotonic()
    trial, result, requests = run_terminus(tmp_path, policy)
    elapsed = time.monotonic() - started
    assert trial.outcome is Outcome.PASSED, trial.exception
    assert elapsed < 20, elapsed  # not the 40 s the model allowed
    observation = requests[1]["messages"][-1]["content"]
    assert "\nwrote-it\n" in observation


def test_a_command_still_running_is_waited_for_up_to_its_duration(tmp_path):
    policy = queue(
        Reply(terminus_json([("sleep 30\n", 1.0)])),
        Reply(terminus_json([("C-c", 0.1)])),
        Reply(terminus_json([("echo hello > /app/out.txt\n", 0.1)])),
        Reply(terminus_json(complete=True)),
    )
    started = time.monotonic()
    trial, result, requests = run_terminus(tmp_path, policy)
    assert trial.outcome is Outcome.PASSED, trial.exception
    assert time.monotonic() - started < 25
    assert "sleep 30" in requests[1]["messages"][-1]["content"]
