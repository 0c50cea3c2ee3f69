"""The in-sandbox tool host: stdlib only, run by the sandbox's python3 (`python3 -I -S`).

Tools are task code, so they only ever run here, inside the trial's sandbox. Modes:

  toolhost.py init  SPEC.json            build every gym's database (schema, gym seed, task seed)
  toolhost.py serve SPEC.json SOCKET     serve list/call requests, one JSON line per connection
  toolhost.py once  SPEC.json            one request from stdin (for sandboxes without a socket dir)
  toolhost.py query SPEC.json            read-only SQL for verifiers: {"queries": [...]} on stdin

SPEC.json: {"gyms": [{"name", "dir", "db"}], "seeds": [[gym, path], ...], "timeout": seconds}.
Every call runs in a forked child with its own connection: a tool that loops is killed at the
timeout, one that raises or crashes leaves no partial write behind (the transaction is not
committed), and the host gets an error result either way.
"""

import importlib.util
import inspect
import json
import os
import re
import select
import signal
import socket
import sqlite3
import sys
import time
import typing

MAX_RESULT = 1 << 20  # bytes of a tool's JSON result kept; more is an error result
_PRIMITIVES = {str: "string", int: "integer", float: "number", bool: "boolean"}


class ContractError(Exception):
    """tools.py breaks the tool contract; the message names the function and parameter."""


# -- the tool contract: functions -> JSON schemas --------------------------------------------------


def type_schema(hint, where):
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint in _PRIMITIVES:
        return {"type": _PRIMITIVES[hint]}
    if origin is typing.Literal:
        kinds = {_PRIMITIVES.get(type(a)) for a in args}
        if None in kinds or len(kinds) != 1:
            raise ContractError(f"{where}: Literal values must share one of str/int/float/bool")
        return {"type": kinds.pop(), "enum": list(args)}
    if origin in (list, typing.List) or hint is list:
        if not args:
            raise ContractError(f"{where}: list needs an item type, e.g. list[str]")
        return {"type": "array", "items": type_schema(args[0], where)}
    if origin in (dict, typing.Dict) or hint is dict:
        if args and args[0] is not str:
            raise ContractError(f"{where}: dict keys must be str")
        out = {"type": "object"}
        if args:
            out["additionalProperties"] = type_schema(args[1], where)
        return out
    if origin is typing.Union or type(hint).__name__ == "UnionType":
        members = [a for a in args if a is not type(None)]
        if len(members) != 1 or len(args) != 2:
            raise ContractError(f"{where}: only Optional[X] unions are supported, got {hint!r}")
        inner = type_schema(members[0], where)
        if set(inner) == {"type"}:
            return {"type": [inner["type"], "null"]}
        return {"anyOf": [inner, {"type": "null"}]}
    raise ContractError(f"{where}: unsupported type hint {hint!r} (use str, int, float, bool, list[...], "
                        "dict[str, ...], Literal[...], Optional[...])")


def _doc_parts(fn):
    doc = inspect.getdoc(fn) or ""
    paragraphs = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)
    description = " ".join(paragraphs[0].split()) if paragraphs[0] else ""
    params, current = {}, None
    in_args = False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped.lower() in ("args:", "arguments:", "parameters:"):
            in_args = True
            continue
        if in_args:
            m = re.match(r"^(\w+)\s*(\([^)]*\))?\s*:\s*(.*)$", stripped)
            if m and line.startswith((" ", "\t")):
                current = m.group(1)
                params[current] = m.group(3)
            elif stripped and current and line.startswith((" ", "\t")):
                params[current] += " " + stripped
            elif not stripped:
                continue
            else:
                in_args = False
    return description, params


