import pytest

from agentmill.errors import AgentmillError
from agentmill.recipe.schema import load_recipe


def write(tmp_path, text):
    p = tmp_path / "r.toml"
    p.write_text(text)
    return p


def test_minimal_recipe_and_defaults(tmp_path):
    recipe, raw = load_recipe(write(tmp_path, '[[sources]]\nname = "a"\npath = "tasks"\n'))
    assert recipe.sources[0].name == "a" and recipe.resolve("tasks") == (tmp_path / "tasks").resolve()
    assert recipe.trace_filters.min_turns == 5 and recipe.exports[0].format == "trl"
    assert recipe.rollout.agent == "terminus" and recipe.model.name == "local"


@pytest.mark.parametrize(
    "text, key",
    [
        ('[[sources]]\nname = "a"\npath = "x"\n[mix]\ntop_n = 0\n', "mix.top_n"),
        ('[[sources]]\nname = "a"\npath = "x"\n[mix]\nbogus = 1\n', "mix.bogus"),
        ('[[sources]]\nname = "a"\n', "sources.0"),
        ('[[sources]]\nname = "a"\npath = "x"\n[[task_filters]]\nkind = "vibes"\n', "task_filters.0.kind"),
        ('[[sources]]\nname = "a"\npath = "x"\n[model]\nname = "gpt"\n', "model"),
        ('[[sources]]\nname = "a"\npath = "x"\n[trace_filters]\nmin_turns = "five"\n', "trace_filters.min_turns"),
        ("sources = []\n", "sources"),
    ],
)
def test_errors_name_the_key(tmp_path, text, key):
    with pytest.raises(AgentmillError) as err:
        load_recipe(write(tmp_path, text))
    assert f"r.toml: {key}" in str(err.value)


def test_invalid_toml(tmp_path):
    with pytest.raises(AgentmillError, match="invalid TOML"):
        load_recipe(write(tmp_path, "[[sources]\n"))


def test_source_kinds_come_from_the_registered_producers(tmp_path):
    from agentmill.recipe.source_kinds import source_kinds

    known = ["functions", "generate", "grounded", "harbor", "repo_bugs", "stackexchange", "synth"]
    assert source_kinds() == known  # the entry points this package declares
    with pytest.raises(AgentmillError, match=rf"sources\.0.*unknown kind 'slurm' \(known: {', '.join(known)}\)"):
        load_recipe(write(tmp_path, '[[sources]]\nname = "a"\nkind = "slurm"\npath = "x"\n'))


def test_params_belong_to_generator_kinds(tmp_path):
    with pytest.raises(AgentmillError, match=r"sources\.0.*kind \"harbor\" takes none"):
        load_recipe(write(tmp_path, '[[sources]]\nname = "a"\npath = "x"\nparams = { limit = 2 }\n'))
    with pytest.raises(AgentmillError, match=r"sources\.0.*give exactly one of path or sample"):
        load_recipe(write(tmp_path, '[[sources]]\nname = "a"\nkind = "harbor"\n'))
