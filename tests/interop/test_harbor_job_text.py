"""A harbor-job export of a trajectory holding a lone surrogate (an imported one: agentmill's own
agents clean text before storing it) writes U+FFFD in its place instead of failing the export."""

import json

from agentmill.traces.export import export_run
from agentmill.traces.filters import FilterSpec
from tests.traces.builders import terminus_trajectory, write_trial


def test_a_lone_surrogate_is_written_as_a_replacement_character(tmp_path):
    run = tmp_path / "run"
    write_trial(run, "t1", terminus_trajectory([("ls\n", "caf\ud800e and naïve\n")]))
    export_run(run, "harbor-job", tmp_path / "job", spec=FilterSpec(min_turns=0))
    files = list((tmp_path / "job").rglob("trajectory.json"))
    assert len(files) == 1
    text = files[0].read_text(encoding="utf-8")
    assert "caf\ufffde and naïve" in text and "\\ud800" not in text  # UTF-8 as Harbor writes it, not escaped
    steps = json.loads(text)["steps"]
    assert any("caf\ufffde" in json.dumps(s, ensure_ascii=False) for s in steps)
