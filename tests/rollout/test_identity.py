"""Trial identity: every identity field, varied alone, makes a different trial (and a different
recipe rollout key); every operational field leaves it alone. A field dropped from the hash would
let the trial store and the recipe cache hand back trials made under other settings."""

from __future__ import annotations

import pytest

from agentmill.models.client import SamplingParams
from agentmill.rollout.config import RolloutConfig
from agentmill.rollout.identity import config_identity, settings_identity, trial_id

BASE = dict(
    dataset="/d",
    agent="terminus",
    agent_version="1",
    model="m",
    sampling=SamplingParams(),
    max_turns=20,
    max_context=None,
)
VARIED = {
    "agent": "tools",
    "agent_version": "2",
    "model": "other-model",
    "max_turns": 21,
    "max_context": 4096,
    "sampling": SamplingParams(temperature=0.1),
    "sampling.top_p": SamplingParams(top_p=0.5),
    "sampling.max_tokens": SamplingParams(max_tokens=17),
    "sampling.seed": SamplingParams(seed=3),
}
OPERATIONAL = {
    "dataset": "/elsewhere",
    "base_url": "http://10.1.2.3:9/v1",
    "api_key_env": "OTHER_KEY",
    "concurrency": 7,
    "model_concurrency": 3,
    "request_timeout": 5.0,
    "max_retries": 0,
}


@pytest.mark.parametrize("field", list(VARIED))
def test_each_identity_field_changes_the_trial(field):
    base = RolloutConfig(**BASE)
    changed = RolloutConfig(**{**BASE, field.split(".")[0]: VARIED[field]})
    assert trial_id(changed, "h", 0) != trial_id(base, "h", 0)
    assert config_identity(changed) != config_identity(base)
    assert changed.identity_changes(base) != []


@pytest.mark.parametrize("field", list(OPERATIONAL))
def test_operational_fields_keep_the_trial(field):
    base = RolloutConfig(**BASE)
    changed = RolloutConfig(**{**BASE, field: OPERATIONAL[field]})
    assert trial_id(changed, "h", 0) == trial_id(base, "h", 0) and changed.identity_changes(base) == []


def test_task_hash_and_attempt_are_identity():
    base = RolloutConfig(**BASE)
    assert len({trial_id(base, "h", 0), trial_id(base, "h2", 0), trial_id(base, "h", 1)}) == 3


@pytest.mark.parametrize(
    "field, value",
    [
        ("agent_version", "2"),
        ("max_turns", 21),
        ("agent", "tools"),
        ("model", "n"),
        ("sampling", SamplingParams(temperature=0.2)),
    ],
)
def test_settings_identity_carries_every_field_the_recipe_keys_on(field, value):
    # the recipe's rollout stage key (recipe/stages/rollout.py) is this dict: each field must change it
    base = dict(agent="terminus", agent_version="1", model="m", sampling=SamplingParams(), max_turns=20)
    assert settings_identity(**{**base, field: value}) != settings_identity(**base)


PINNED = dict(
    dataset="/d",
    agent="terminus",
    agent_version="1",
    model="m",
    sampling=SamplingParams(temperature=0.7, top_p=1.0, max_tokens=4096, seed=None),
    max_turns=20,
)


def test_the_identity_of_fixed_settings_is_stable_across_versions():
    # a resume, the trial store and the recipe cache find trials an earlier version made: the recorded
    # identity's field names and the id's hashing (sorted keys, 24 hex digits) must not drift
    config = RolloutConfig(**PINNED)
    assert config_identity(config) == {
        "agent": "terminus",
        "agent_version": "1",
        "model": "m",
        "max_turns": 20,
        "sampling": {"temperature": 0.7, "top_p": 1.0, "max_tokens": 4096, "seed": None},
    }
    assert (trial_id(config, "h", 0), trial_id(config, "h", 3)) == (
        "d33de6a4c5c56aab04c9a4e3",
        "15f851535fbd7f9d5b41a171",
    )
    with_context = RolloutConfig(**PINNED, max_context=4096)
    assert config_identity(with_context)["max_context"] == 4096
    assert trial_id(with_context, "h", 0) == "d24e5bb36af3e942c4fc9fe2"


