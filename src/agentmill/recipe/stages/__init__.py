"""The recipe's stages, in the order of the flow. Importing this package registers them all.

    sources -> augment -> task_filters/* -> mix -> rollout -> trace_filters -> export
"""

from agentmill.recipe.stages import sources  # noqa: F401  (1) task sources
from agentmill.recipe.stages import augment  # noqa: F401  (2) LLM rewrites that keep the task's meaning
from agentmill.recipe.stages import task_filters  # noqa: F401  (3) task filters, one stage each
from agentmill.recipe.stages import mix  # noqa: F401  (4) top-N sources, budget / N each
from agentmill.recipe.stages import rollout  # noqa: F401  (5) teacher rollouts
from agentmill.recipe.stages import trace_filters  # noqa: F401  (6) trace filters
from agentmill.recipe.stages import export  # noqa: F401  (7) exports
