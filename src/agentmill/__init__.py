"""agentmill: verified, diverse, reproducible training data for agent models.

The public API (docs/api.md) is the names in `__all__`, re-exported here from the modules that
define them. They load lazily, on first use (`agentmill.load_dataset` imports the tasks package
then), so `import agentmill` stays fast and this face imports no part of the package: every module
may import `agentmill` itself without a cycle (`agentmill.runtime.lazy` imports nothing of the package). Anything not listed here is private and may change.
"""

from __future__ import annotations

from agentmill.runtime.lazy import lazy_names

__version__ = "0.1.0"

# public name -> the module that defines it (and the name there, when it differs)
_PUBLIC: dict[str, str] = {
    # tasks and datasets
    "Task": "agentmill.tasks",
    "TaskConfig": "agentmill.tasks",
    "Dataset": "agentmill.tasks",
    "load_task": "agentmill.tasks",
    "load_dataset": "agentmill.tasks",
    "write_task": "agentmill.tasks",
    "sample_dataset_path": "agentmill.tasks",
    "sample_tools_path": "agentmill.tasks",
    # sandboxes
    "Sandbox": "agentmill.sandbox",
    "SandboxSpec": "agentmill.sandbox",
    "Limits": "agentmill.sandbox",
    "ExecResult": "agentmill.sandbox",
    "create_sandbox": "agentmill.sandbox",
    "backend_names": "agentmill.sandbox",
    # agents
    "Agent": "agentmill.agents",
    "AgentResult": "agentmill.agents",
    "make_agent": "agentmill.agents",
    "agent_class": "agentmill.agents",
    "agent_names": "agentmill.agents",
    "register_agent": "agentmill.agents:register",
    # model client
    "ModelClient": "agentmill.models",
    "SamplingParams": "agentmill.models",
    "Prices": "agentmill.models",
    "LocalModelServer": "agentmill.models",
    "EndpointError": "agentmill.models",
    # rollouts
    "RolloutConfig": "agentmill.rollout.config",
    "run_rollout": "agentmill.rollout.runner",
    "run_trial": "agentmill.rollout",
    "TrialResult": "agentmill.rollout",
    "summarize": "agentmill.rollout.status",
    "Outcome": "agentmill.verify.outcome",
    # trajectories and export
    "Trajectory": "agentmill.traces",
    "TraceRecord": "agentmill.traces.records",
    "iter_traces": "agentmill.traces.records",
    "FilterSpec": "agentmill.traces.filters",
    "export_run": "agentmill.traces.export",
    "import_harbor_job": "agentmill.interop.harbor.job_import",
    # recipes
    "Recipe": "agentmill.recipe.schema",
    "load_recipe": "agentmill.recipe.schema",
    "Pipeline": "agentmill.recipe.pipeline",
    "Stage": "agentmill.recipe.stage",
    "register_stage": "agentmill.recipe.stage",
    # errors
    "AgentmillError": "agentmill.errors",
}

__all__ = sorted(_PUBLIC) + ["__version__"]


__getattr__, __dir__ = lazy_names(__name__, _PUBLIC)