def test_max_context_counts_only_with_a_model():
    plain = dict(PINNED, agent="nop", model=None)
    assert config_identity(RolloutConfig(**plain, max_context=4096)) == config_identity(RolloutConfig(**plain))
    assert "max_context" not in config_identity(RolloutConfig(**PINNED))  # unset: ids made before it existed hold


def test_network_keeps_every_earlier_id_and_counts_only_what_a_trial_had():
    # the default switch ("task") and a trial without the internet: the pinned ids above, unchanged
    config = RolloutConfig(**PINNED)
    assert config.network == "task" and "network" not in config_identity(config)
    assert trial_id(config, "h", 0, internet=False) == "d33de6a4c5c56aab04c9a4e3"
    # a trial whose agent had the internet is another trial
    assert trial_id(config, "h", 0, internet=True) != trial_id(config, "h", 0)
    # --network none: a task that never asked for the network makes the same trial as under "task"
    off = RolloutConfig(**PINNED, network="none")
    assert trial_id(off, "h", 0) == trial_id(config, "h", 0)
    # but the switch is part of the settings (the recipe's key) and a resume may not change it
    assert config_identity(off)["network"] == "none"
    assert off.identity_changes(config) == ["network: 'task' -> 'none'"]


def test_the_recipe_key_counts_the_network_switch_only_off_its_default():
    base = dict(agent="terminus", agent_version="1", model="m", sampling=SamplingParams(), max_turns=20)
    assert settings_identity(**base, network="task") == settings_identity(**base)
    assert settings_identity(**base, network="none") != settings_identity(**base)


def test_a_trial_gets_the_internet_only_when_task_and_user_allow_it(tmp_path):
    from agentmill.rollout.network import agent_internet, check_mode
    from agentmill.tasks import load_task
    from agentmill.tasks.model import EnvironmentSection, TaskConfig
    from tests.conftest import simple_task

    allows = load_task(
        simple_task(tmp_path, "a", config=TaskConfig(environment=EnvironmentSection(allow_internet=True)))
    )
    silent = load_task(simple_task(tmp_path, "b"))  # says nothing: no internet (unlike Harbor's default)
    assert silent.config.environment.allow_internet is False
    assert [agent_internet(m, t) for m in ("task", "none", "all") for t in (allows, silent)] == [
        True,
        False,
        False,
        False,
        True,
        True,
    ]
    with pytest.raises(ValueError, match="--network: 'host' is not one of task, none"):
        check_mode("host")


def test_a_recipes_network_key_reaches_its_rollout_key():
    from agentmill.recipe.schema import ModelSpec, Rollout
    from agentmill.recipe.stages.rollout import rollout_identity

    model = ModelSpec()
    assert rollout_identity(Rollout(), model) == rollout_identity(Rollout(network="task"), model)
    assert rollout_identity(Rollout(network="none"), model)["network"] == "none"
    with pytest.raises(ValueError, match="network"):
        Rollout(network="host")


def test_turns_and_sampling_count_only_with_a_model():
    # an agent without a model (oracle, nop) does the same whatever max_turns and sampling say
    plain = dict(PINNED, agent="nop", model=None)
    base = config_identity(RolloutConfig(**plain))
    assert (base["max_turns"], base["sampling"]) == (None, None)
    assert config_identity(RolloutConfig(**dict(plain, max_turns=7, sampling=SamplingParams(temperature=0.9)))) == base


def test_a_planned_trial_counts_the_internet_its_task_reference_carries(tmp_path):
    """Planning loads no task, so the reference must carry allow_internet: a task that asks for the
    network is planned as the trial with the internet (planted: the reference without it, planned
    as the offline trial; caught)."""
    from agentmill.rollout.plan import TaskRef, plan_trials
    from agentmill.tasks import load_task
    from agentmill.tasks.model import EnvironmentSection, TaskConfig
    from tests.conftest import simple_task

    task = load_task(simple_task(tmp_path, "a", config=TaskConfig(environment=EnvironmentSection(allow_internet=True))))
    config = RolloutConfig(**PINNED)
    [planned] = plan_trials(config, [TaskRef.of(task)])
    assert planned.trial_id == trial_id(config, task.content_hash, 0, internet=True)
    [offline] = plan_trials(RolloutConfig(**PINNED, network="none"), [TaskRef.of(task)])
    assert offline.trial_id == trial_id(config, task.content_hash, 0)
