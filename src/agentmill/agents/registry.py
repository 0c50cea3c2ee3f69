"""The agent registry: every agent is found here by name.

Adding an agent is one module plus one registration: write a class with the `Agent` class
attributes (see `agents/base.py`) and either list it in `BUILTIN` below (bundled agents) or
decorate it with `@register` (agents defined elsewhere; installed packages may also declare an
`agentmill.agents` entry point `name = "module:Class"`). Everything else — the CLI's choices,
whether a model is needed, which task kinds it runs, how its trajectories render for training —
is read from the class itself.

Bundled agents are imported on first lookup, so listing names costs no imports.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, cast

from agentmill.errors import AgentmillError
from agentmill.registry import Registry, UnknownNameError

if TYPE_CHECKING:  # listing names imports no agent code
    from agentmill.agents.base import Agent

# name -> "module:Class", imported when first asked for
BUILTIN: dict[str, str] = {
    "oracle": "agentmill.agents.oracle:OracleAgent",
    "nop": "agentmill.agents.nop:NopAgent",
    "terminus": "agentmill.agents.terminus.agent:TerminusAgent",
    "tools": "agentmill.agents.tools.agent:ToolsAgent",
}
ENTRY_POINT_GROUP = "agentmill.agents"
RENDERINGS = ("text", "tool_calls")

UnknownAgentError = UnknownNameError  # the registries' one error for a name nobody registered


def _checked(name: str, cls: type[Agent]) -> None:
    _validate(cls)
    if cls.name != name:
        raise AgentmillError(
            f"{cls.__module__}.{cls.__qualname__}: registered as '{name}' but its class says name = {cls.name!r}"
        )


AGENTS: Registry[type[Agent]] = Registry("agent", group=ENTRY_POINT_GROUP, builtins=BUILTIN, check=_checked)


def register(cls: type) -> type:
    """Register an agent class (usable as a decorator). A second class under the same name is refused."""
    _validate(cls)
    agent = cast("type[Agent]", cls)  # _validate checked the class attributes an Agent declares
    return AGENTS.register(agent.name, agent)


def unregister(name: str) -> None:
    """Forget a registered agent (tests register throwaway agents)."""
    AGENTS.unregister(name)


def agent_names() -> tuple[str, ...]:
    return tuple(AGENTS.names())


def agent_class(name: str) -> type[Agent]:
    return AGENTS.get(name)


def model_agent_names() -> tuple[str, ...]:
    """Agents that need a model (--model)."""
    return tuple(n for n in agent_names() if agent_class(n).needs_model)


def supports(name: str, task: Any) -> bool:
    """Whether the agent runs tasks of this task's kind (tasks without a kind are terminal tasks)."""
    return task_kind(task) in agent_class(name).task_kinds


def task_kind(task: Any) -> str:
    return getattr(task, "kind", None) or "terminal"


def split_by_support(name: str, tasks: list) -> tuple[list, list[str]]:
    """(the tasks this agent works on, one line per task it does not, naming agents that do)."""
    kept, skipped = [], []
    for task in tasks:
        if supports(name, task):
            kept.append(task)
            continue
        kind = task_kind(task)
        others = [n for n in agent_names() if kind in agent_class(n).task_kinds]
        skipped.append(
            f"{getattr(task, 'path', task)}: a '{kind}' task; the {name} agent works on "
            f"{', '.join(sorted(agent_class(name).task_kinds))} tasks (for '{kind}' tasks: {', '.join(others) or 'none'})"
        )
    return kept, skipped


def make_agent(name: str, *, client: Any = None, **settings: Any) -> Any:
    """Build an agent by name. A model agent gets the client as its first argument.

    `settings` are the run's agent settings (max_turns, max_context, ...): each agent takes the
    ones its constructor names and ignores the rest, so one run configuration serves every agent.
    """
    cls = agent_class(name)
    if cls.needs_model and client is None:
        raise AgentmillError(f"the {name} agent needs a model (--model)")
    init = cast(Any, cls).__init__  # the class's own (mypy calls __init__ unsound on an instance; this is a class)
    params = {} if init is object.__init__ else inspect.signature(init).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs = {k: v for k, v in settings.items() if takes_any or k in params}
    make: Any = cls  # constructors differ by agent: a model agent's takes the client first
    return make(client, **kwargs) if cls.needs_model else make(**kwargs)


def _validate(cls: type) -> None:
    where = f"{cls.__module__}.{cls.__qualname__}"
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name or not name.replace("-", "").replace("_", "").isalnum():
        raise AgentmillError(f"{where}: an agent needs a `name` (letters, digits, - and _), got {name!r}")
    if not isinstance(getattr(cls, "version", None), str):
        raise AgentmillError(f"{where}: `version` must be a string")
    for flag in ("needs_solution", "needs_model"):
        if not isinstance(getattr(cls, flag, None), bool):
            raise AgentmillError(f"{where}: `{flag}` must be True or False")
    kinds = getattr(cls, "task_kinds", None)
    if not isinstance(kinds, frozenset) or not kinds or not all(isinstance(k, str) for k in kinds):
        raise AgentmillError(f"{where}: `task_kinds` must be a non-empty frozenset of task kind names")
    if getattr(cls, "rendering", None) not in RENDERINGS:
        raise AgentmillError(f"{where}: `rendering` must be one of {', '.join(RENDERINGS)}")
    if not callable(getattr(cls, "run", None)):
        raise AgentmillError(f"{where}: an agent needs an async `run(task, sandbox, result)`")
