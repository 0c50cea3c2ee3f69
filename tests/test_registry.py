"""The one registry every extension point uses: names, duplicates, unknown names, plug-ins, built-ins."""

import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from agentmill import registry as registry_module
from agentmill.errors import AgentmillError
from agentmill.registry import DuplicateNameError, Registry, UnknownNameError

SRC = Path(__file__).resolve().parents[1] / "src"


def test_register_get_and_list():
    things: Registry[int] = Registry("widget")
    things.register("one", 1)
    assert things.get("one") == 1 and things.names() == ["one"] and "one" in things
    things.register("one", 1)  # the same thing again is fine


def test_a_second_thing_under_a_taken_name_is_one_error():
    things: Registry[object] = Registry("widget")
    things.register("a", object)
    with pytest.raises(DuplicateNameError, match="widget 'a' is already registered"):
        things.register("a", int)
    assert issubclass(DuplicateNameError, AgentmillError)


def test_an_unknown_name_says_what_was_meant():
    things: Registry[int] = Registry("widget", builtins={"terminus": "json:dumps"})
    with pytest.raises(
        UnknownNameError, match=r"unknown widget 'terminu'; did you mean 'terminus'\? \(known: terminus\)"
    ):
        things.get("terminu")
    with pytest.raises(UnknownNameError, match=r"unknown widget 'zzz' \(known: terminus\)$"):
        things.get("zzz")


def test_builtins_are_imported_on_first_use_and_come_back_after_unregister():
    import json

    things: Registry[object] = Registry("widget", builtins={"dumps": "json:dumps"})
    assert things.loaded() == {}  # listing costs no import
    assert things.get("dumps") is json.dumps
    things.register("other", len)
    things.unregister("dumps")
    things.unregister("other")
    assert things.names() == ["dumps"] and things.get("dumps") is json.dumps


def test_plug_ins_come_from_the_entry_point_group(monkeypatch):
    seen = []

    def fake_entry_points(group):
        seen.append(group)
        return [
            EntryPoint(name="plug", value="json:loads", group=group),
            EntryPoint(name="mine", value="json:JSONDecodeError", group=group),
        ]

    monkeypatch.setattr(registry_module, "entry_points", fake_entry_points)
    things: Registry[object] = Registry("widget", group="agentmill.widgets")
    things.register("mine", len)  # registered in code: metadata does not replace it
    import json

    assert things.get("plug") is json.loads and things.get("mine") is len and seen == ["agentmill.widgets"]


def test_all_reports_a_broken_target_and_keeps_the_rest():
    things: Registry[object] = Registry(
        "widget", builtins={"broken": "agentmill.no_such_module:x", "dumps": "json:dumps"}
    )
    errors = []
    loaded = things.all(on_error=lambda name, target, e: errors.append((name, type(e).__name__)))
    assert list(loaded) == ["dumps"] and errors == [("broken", "ModuleNotFoundError")]


def test_bundled_plug_ins_do_not_need_the_packages_metadata():
    """A source checkout on PYTHONPATH, with no installed entry points, still has every bundled plug-in."""
    code = """
import importlib.metadata as md
md.entry_points = lambda **kw: []
import agentmill.registry as r
r.entry_points = md.entry_points
from agentmill.recipe.source_kinds import source_kinds
from agentmill.view.source import VIEW_SOURCES
from agentmill.verify.judged import JUDGED_STEPS
from agentmill.agents.registry import agent_names
from agentmill.rollout.executor import EXECUTORS
from agentmill.tasks.kinds import kind_names
from agentmill.sandbox.registry import backend_names
from agentmill.recipe.stage import registered
print(source_kinds(), VIEW_SOURCES.names(), JUDGED_STEPS.names(), agent_names(), EXECUTORS.names(),
      kind_names(), backend_names(), 'trace_filters' in registered())
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        "['functions', 'generate', 'grounded', 'harbor', 'repo_bugs', 'stackexchange', 'synth'] ['rollout', 'synth'] ['grounded', 'stackexchange'] "
        "('nop', 'oracle', 'terminus', 'tools') ['local', 'processes', 'ray'] "
        "['tools', 'terminal', 'terminal-bench'] ['bwrap', 'bwrap-overlay'] True"
    )


@pytest.mark.parametrize(
    "module, attr",
    [
        ("agentmill.sandbox.registry", "BACKENDS"),
        ("agentmill.agents.registry", "AGENTS"),
        ("agentmill.tasks.kinds", "KINDS"),
        ("agentmill.rollout.executor", "EXECUTORS"),
        ("agentmill.recipe.stage", "STAGES"),
        ("agentmill.recipe.source_kinds", "SOURCE_KINDS"),
        ("agentmill.view.source", "VIEW_SOURCES"),
        ("agentmill.verify.judged", "JUDGED_STEPS"),
    ],
)
def test_every_extension_point_is_one_registry(module, attr):
    import importlib

    assert isinstance(getattr(importlib.import_module(module), attr), Registry)