def tool_schema(name, fn, where):
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    if not params or params[0].name != "db":
        raise ContractError(f"{where}: first parameter must be 'db'")
    try:
        hints = typing.get_type_hints(fn, include_extras=False)
    except Exception as e:
        raise ContractError(f"{where}: cannot resolve type hints ({type(e).__name__}: {e})")
    description, param_docs = _doc_parts(fn)
    if not description:
        raise ContractError(f"{where}: a tool needs a docstring (its first paragraph is the description)")
    props, required = {}, []
    for p in params[1:]:
        pw = f"{where}: parameter '{p.name}'"
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            raise ContractError(f"{pw}: *args, **kwargs and positional-only parameters are not allowed")
        if p.name not in hints:
            raise ContractError(f"{pw}: has no type hint")
        schema = type_schema(hints[p.name], pw)
        if p.name in param_docs:
            schema["description"] = param_docs[p.name]
        if p.default is inspect.Parameter.empty:
            required.append(p.name)
        else:
            try:
                json.dumps(p.default)
            except (TypeError, ValueError):
                raise ContractError(f"{pw}: default is not JSON-serialisable")
            schema["default"] = p.default
        props[p.name] = schema
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": props, "required": required,
                           "additionalProperties": False}}


def load_gym_tools(gym):
    """{tool name: (function, schema)} for one gym's tools.py (absent file: no tools)."""
    path = os.path.join(gym["dir"], "tools.py")
    if not os.path.isfile(path):
        return {}
    modname = "gym_" + re.sub(r"\W", "_", gym["name"])
    if gym["dir"] not in sys.path:
        sys.path.insert(0, gym["dir"])  # tools.py may import helper modules beside it
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    spec.loader.exec_module(module)
    tools = {}
    for name, fn in vars(module).items():
        if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != modname:
            continue
        params = list(inspect.signature(fn).parameters)
        if not params or params[0] != "db":
            continue  # a helper, not a tool
        tools[name] = (fn, tool_schema(name, fn, f"{gym['name']}/tools.py: {name}"))
    return tools


def load_all(spec):
    tools = {}
    for gym in spec["gyms"]:
        for name, (fn, schema) in load_gym_tools(gym).items():
            if name in tools:
                raise ContractError(f"tool '{name}' is defined by two gyms ({tools[name][2]} and {gym['name']})")
            tools[name] = (fn, schema, gym["name"])
    return tools


# -- argument validation (the subset of JSON schema the contract produces) -------------------------


def _type_ok(value, kind):
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return False


