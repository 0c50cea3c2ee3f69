"""A tool task's state inside its sandbox: gym files, the tool host, one database per gym.

Everything lives under TOOLS_ROOT in the trial's own root filesystem, so each trial has its own
databases and the verifier's fresh sandbox (over the same rootfs) sees the final state. The
databases are built *inside* the sandbox by the tool host (`init`): schema and seed SQL are task
input too, and SQL can write files (ATTACH), so none of it runs in host Python.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import uuid
from collections.abc import Set as AbstractSet
from pathlib import Path

from agentmill.errors import AgentmillError, SandboxError
from agentmill.runtime.paths import cache_dir
from agentmill.sandbox.protocol import Sandbox
from agentmill.tasks.model import Task
from agentmill.tasks.tool_spec import GymRef, ToolSpec

TOOLS_ROOT = "/var/lib/agentmill/tools"
HOST_SCRIPT = f"{TOOLS_ROOT}/runtime/toolhost.py"
SPEC_PATH = f"{TOOLS_ROOT}/spec.json"
READY = f"{TOOLS_ROOT}/.ready"
BUNDLE = f"{TOOLS_ROOT}/bundle.json"
BASE_DIR = f"{TOOLS_ROOT}/base"  # each gym's database before the task's seed
REPLIES = "/tmp/agentmill-replies"  # the sandbox's private tmpfs
PYTHON = ["/usr/bin/python3", "-I", "-S"]  # the sandbox's (host /usr, read-only) stdlib Python
_SKIP = {"__pycache__", ".DS_Store"}
_INIT_TIMEOUT = 300.0


class ToolEnvError(AgentmillError):
    """The tool environment could not be set up (a broken gym, seed or tools.py): the task's fault."""


def toolhost_source() -> bytes:
    return (Path(__file__).parent / "guest" / "toolhost.py").read_bytes()


def gym_db(name: str) -> str:
    return f"{TOOLS_ROOT}/db/{name}.sqlite"


def sandbox_spec(spec: ToolSpec, *, root: str = TOOLS_ROOT) -> dict:
    """The JSON the tool host reads: gyms (inside paths), seeds, the per-call timeout."""
    return {
        "gyms": [
            {
                "name": g.name,
                "dir": f"{root}/gyms/{g.name}",
                "db": f"{root}/db/{g.name}.sqlite",
                "base": f"{root}/base/{g.name}.sqlite",
            }
            for g in spec.gyms
        ],
        "seeds": [f"{root}/seeds/{i}.sql" for i, _ in enumerate(spec.seeds)],
        "labels": {f"{root}/seeds/{i}.sql": f"{p.parent.name}/{p.name}" for i, p in enumerate(spec.seeds)},
        "timeout": spec.tool_timeout_sec,
        # the tool host's own record of every call (name, error, rows written): what tool_execution
        # verifiers count, written beside the databases where only the tool host can write
        "call_log": f"{root}/calls.jsonl",
    }


def _files(spec: ToolSpec, prebuilt: AbstractSet[str] = frozenset(), *, root: str = TOOLS_ROOT) -> dict[str, bytes]:
    """Everything the sandbox needs; a gym whose base database is cached needs no schema or seed SQL."""
    out = {
        f"{root}/runtime/toolhost.py": toolhost_source(),
        f"{root}/spec.json": json.dumps(sandbox_spec(spec, root=root), indent=1).encode(),
    }
    for gym in spec.gyms:
        for path in sorted(gym.path.rglob("*")):
            rel = path.relative_to(gym.path)
            if gym.name in prebuilt and rel.as_posix() in ("schema.sql", "seed.sql"):
                continue
            if path.is_file() and not _SKIP.intersection(rel.parts):
                out[f"{root}/gyms/{gym.name}/{path.relative_to(gym.path).as_posix()}"] = path.read_bytes()
    for i, seed in enumerate(spec.seeds):
        out[f"{root}/seeds/{i}.sql"] = seed.read_bytes()
    return out


def require_spec(task: Task) -> ToolSpec:
    if task.tool_spec is None:
        raise ToolEnvError(f'{task.path}: not a tools task (task.toml needs [environment] kind = "tools")')
    return task.tool_spec


