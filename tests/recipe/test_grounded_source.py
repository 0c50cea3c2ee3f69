"""`[[sources]] kind = "grounded"`: a ground store's admitted tasks feed a recipe like any dataset."""

import pytest

from agentmill.errors import AgentmillError
from agentmill.recipe.schema import load_recipe
from agentmill.recipe.stages.sources import load_sources
from agentmill.tasks import write_task


def recipe_for(tmp_path, store: str):
    p = tmp_path / "r.toml"
    p.write_text(f'[[sources]]\nname = "g"\nkind = "grounded"\npath = "{store}"\n')
    return load_recipe(p)[0]


def test_admitted_tasks_of_a_ground_store_are_the_sources_tasks(tmp_path):
    store = tmp_path / "store"
    write_task(
        store / "tasks" / "quarterly-memo",
        instruction="Write the memo.\n",
        test_sh="echo 1 > /logs/verifier/reward.txt\n",
        solve_sh="true\n",
    )
    (store / "candidates").mkdir()  # other store folders are not tasks
    tasks, report = load_sources(recipe_for(tmp_path, "store"))
    assert [t.name for t in tasks] == ["g/quarterly-memo"]
    assert tasks[0].source == "g" and report.count_out == 1


def test_a_folder_that_is_not_a_ground_store_is_one_clear_error(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(AgentmillError, match="not a ground store"):
        load_sources(recipe_for(tmp_path, "plain"))


def test_grounded_needs_a_path(tmp_path):
    p = tmp_path / "r.toml"
    p.write_text('[[sources]]\nname = "g"\nkind = "grounded"\nsample = true\n')
    with pytest.raises(AgentmillError, match="sources.0"):
        load_recipe(p)
