"""`agentmill tools serve`: a gym or a tool task's tools over MCP (streamable HTTP, official `mcp` SDK).

The MCP server is a thin proxy on loopback: every tool call goes into a bubblewrap sandbox that
holds the databases, exactly as in a trial (tools are task code, never run in host Python). With
`--db FILE` the first gym's database starts from FILE (when it exists) and is copied back to it
after every call that wrote, so an outside harness keeps its state across restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from pathlib import Path

from agentmill.errors import AgentmillError
from agentmill.tasks import load_task
from agentmill.tasks.model import Task
from agentmill.tasks.tool_task import bundled_gym_names
from agentmill.tools.sandboxed import task_sandbox
from agentmill.tools.session import ToolSession, open_tool_session
from agentmill.tools.state import gym_db, prepare_tool_state, require_spec


def task_for(target: str, workdir: Path) -> Task:
    """A task folder, or a bundled gym's name (served as a task with no verifiers)."""
    path = Path(target)
    if path.is_dir():
        return load_task(path)
    if target not in bundled_gym_names():
        raise AgentmillError(
            f"{target}: not a task folder nor a bundled gym ({', '.join(bundled_gym_names()) or 'none'})"
        )
    root = workdir / target
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "instruction.md").write_text(f"Serve the {target} gym.\n")
    (root / "task.toml").write_text(f'[environment]\nkind = "tools"\ngyms = ["{target}"]\n')
    (root / "tests" / "verifiers.json").write_text("[]\n")
    return load_task(root)


def build_app(session: ToolSession, *, on_write=None):
    """A Starlette app serving `session`'s tools at /mcp. `on_write()` runs after a call that changed state."""
    import mcp.types as types
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Mount

    server: Server = Server("agentmill-tools")
    tools = [
        types.Tool(name=s["name"], description=s["description"], inputSchema=s["parameters"]) for s in session.schemas
    ]

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return tools

    # our own validation runs in the sandbox and answers in the words the model sees in trials
    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict) -> types.CallToolResult:
        result = await session.call(name, arguments or {})
        if result.changes and on_write is not None:
            await on_write()
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.content)], isError=result.is_error
        )

    manager = StreamableHTTPSessionManager(app=server, stateless=False)

    async def handle(scope, receive, send):
        await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        async with manager.run():
            yield

    return Starlette(routes=[Mount("/mcp", app=handle)], lifespan=lifespan)


async def serve(target: str, *, port: int, host: str = "127.0.0.1", db: Path | None = None, ready=None) -> None:
    import uvicorn

    with tempfile.TemporaryDirectory(prefix="agentmill-serve-") as tmp:
        task = task_for(target, Path(tmp))
        first = require_spec(task).gyms[0].name
        async with task_sandbox(task) as sb:
            await prepare_tool_state(task, sb)
            inside = sb.spec.rootfs / gym_db(first).lstrip("/")
            if db is not None and db.is_file():
                await sb.write_file(gym_db(first), db.read_bytes())

            async def save() -> None:
                if db is not None:
                    await asyncio.to_thread(shutil.copyfile, inside, db)

            await save()
            async with open_tool_session(task, sb) as session:
                app = build_app(session, on_write=save)
                config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
                server = uvicorn.Server(config)
                if ready is not None:
                    ready(task, session)
                await server.serve()
            await save()
