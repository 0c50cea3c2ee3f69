"""Executors on other engines than this process's event loop (the local one is `rollout/executor.py`).

Each module here imports its engine (an optional extra) and registers itself in
`agentmill.rollout.executor.EXECUTORS`; `make_executor(name)` imports it only when it is chosen.
"""

from agentmill.rollout.executor import EXECUTORS, Executor, LocalExecutor, make_executor

__all__ = ["EXECUTORS", "Executor", "LocalExecutor", "make_executor"]