def validate(value, schema, path):
    if "anyOf" in schema:
        errors = [validate(value, s, path) for s in schema["anyOf"]]
        return None if any(e is None for e in errors) else errors[0]
    kinds = schema.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if not any(_type_ok(value, k) for k in kinds):
            return f"{path}: expected {' or '.join(kinds)}, got {type(value).__name__} {json.dumps(value)[:60]}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path}: must be one of {json.dumps(schema['enum'])}, got {json.dumps(value)[:60]}"
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            err = validate(item, schema["items"], f"{path}[{i}]")
            if err:
                return err
    if isinstance(value, dict) and schema.get("type") == "object":
        props = schema.get("properties", {})
        for req in schema.get("required", []):
            if req not in value:
                return f"{path}: missing required argument '{req}'"
        for key, item in value.items():
            if key in props:
                err = validate(item, props[key], f"{path}.{key}" if path else key)
            elif isinstance(schema.get("additionalProperties"), dict):
                err = validate(item, schema["additionalProperties"], f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                err = f"unknown argument '{key}' (expected: {', '.join(props) or 'none'})"
            else:
                err = None
            if err:
                return err
    return None


# -- databases -------------------------------------------------------------------------------------


def connect(path, *, readonly=False):
    if readonly:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        db.execute("PRAGMA query_only = ON")
    else:
        db = sqlite3.connect(path, timeout=5)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA foreign_keys = ON")
    return db


def init(spec, *, use_base=False):
    """Each gym's database from its schema and seed (or from its cached base copy), then the task's seeds."""
    import shutil

    built = []
    for gym in spec["gyms"]:
        os.makedirs(os.path.dirname(gym["db"]), exist_ok=True)
        if os.path.exists(gym["db"]):
            os.unlink(gym["db"])
        base = gym.get("base")
        if use_base and base and os.path.isfile(base):
            shutil.copyfile(base, gym["db"])
            continue
        db = sqlite3.connect(gym["db"])
        for part in ("schema.sql", "seed.sql"):
            path = os.path.join(gym["dir"], part)
            if os.path.isfile(path):
                _script(db, path, f"gym '{gym['name']}': {part}")
        db.close()
        if base:  # the host may keep it for the next trials
            os.makedirs(os.path.dirname(base), exist_ok=True)
            shutil.copyfile(gym["db"], base)
        built.append(gym["name"])
    for path in spec.get("seeds", []):
        # the task's seed runs on the first gym with the others attached under their names, so
        # one seed.sql can set up a cross-gym task (unqualified names resolve in gym order)
        db = sqlite3.connect(spec["gyms"][0]["db"])
        _attach_others(db, spec, spec["gyms"][0]["name"], readonly=False)
        _script(db, path, spec.get("labels", {}).get(path, path))
        db.close()
    return {"gyms": [g["name"] for g in spec["gyms"]], "built": built}


def _attach_others(db, spec, main, *, readonly):
    for gym in spec["gyms"]:
        if gym["name"] != main and re.fullmatch(r"[A-Za-z_]\w*", gym["name"]):
            target = f"file:{gym['db']}?mode=ro" if readonly else gym["db"]
            db.execute(f"ATTACH DATABASE ? AS {gym['name']}", (target,))


def _script(db, path, label):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        db.executescript(text)
        db.commit()
    except sqlite3.Error as e:
        raise RuntimeError(f"{label}: {e}")


# -- calls -----------------------------------------------------------------------------------------


def _jsonable(value):
    if isinstance(value, sqlite3.Row):
        return {k: value[k] for k in value.keys()}
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def _run_child(fn, db_path, arguments, wfd):
    """In the forked child: run the tool, commit on success, write one JSON reply and exit."""
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)  # a tool's print() must not reach anything
        os.dup2(devnull, 2)
        db = connect(db_path)
        try:
            value = fn(db, **arguments)
            changes = db.total_changes  # rows written: replay finds the calls that changed state
            try:
                text = value if isinstance(value, str) else json.dumps(value, default=_jsonable, ensure_ascii=False)
            except (TypeError, ValueError) as e:
                db.rollback()
                reply = {"is_error": True, "content": f"tool returned a value that is not JSON-serialisable: {e}"}
            else:
                db.commit()
                reply = {"is_error": False, "content": text, "changes": changes}
        except BaseException as e:  # noqa: BLE001 - the model sees every failure as an error result
            db.rollback()
            message = str(e) or type(e).__name__
            reply = {"is_error": True, "content": f"{type(e).__name__}: {message}"}
        finally:
            db.close()
        data = json.dumps(reply).encode()
        if len(data) > MAX_RESULT:
            data = json.dumps({"is_error": True, "content": f"tool result too large ({len(data)} bytes)"}).encode()
        os.write(wfd, data)
    except BaseException as e:  # noqa: BLE001
        try:
            os.write(wfd, json.dumps({"is_error": True, "content": f"tool host: {type(e).__name__}: {e}"}).encode())
        except BaseException:  # noqa: BLE001
            pass
    os._exit(0)


