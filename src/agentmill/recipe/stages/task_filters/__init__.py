"""Task filters (the recipe's third stage): each takes the task set and returns the survivors and a StageReport.

    async def <kind>(tasks: list[TaskEntry], params: dict, ctx: FilterContext)
        -> tuple[list[TaskEntry], StageReport]

A new filter is one module with such a function plus one `register_task_filter` line below;
recipes then name it with `[[task_filters]] kind = "<kind>"`.
"""

from functools import partial

from agentmill.recipe.stages.task_filters import askllm as _askllm
from agentmill.recipe.stages.task_filters import decontaminate as _decontaminate
from agentmill.recipe.stages.task_filters import dedupe as _dedupe
from agentmill.recipe.stages.task_filters import response_length as _response_length
from agentmill.recipe.stages.task_filters import starts as _starts
from agentmill.recipe.stages.task_filters.askllm import askllm
from agentmill.recipe.stages.task_filters.base import FilterContext, parse_params
from agentmill.recipe.stages.task_filters.decontaminate import decontaminate
from agentmill.recipe.stages.task_filters.dedupe import dedupe
from agentmill.recipe.stages.task_filters.response_length import response_length
from agentmill.recipe.stages.task_filters.stage import TaskFilterStage, register_task_filter
from agentmill.recipe.stages.task_filters.starts import starts


def _plain(module):
    return partial(parse_params, module.KIND, module.Params)


register_task_filter("response_length", response_length, _response_length._params, needs_model=True)
register_task_filter("askllm", askllm, _askllm.check_params, needs_model=True)
register_task_filter("decontaminate", decontaminate, _plain(_decontaminate), path_params=("benchmarks",))
register_task_filter("starts", starts, _plain(_starts))
register_task_filter("dedupe", dedupe, _plain(_dedupe))

TASK_FILTERS = {
    "response_length": response_length,
    "askllm": askllm,
    "decontaminate": decontaminate,
    "starts": starts,
    "dedupe": dedupe,
}

__all__ = [
    "FilterContext",
    "TASK_FILTERS",
    "TaskFilterStage",
    "askllm",
    "decontaminate",
    "dedupe",
    "register_task_filter",
    "response_length",
    "starts",
]
