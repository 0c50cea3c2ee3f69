"""Task filters (recipe stage 4): each takes the task set and returns the survivors and a StageReport.

    async def <kind>(tasks: list[TaskEntry], params: dict, ctx: FilterContext)
        -> tuple[list[TaskEntry], StageReport]
"""

from agentmill.recipe.task_filters.askllm import askllm
from agentmill.recipe.task_filters.base import FilterContext
from agentmill.recipe.task_filters.decontaminate import decontaminate
from agentmill.recipe.task_filters.dedupe import dedupe
from agentmill.recipe.task_filters.response_length import response_length
from agentmill.recipe.task_filters.starts import starts

TASK_FILTERS = {
    "response_length": response_length,
    "askllm": askllm,
    "decontaminate": decontaminate,
    "starts": starts,
    "dedupe": dedupe,
}

__all__ = ["FilterContext", "TASK_FILTERS", "askllm", "decontaminate", "dedupe", "response_length", "starts"]
