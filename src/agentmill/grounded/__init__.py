"""Grounded synthesis (GraphForge): O*NET seeds -> workspaces of real files with hidden roles ->
fact-checked evidence graph -> task spec with anchored rubric -> teacher run -> revision ->
judged admission. See docs/grounded.md; `agentmill ground --help` for the commands.

Model-facing parts import their libraries lazily; importing this package is cheap."""

from agentmill.runtime.lazy import lazy_names

# names load on first use: `agentmill --help` imports this package's cli and must stay cheap
_WHERE = {
    name: f"agentmill.grounded.{module}"
    for module, names in {
        "records": [
            "Criterion",
            "Deliverable",
            "Edge",
            "FactNode",
            "Graph",
            "JudgeVerdict",
            "Locator",
            "NegativeCriterion",
            "Seed",
            "Spec",
            "Workspace",
            "WorkspaceFile",
        ],
        "seeds": ["candidate_seeds", "greedy_cover", "select_seeds"],
        "source": ["load_grounded_tasks"],
    }.items()
    for name in names
}
__getattr__, __dir__ = lazy_names(__name__, _WHERE)

__all__ = sorted(_WHERE)