def call(tools, spec, req):
    name, arguments = req.get("name"), req.get("arguments")
    if name not in tools:
        known = ", ".join(sorted(tools))
        return {"is_error": True, "content": f"unknown tool '{name}'. Available tools: {known}"}
    if not isinstance(arguments, dict):
        return {"is_error": True, "content": f"arguments of '{name}' must be a JSON object"}
    fn, schema, gym = tools[name]
    err = validate(arguments, schema["parameters"], "")
    if err:
        return {"is_error": True, "content": f"invalid arguments for '{name}': {err}"}
    db_path = next(g["db"] for g in spec["gyms"] if g["name"] == gym)
    timeout = float(req.get("timeout") or spec.get("timeout") or 30)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        os.setpgid(0, 0)  # its own group: whatever the tool starts is killed with it
        _run_child(fn, db_path, arguments, wfd)
    os.close(wfd)
    chunks, deadline, timed_out, exited = [], time.monotonic() + timeout, False, False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([rfd], [], [], min(left, 0.05))
            if ready:
                chunk = os.read(rfd, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
            elif not exited and os.waitpid(pid, os.WNOHANG)[0] == pid:
                # the child is gone but something it started holds the pipe: take what is there
                exited = True
                deadline = min(deadline, time.monotonic() + 0.2)
    finally:
        os.close(rfd)
        try:
            os.killpg(pid, signal.SIGKILL)  # a loop at the timeout, or processes the tool left behind
        except (ProcessLookupError, PermissionError):
            pass
        if not exited:
            os.waitpid(pid, 0)
    if timed_out and not exited:
        return {"is_error": True, "content": f"tool '{name}' timed out after {timeout:g}s and was stopped"}
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        return {"is_error": True, "content": f"tool '{name}' crashed without a result"}


def log_call(spec, req, reply):
    """One line per call the agent made (name, error or not, rows written), appended by the tool host
    itself: tool_execution verifiers count these, never what an agent says it called."""
    path = spec.get("call_log")
    if not path:
        return
    line = {"name": str(req.get("name"))[:200], "is_error": bool(reply.get("is_error")),
            "changes": int(reply.get("changes") or 0)}
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


def handle(tools, spec, req):
    op = req.get("op")
    if op == "list":
        return {"tools": [schema for _, schema, _ in tools.values()],
                "gyms": {n: g for n, (_, _, g) in tools.items()}}
    if op == "call":
        reply = call(tools, spec, req)
        log_call(spec, req, reply)
        return reply
    if op == "ping":
        return {"pid": os.getpid()}
    return {"is_error": True, "content": f"unknown op {op!r}"}


# -- verifier queries --------------------------------------------------------------------------------


def query(spec, req):
    """Run each query read-only against its gym's database; rows as lists of objects."""
    dbs = {g["name"]: g["db"] for g in spec["gyms"]}
    default = spec["gyms"][0]["name"] if spec["gyms"] else None
    out = []
    for q in req["queries"]:
        gym = q.get("gym") or default
        if gym not in dbs:
            out.append({"error": f"unknown gym '{gym}' (this task uses: {', '.join(dbs)})"})
            continue
        try:
            db = connect(dbs[gym], readonly=True)
            try:
                # the other gyms attached read-only, so cross-gym checks can name them (`mail.messages`)
                _attach_others(db, spec, gym, readonly=True)
                cur = db.execute(q["sql"])
                cols = [d[0] for d in cur.description or []]
                rows = [dict(zip(cols, r)) for r in cur.fetchmany(10001)]
            finally:
                db.close()
            out.append({"rows": rows[:10000], "truncated": len(rows) > 10000})
        except Exception as e:  # noqa: BLE001
            out.append({"error": f"{type(e).__name__}: {e}"})
    return {"results": out}


def state_hash(spec):
    import hashlib

    h = hashlib.sha256()
    for gym in spec["gyms"]:
        db = connect(gym["db"], readonly=True)
        try:
            names = [r[0] for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
            for name in names:
                rows = sorted(repr(tuple(r)) for r in db.execute(f'SELECT * FROM "{name}"'))
                h.update(f"{gym['name']}.{name}:{len(rows)}\n".encode())
                for row in rows:
                    h.update(row.encode() + b"\n")
        finally:
            db.close()
    return h.hexdigest()


# -- entry points --------------------------------------------------------------------------------------


def _read_line(conn):
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    return data


def prepare(bundle_path, spec_path, ready, force):
    """Unpack the staged files (one bundle: one write from the host) and build the databases, once."""
    import base64

    if os.path.exists(ready) and not force:
        return {"skipped": True}
    with open(bundle_path, encoding="utf-8") as f:
        bundle = json.load(f)
    for path, data in bundle.items():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))
    os.unlink(bundle_path)
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    reply = init(spec, use_base=True)
    reply["tools"] = len(load_all(spec))  # a tools.py that breaks the contract fails here, before any agent
    import shutil

    for gym in spec["gyms"]:  # the untouched state, kept for the verifier's 'nothing else changed'
        untouched = os.path.join(os.path.dirname(os.path.dirname(gym["db"])), "untouched", gym["name"] + ".sqlite")
        os.makedirs(os.path.dirname(untouched), exist_ok=True)
        shutil.copyfile(gym["db"], untouched)
    open(ready, "w").close()
    return reply


