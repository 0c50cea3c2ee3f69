"""`[[sources]] kind = "synth"`: a synth output folder's accepted tool tasks feed a recipe like any dataset."""

import pytest

from agentmill.errors import AgentmillError
from agentmill.recipe.schema import load_recipe
from agentmill.recipe.stages.sources import load_sources
from agentmill.synth.candidate import Candidate, GymSet
from agentmill.synth.output import publish
from agentmill.synth.store import SynthStore
from tests.synth.scripted import FINAL, GYM


def recipe_for(tmp_path, body: str):
    p = tmp_path / "r.toml"
    p.write_text(f'[[sources]]\nname = "s"\nkind = "synth"\n{body}\n')
    return load_recipe(p)[0]


def test_accepted_tasks_of_a_synth_run_are_the_sources_tasks(tmp_path):
    out = tmp_path / "out"
    SynthStore(out).close()
    publish(
        Candidate(candidate_id="card-good-s0000", card_id="card-good", body=FINAL["good"]), out, GymSet(gym_dir=GYM)
    )
    (out / "work").mkdir()  # other output folders are not tasks
    tasks, report = load_sources(recipe_for(tmp_path, 'path = "out"'))
    assert [t.name for t in tasks] == ["s/card-good-s0000"]
    assert tasks[0].instruction.startswith("[good] Ticket 10") and report.count_out == 1


def test_a_folder_that_is_not_a_synth_output_is_one_clear_error(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(AgentmillError, match="not a synth output folder"):
        load_sources(recipe_for(tmp_path, 'path = "plain"'))


def test_synth_needs_a_path(tmp_path):
    with pytest.raises(AgentmillError, match="sources.0"):
        recipe_for(tmp_path, "sample = true")
