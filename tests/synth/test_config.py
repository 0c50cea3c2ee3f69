"""The synth config: one clear error naming the file and the field; relative paths resolve against the file."""

import pytest

from agentmill.errors import AgentmillError
from agentmill.synth.config import load_config

ROLE = '[roles.{r}]\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "m"\n'
ALL = "".join(ROLE.format(r=r) for r in ("generator", "critic", "judge", "target", "solver"))


def write(tmp_path, text: str):
    p = tmp_path / "synth.toml"
    p.write_text(text)
    return p


def test_a_complete_config_loads_with_paths_resolved(tmp_path):
    (tmp_path / "gym").mkdir()  # a gym folder must be one when the config loads
    (tmp_path / "gym" / "schema.sql").write_text("CREATE TABLE t (id INTEGER);\n")
    (tmp_path / "gym" / "tools.py").write_text("")
    cfg = load_config(write(tmp_path, '[synth]\ncards = "c.jsonl"\n[env]\ngym_dir = "gym"\n' + ALL))
    assert cfg.synth.cards == tmp_path / "c.jsonl" and cfg.env.gym_dir == tmp_path / "gym"
    assert cfg.ballot.k == 3 and cfg.roles["solver"].client().model == "m"


@pytest.mark.parametrize(
    "text, message",
    [
        (
            '[synth]\ncards = "c"\n[env]\ngyms = ["itsm"]\n' + ALL.replace("[roles.solver]", "[roles.solvr]"),
            "missing [roles.solver]",
        ),
        ('[env]\ngyms = ["itsm"]\n' + ALL, "synth.cards or [diagnosis]"),
        ('[synth]\ncards = "c"\n[env]\n' + ALL, "set gyms"),
        ('[synth]\ncards = "c"\nworkerz = 2\n[env]\ngyms = ["itsm"]\n' + ALL, "field 'synth.workerz'"),
        ('[synth]\ncards = "c"\n[env]\ngyms = ["itsm"]\n[ballot]\nk = 0\n' + ALL, "field 'ballot.k'"),
        ("[synth\n", "invalid TOML"),
    ],
)
def test_bad_configs_are_one_clear_error(tmp_path, text, message):
    with pytest.raises(AgentmillError, match=r"synth\.toml") as e:
        load_config(write(tmp_path, text))
    assert message in str(e.value)


def test_without_a_ballot_the_target_and_solver_are_not_needed(tmp_path):
    roles = "".join(ROLE.format(r=r) for r in ("generator", "critic", "judge"))
    cfg = load_config(
        write(tmp_path, '[synth]\ncards = "c"\n[env]\ngyms = ["itsm"]\n[ballot]\nenabled = false\n' + roles)
    )
    assert set(cfg.roles) == {"generator", "critic", "judge"}


def test_resuming_with_another_environment_is_refused(tmp_path):
    import asyncio

    from agentmill.synth.run import run_synth
    from agentmill.synth.store import SynthStore

    store = SynthStore(tmp_path / "out")
    store.set_meta("env", '{"gyms":["collab"],"gym_dir":null}')
    store.close()
    cfg = load_config(write(tmp_path, '[synth]\ncards = "c.jsonl"\n[env]\ngyms = ["itsm"]\n' + ALL))
    with pytest.raises(AgentmillError, match="made for env .*collab.* this config says .*itsm"):
        asyncio.run(run_synth(cfg, tmp_path / "out"))


def test_a_role_may_be_the_embedded_model_without_an_endpoint(tmp_path):
    local = '[roles.generator]\nmodel = "local"\n' + "".join(
        ROLE.format(r=r) for r in ("critic", "judge", "target", "solver")
    )
    cfg = load_config(write(tmp_path, '[synth]\ncards = "c"\n[env]\ngyms = ["itsm"]\n' + local))
    assert cfg.roles["generator"].is_local and not cfg.roles["critic"].is_local
    with pytest.raises(AgentmillError, match="embedded model is not running"):
        cfg.roles["generator"].client()
    client = cfg.roles["generator"].client("http://127.0.0.1:5/v1")
    assert client.base_url == "http://127.0.0.1:5/v1" and client.model.startswith("SmolLM2")
    no_url = local.replace('[roles.critic]\nbase_url = "http://127.0.0.1:1/v1"\n', "[roles.critic]\n")
    with pytest.raises(AgentmillError, match=r"field 'roles.critic'.*needs base_url"):
        load_config(write(tmp_path, '[synth]\ncards = "c"\n[env]\ngyms = ["itsm"]\n' + no_url))