async def prepare_tool_state(
    task: Task, sandbox: Sandbox, *, force: bool = False, root: str = TOOLS_ROOT
) -> list[str] | None:
    """Stage the gyms and build the databases in the sandbox (under `root`). Idempotent unless `force`.

    Returns the gyms whose database was built from SQL (the rest came from the base cache), or None
    when the sandbox was prepared already. A trial's agent sandbox hands this to its tool host's
    sandbox (`tool_host_of`): the databases never live where the agent can write.

    Two writes (the tool host, one bundle of every other file) and one exec, whatever the gyms hold.
    """
    sandbox = tool_host_of(sandbox)
    spec = require_spec(task)
    ready, host_script = f"{root}/.ready", f"{root}/runtime/toolhost.py"
    if not force:
        try:  # one read through the guest, no process: the trial usually prepared it already
            await sandbox.read_file(ready, max_bytes=1)
            return None
        except FileNotFoundError:
            pass
    cached = {g.name: path for g in spec.gyms if (path := _base_cache(g)).is_file()}
    files = _files(spec, prebuilt=set(cached), root=root)
    for name, path in cached.items():  # a gym's base database, built once (in a sandbox) per gym content
        files[f"{root}/base/{name}.sqlite"] = path.read_bytes()
    bundle = {path: base64.b64encode(data).decode() for path, data in files.items() if path != host_script}
    await sandbox.write_file(host_script, files[host_script])
    await sandbox.write_file(f"{root}/bundle.json", json.dumps(bundle).encode())
    try:
        reply = await guest_json(
            sandbox,
            [
                *PYTHON,
                host_script,
                "prepare",
                f"{root}/bundle.json",
                f"{root}/spec.json",
                ready,
                *(["--force"] if force else []),
            ],
            timeout=_INIT_TIMEOUT,
            what="building the gym databases",
        )
    except ToolEnvError as e:
        raise ToolEnvError(f"{task.path}: {e}") from None
    for gym in spec.gyms:
        if gym.name in reply.get("built", []) and gym.name not in cached:
            await _keep_base(sandbox, gym, root)
    return list(reply.get("built", []))


def tool_host_of(sandbox: Sandbox) -> Sandbox:
    """The sandbox the tools and their databases live in: a trial's own tool-host sandbox
    (rollout/trial.py sets `tool_host` on the agent's sandbox), else the sandbox itself."""
    return getattr(sandbox, "tool_host", None) or sandbox


def _base_key(gym: GymRef) -> str:
    parts = [hashlib.sha256(toolhost_source()).hexdigest(), gym.name]
    for name in ("schema.sql", "seed.sql"):
        path = gym.path / name
        parts.append(hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "-")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def _base_cache(gym: GymRef) -> Path:
    return cache_dir() / "gym-db" / f"{gym.name}-{_base_key(gym)}.sqlite"


async def _keep_base(sandbox: Sandbox, gym: GymRef, root: str = TOOLS_ROOT) -> None:
    """Keep a freshly built base database for the next trials of any task on this gym."""
    try:
        data = await sandbox.read_file(f"{root}/base/{gym.name}.sqlite", max_bytes=1 << 30)
    except (FileNotFoundError, SandboxError):
        return
    dest = _base_cache(gym)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f"{dest.name}.tmp{os.getpid()}-{uuid.uuid4().hex[:6]}")
    tmp.write_bytes(data)
    tmp.replace(dest)


async def tool_schemas(task: Task, sandbox: Sandbox) -> list[dict]:
    """Every tool of the task's gyms, introspected inside the sandbox (MCP-style: name, description, parameters)."""
    sandbox = tool_host_of(sandbox)
    try:
        reply = await guest_json(
            sandbox, [*PYTHON, HOST_SCRIPT, "schema", SPEC_PATH], timeout=60, what="loading the tools"
        )
    except ToolEnvError as e:
        raise ToolEnvError(f"{task.path}: {e}") from None
    return reply["tools"]


async def guest_json(
    sandbox: Sandbox, argv: list[str], *, stdin: dict | None = None, timeout: float, what: str
) -> dict:
    """Run a guest script that writes its JSON reply to a file, and read that file back through the guest
    (a reply on stdout could be cut short when the guest stops waiting for the pipes)."""
    out = f"{REPLIES}/reply-{uuid.uuid4().hex[:8]}.json"
    run = await sandbox.exec(
        [*argv, "--out", out], timeout=timeout, stdin=json.dumps(stdin).encode() if stdin is not None else None
    )
    if run.timed_out:
        raise ToolEnvError(f"{what} exceeded {timeout:g}s")
    try:
        reply = json.loads(await sandbox.read_file(out, max_bytes=256 << 20))
    except (FileNotFoundError, json.JSONDecodeError):
        raise ToolEnvError(f"{what} failed (exit {run.returncode}): {run.output.strip()[-400:]}") from None
    with contextlib.suppress(SandboxError):
        await sandbox.exec(["rm", "-f", out], timeout=30)
    if "error" in reply:
        raise ToolEnvError(f"{what} failed: {reply['error']}")
    return reply