def serve(spec, sock_path):
    try:
        tools = load_all(spec)
    except Exception as e:  # noqa: BLE001 - the host waits for the socket or this file
        with open(sock_path + ".error", "w", encoding="utf-8") as f:
            f.write(f"{type(e).__name__}: {e}")
        return 2
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = sock_path + ".tmp"
    if os.path.exists(tmp):
        os.unlink(tmp)
    srv.bind(tmp)
    srv.listen(64)
    os.rename(tmp, sock_path)  # the host waits for this name: it appears only once we listen
    while True:  # one call at a time: tool calls on one database are applied in order
        conn, _ = srv.accept()
        with conn:
            try:
                req = json.loads(_read_line(conn))
                reply = handle(tools, spec, req)
            except Exception as e:  # noqa: BLE001
                reply = {"is_error": True, "content": f"tool host: {type(e).__name__}: {e}"}
            try:
                conn.sendall(json.dumps(reply).encode() + b"\n")
            except OSError:
                pass


def _emit(reply, out):
    text = json.dumps(reply)
    if out is None:
        print(text)
        return
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.rename(tmp, out)


def main(argv):
    out = None
    if "--out" in argv:  # write the reply to a file (read back by the host through the guest)
        i = argv.index("--out")
        out = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    mode, spec_path = argv[1], argv[2]
    if mode == "prepare":  # prepare BUNDLE SPEC READY [--force]
        try:
            reply = prepare(argv[2], argv[3], argv[4], "--force" in argv[5:])
        except Exception as e:  # noqa: BLE001 - one clear line for the host
            _emit({"error": f"{type(e).__name__}: {e}"}, out)
            return 2
        _emit(reply, out)
        return 0
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    try:
        if mode == "init":
            reply = init(spec)
        elif mode == "serve":
            return serve(spec, argv[3])
        elif mode == "once":
            reply = handle(load_all(spec), spec, json.loads(sys.stdin.read()))
        elif mode == "query":
            reply = query(spec, json.loads(sys.stdin.read()))
        elif mode == "query-dirs":  # {"dirs": [...], "queries": [...]}: the same queries on each state
            req = json.loads(sys.stdin.read())
            reply = {"results": {d: query({**spec, "gyms": [{**g, "db": os.path.join(d, g["name"] + ".sqlite")}
                                                            for g in spec["gyms"]]}, req)["results"] for d in req["dirs"]}}
        elif mode == "replay":  # {"calls": [{tool, arguments}]} in order, one result each
            tools = load_all(spec)
            calls = json.loads(sys.stdin.read())["calls"]
            reply = {"results": [call(tools, spec, {"name": c["tool"], "arguments": c["arguments"]}) for c in calls]}
        elif mode == "hash":  # content hash of every gym's tables (file bytes differ for equal content)
            reply = {"hash": state_hash(spec)}
        elif mode == "schema":
            reply = handle(load_all(spec), spec, {"op": "list"})
        else:
            reply = {"error": f"unknown mode {mode}"}
    except Exception as e:  # noqa: BLE001 - one clear line for the host
        _emit({"error": f"{type(e).__name__}: {e}"}, out)
        return 2
    _emit(reply, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
