"""Grounded synthesis (GraphForge): O*NET seeds -> workspaces of real files with hidden roles ->
fact-checked evidence graph -> task spec with anchored rubric -> teacher run -> revision ->
judged admission. See docs/grounded.md; `agentmill ground --help` for the commands.

Model-facing parts import their libraries lazily; importing this package is cheap."""

from agentmill.grounded.records import (Criterion, Deliverable, Edge, FactNode, Graph, JudgeVerdict, Locator,
                                        NegativeCriterion, Seed, Spec, Workspace, WorkspaceFile)
from agentmill.grounded.seeds import candidate_seeds, greedy_cover, select_seeds
from agentmill.grounded.source import load_grounded_tasks

__all__ = ["Criterion", "Deliverable", "Edge", "FactNode", "Graph", "JudgeVerdict", "Locator", "NegativeCriterion", "Seed",
           "Spec", "Workspace", "WorkspaceFile", "candidate_seeds", "greedy_cover", "load_grounded_tasks", "select_seeds"]
