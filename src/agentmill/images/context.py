"""The Docker build context, as the task's harness uses it.

Harbor builds `environment/Dockerfile` with `environment/` as the context (its docker environment
passes the environment folder as CONTEXT_DIR to `docker compose build`); legacy Terminal-Bench
builds the task root's Dockerfile with the task root as the context (its docker-compose.yaml sits
there). A COPY source outside the context fails under the harness too, and the error says so.
"""

from __future__ import annotations

from pathlib import Path

from agentmill.tasks.model import Task


def build_context(task: Task) -> Path | None:
    """None for a task without an environment folder (and so without a Dockerfile to build)."""
    return task.environment_dir


def missing_source(task: Task, src: str, where: str, keyword: str) -> str:
    """The error for a COPY/ADD source not in the context, naming where it is when it is elsewhere."""
    context = build_context(task)
    message = f"{where}: {keyword} source '{src}' not found in the build context {context}"
    root = task.path
    if (
        root is not None
        and context is not None
        and root.resolve() != context.resolve()
        and any(root.glob(src))
        and not src.startswith("/")
    ):
        message += (
            f"; it is at the task root ({root / src}). Harbor builds with environment/ as the context, "
            "so this Dockerfile fails there too: move the file into environment/"
        )
    return message
