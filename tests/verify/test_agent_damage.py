"""The agent's damage to its own tree is the agent's outcome, never infrastructure.

After a wrong answer an agent can damage its tree so that the verifier's sandbox cannot start over
it. As a sandbox_error that failure would leave pass@k and be rerun by `--retry infra`: a policy
could turn its failures into reruns. The five workdir attacks kept the verifier from starting
(planted: without the pristine-tree control in verify/start_blame.py each ended sandbox_error);
the /logs ones are neutralised earlier (verify/hardening.py) and stay here as a guard. Each must
end `failed` with reward 0. Honest twins: a start that fails for the machinery's own reasons (its
toolkit gone) still ends sandbox_error, and one that fails once passes on the second try.
"""

import asyncio

import pytest

from agentmill.agents import OracleAgent
from agentmill.images import ImageBuilder
from agentmill.rollout import run_trial
from agentmill.tasks import load_task
from agentmill.verify import Outcome
from tests.conftest import sandbox, scratch_cache, simple_task

pytestmark = sandbox

WRONG = "echo nope > /app/out.txt; cd /; "
DAMAGE = {
    "workdir-removed": "rm -rf /app",
    "workdir-mode-000": "chmod 000 /app",
    "workdir-replaced-by-a-file": "rm -rf /app && echo x > /app",
    "workdir-dangling-link": "rm -rf /app && ln -s /nowhere /app",
    "workdir-looping-link": "rm -rf /app && ln -s /app /app",
    "logs-replaced-by-a-file": "rm -rf /logs && echo x > /logs",
    "logs-looping-link": "rm -rf /logs && ln -s /logs /logs",
    "logs-mode-000": "mkdir -p /logs && chmod 000 /logs",
}


def trial(tmp_path, solve_sh):
    task = load_task(simple_task(tmp_path, solve_sh=solve_sh))
    return asyncio.run(run_trial(task, OracleAgent(), ImageBuilder(cache=scratch_cache(tmp_path))))


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damage_to_its_own_tree_is_the_agents_failure(tmp_path, damage):
    r = trial(tmp_path, WRONG + DAMAGE[damage] + "\n")
    assert r.outcome is Outcome.FAILED and not r.outcome.is_infra, (r.outcome, r.exception)
    assert r.reward == 0.0


def test_the_damage_is_named_when_it_kept_the_verifier_from_starting(tmp_path):
    r = trial(tmp_path, WRONG + DAMAGE["workdir-removed"] + "\n")
    assert "could not start over the agent's final state" in (r.exception or ""), r.exception


def test_a_right_answer_without_damage_still_passes(tmp_path):
    r = trial(tmp_path, "echo hello > /app/out.txt\n")
    assert r.outcome is Outcome.PASSED and r.reward == 1.0


def test_a_verifier_start_that_fails_for_the_machinery_stays_infra(tmp_path, monkeypatch):
    # the harness's own part gone (its verifier toolkit folder): the start fails over any tree
    from agentmill.runtime.paths import scratch_dir
    from agentmill.verify import test_script

    monkeypatch.setattr(test_script, "ensure_toolkit", lambda build=True: scratch_dir() / "no-such-toolkit")
    r = trial(tmp_path, WRONG + DAMAGE["workdir-removed"] + "\n")
    assert r.outcome is Outcome.SANDBOX_ERROR and r.outcome.is_infra, (r.outcome, r.exception)


def test_a_start_that_fails_once_is_tried_again(tmp_path, monkeypatch):
    from agentmill.errors import SandboxStartError
    from agentmill.verify import test_script

    real, calls = test_script.run_command, []

    async def flaky(*args, **kw):  # as under heavy oversubscription: the first start times out
        calls.append(1)
        if len(calls) == 1:
            raise SandboxStartError("sandbox did not start within 20s")
        return await real(*args, **kw)

    monkeypatch.setattr(test_script, "run_command", flaky)
    r = trial(tmp_path, "echo hello > /app/out.txt\n")
    assert r.outcome is Outcome.PASSED and len(calls) == 2


class _Template:
    """Stands where an Image stands for `starts_over_pristine_tree`: `instantiate(target)` copies its
    template to `target`; this one records what it found there, then fails or makes an empty root."""

    def __init__(self, fail: bool):
        self.fail, self.found_leftover = fail, None

    def instantiate(self, target):
        self.found_leftover = target.exists()
        if self.fail:
            raise OSError("no space left on device")
        target.mkdir()
        return target


def test_a_template_that_cannot_be_copied_is_not_the_agents_fault(tmp_path):
    from agentmill.sandbox.protocol import SandboxSpec
    from agentmill.verify.start_blame import starts_over_pristine_tree

    (tmp_path / "control-rootfs" / "old").mkdir(parents=True)  # left by an earlier, killed check
    image = _Template(fail=True)
    assert asyncio.run(starts_over_pristine_tree(image, SandboxSpec(rootfs=tmp_path / "x"), tmp_path)) is False
    assert image.found_leftover is False  # removed before the copy
    assert not (tmp_path / "control-rootfs").exists()


def test_the_control_root_is_removed_afterwards(tmp_path):
    from agentmill.sandbox.protocol import SandboxSpec
    from agentmill.verify.start_blame import starts_over_pristine_tree

    asyncio.run(starts_over_pristine_tree(_Template(fail=False), SandboxSpec(rootfs=tmp_path / "x"), tmp_path))
    assert not (tmp_path / "control-rootfs").exists()


def test_the_control_start_is_bounded_in_time(tmp_path, monkeypatch):
    # A control sandbox whose command never returns (as in an image whose `true` hangs) is cut at the
    # control's timeout, so the blame check cannot hold a trial (planted: no timeout; it hangs)
    from agentmill.verify import start_blame

    real = start_blame.run_command

    async def hanging(spec, argv, **kw):
        return await real(spec, ["/bin/sleep", "600"], **kw)

    monkeypatch.setattr(start_blame, "run_command", hanging)
    monkeypatch.setattr(start_blame, "_CONTROL_TIMEOUT", 1.0)
    task = load_task(simple_task(tmp_path))
    cache = scratch_cache(tmp_path)
    image = asyncio.run(ImageBuilder(cache=cache).get(task))
    check = start_blame.starts_over_pristine_tree(image, image.spec(cache / "x"), cache)
    assert asyncio.run(asyncio.wait_for(check, 60)) is True  # it started; only its command was cut
