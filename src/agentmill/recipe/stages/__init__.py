"""The recipe's stages, in the order of the flow. Importing this package registers them all.

sources -> augment -> task_filters/* -> mix -> rollout -> trace_filters -> export
"""

from agentmill.recipe.stages import (
    augment,  # noqa: F401  (2) LLM rewrites that keep the task's meaning
    export,  # noqa: F401  (7) exports
    mix,  # noqa: F401  (4) top-N sources, budget / N each
    rollout,  # noqa: F401  (5) teacher rollouts
    sources,  # noqa: F401  (1) task sources
    task_filters,  # noqa: F401  (3) task filters, one stage each
    trace_filters,  # noqa: F401  (6) trace filters
)
