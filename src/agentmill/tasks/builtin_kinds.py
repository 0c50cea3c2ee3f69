"""The bundled task kinds: tool tasks, then the Harbor and Terminal-Bench fallbacks."""

from __future__ import annotations

from agentmill.tasks import io, terminal_bench, tool_task
from agentmill.tasks.kinds import TaskKind, declared_kind, register_kind

register_kind(
    TaskKind(
        "tools",
        lambda root: declared_kind(root) == "tools",
        tool_task.load_tool_task,
        behaviour="agentmill.tools.task_kind:TOOLS",
    )
)
register_kind(
    TaskKind(
        "terminal",
        lambda root: (root / "task.toml").exists() or (root / "instruction.md").exists(),
        io.load_harbor,
        fallback=True,
    )
)
register_kind(
    TaskKind(
        "terminal-bench", lambda root: (root / "task.yaml").exists(), terminal_bench.load_terminal_bench, fallback=True
    )
)
