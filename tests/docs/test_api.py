"""The public Python API: stable names, documented, lazy; the quickstart example runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import agentmill
from tests.conftest import sandbox
from tests.docs.doc_blocks import ROOT


def _documented() -> set[str]:
    """Names in the first column of docs/api.md's table of stable names (`name` or `name(args)`)."""
    text = (ROOT / "docs" / "api.md").read_text()
    table = text.split("## The stable names", 1)[1].split("\n\n", 2)[1]
    names = set()
    for row in table.splitlines()[2:]:
        cell = row.split("|")[2]
        names |= set(re.findall(r"`([A-Za-z_]\w*)", cell))
    return names


def test_every_public_name_resolves_and_is_documented():
    public = set(agentmill.__all__) - {"__version__"}
    for name in public:
        assert getattr(agentmill, name) is not None, name
    assert _documented() == public
    assert set(dir(agentmill)) >= public


def test_unknown_names_are_attribute_errors():
    with pytest.raises(AttributeError, match="no attribute 'private_helper'"):
        agentmill.private_helper  # noqa: B018


def test_import_agentmill_loads_nothing_else():
    code = (
        "import sys, agentmill; print(sorted(m for m in sys.modules if m.startswith('agentmill.') or m in ('pydantic', 'typer')));"
        "agentmill.load_dataset; print('agentmill.tasks' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    first, second = r.stdout.splitlines()
    assert (
        first == "['agentmill.runtime', 'agentmill.runtime.lazy']" and second == "True"
    )  # the runtime room (a docstring) and the lazy-face helper, which import nothing of ours


def test_the_same_objects_as_their_modules():
    from agentmill.agents.registry import register
    from agentmill.rollout.runner import run_rollout

    assert agentmill.run_rollout is run_rollout and agentmill.register_agent is register


@sandbox
def test_the_quickstart_example_runs_in_under_30_lines(tmp_path):
    script = ROOT / "examples" / "quickstart.py"
    assert len(script.read_text().splitlines()) < 30
    r = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "4 trials ran; outcomes {'passed': 4}; mean reward 1.0" in r.stdout
    rows = [json.loads(line) for line in (tmp_path / "sft.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(row["provenance"]["agent"] == "oracle@1" for row in rows)
    job = json.loads((tmp_path / "harbor-job" / "result.json").read_text())
    assert job["n_total_trials"] == 4 and job["stats"]["evals"]["oracle__sample"]["metrics"] == [{"mean": 1.0}]
