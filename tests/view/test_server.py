"""The viewer's HTTP boundary: loopback only, Host checked, CSP on every answer, file reads confined,
hostile JSON made valid, bad parameters named; and the `agentmill view` command itself."""

import http.client
import json
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agentmill.view import ViewServer, open_source


@pytest.fixture
def served(real_run, tmp_path):
    server = ViewServer(open_source(real_run, index=tmp_path / "i.sqlite"), 0)
    server.start_background()
    yield server
    server.shutdown()
    server.server_close()


def get(server: ViewServer, path: str, host: str | None = None) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.putrequest("GET", path, skip_host=True)
    conn.putheader("Host", f"127.0.0.1:{server.port}" if host is None else host)
    conn.endheaders()
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, dict(r.getheaders()), body


def trial_of(server: ViewServer, task: str) -> str:
    status, _, body = get(server, f"/api/trials?task={task}")
    return json.loads(body)["trials"][0]["trial_id"]


def test_loopback_only_host_checked_and_csp_everywhere(served):
    assert served.server_address[0] == "127.0.0.1"
    for path in ("/", "/assets/app.js", "/api/summary", "/api/nothing", "/nowhere"):
        status, headers, _ = get(served, path)
        assert (
            "script-src 'self'" in headers["Content-Security-Policy"]
            and "'unsafe-inline'" not in headers["Content-Security-Policy"]
        )
        assert headers["X-Content-Type-Options"] == "nosniff"
    assert get(served, "/")[0] == 200 and get(served, "/", host=f"localhost:{served.port}")[0] == 200
    # DNS rebinding: a page on another name that resolves to 127.0.0.1 must not read the run
    for host in (f"evil.example:{served.port}", "127.0.0.1", f"127.0.0.1:{served.port + 1}", ""):
        status, _, body = get(served, "/api/summary", host=host)
        assert status == 403 and b"trials" not in body, host
    status, headers, body = get(served, "/assets/app.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript") and b"createTextNode" in body
    page = get(served, "/")[2].decode()
    assert '<script src="/assets/app.js"' in page and not re.search(r"<script>|https?://|\son\w+=", page)


def test_file_reads_stay_inside_the_task_folder(served, real_run):
    trial = trial_of(served, "wrong-answer")
    status, _, body = get(served, f"/api/task-file?id={trial}&path=solution/solve.sh")
    assert status == 200 and json.loads(body)["text"] == "echo goodbye > /app/out.txt\n"
    task_dir = Path(json.loads((real_run / "trials" / trial / "trial.json").read_text())["task_path"])
    (task_dir / "escape").symlink_to("/etc/passwd")
    (task_dir / "up").symlink_to(task_dir.parent)
    try:
        for rel in (
            "../hostile-output/instruction.md",
            "/etc/passwd",
            "escape",
            "up/hostile-output/task.toml",
            "",
            ".",
            "environment/../../dedupe-photos/task.toml",
        ):
            status, _, body = get(served, f"/api/task-file?id={trial}&path={rel}")
            assert status in (400, 404) and b"root:" not in body, rel
    finally:
        (task_dir / "escape").unlink()
        (task_dir / "up").unlink()
    for bad in ("../trials", "..", ".hidden", "a/b"):
        assert get(served, f"/api/trial?id={bad}")[0] == 404
        assert get(served, f"/api/task-file?id={bad}&path=task.toml")[0] == 404
    for asset in ("../server.py", "..%2Fserver.py", ".hidden"):
        assert get(served, f"/assets/{asset}")[0] == 404


def test_bad_parameters_are_named_and_hostile_json_stays_valid(served, real_run):
    status, _, body = get(served, "/api/trials?sort=evil")
    assert status == 400 and "parameter 'sort'" in json.loads(body)["error"]
    assert json.loads(get(served, "/api/trial")[2])["error"] == "parameter 'id' is required"
    trial = trial_of(served, "hostile-output")
    folder = real_run / "trials" / trial
    original = (folder / "trajectory.json").read_text()
    try:  # Python's json writes NaN; a browser's JSON.parse would reject the whole answer
        data = json.loads(original)
        data["steps"][1]["metrics"] = {"prompt_tokens": float("nan"), "cost_usd": float("inf")}
        (folder / "trajectory.json").write_text(json.dumps(data))
        status, _, body = get(served, f"/api/trial?id={trial}")
        assert status == 200 and b"NaN" not in body and b"Infinity" not in body
        assert json.loads(body)["trajectory"]["steps"][1]["metrics"]["prompt_tokens"] is None
    finally:
        (folder / "trajectory.json").write_text(original)


def test_view_command_serves_until_interrupted(nop_run, tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmill.cli", "view", str(nop_run), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        m = re.match(r"agentmill view: http://127\.0\.0\.1:(\d+)/", line)
        assert m, line + proc.stderr.read()
        conn = http.client.HTTPConnection("127.0.0.1", int(m.group(1)), timeout=30)
        conn.request("GET", "/api/summary")
        summary = json.loads(conn.getresponse().read())
        assert summary["agent"] == "nop" and summary["facets"]["outcomes"] == [{"value": "failed", "count": 2}]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert proc.returncode == 0
    r = subprocess.run(
        [sys.executable, "-m", "agentmill.cli", "view", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [f"error: {tmp_path / 'nowhere'}: no such folder"]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run(
            [sys.executable, "-m", "agentmill.cli", "view", str(nop_run), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


def test_a_registered_source_is_opened_and_served(tmp_path, real_run):
    """The extension point synthesis stores use: an opener, a kind, JSON routes; no change to the viewer."""
    from agentmill.view import source as registry

    class FakeStore:
        kind, title = "fake-store", "a fake store"

        def __init__(self, path):
            self.path = path

        def routes(self):
            return {
                "summary": lambda p: {"kind": self.kind, "title": self.title},
                "candidates": lambda p: {"candidates": [p.get("gate", ["any"])[-1]]},
            }

        def close(self):
            pass

    store = tmp_path / "store"
    store.mkdir()
    (store / "fake-store.txt").write_text("x")
    registry.register_source(
        "fake-store", lambda path, **o: FakeStore(path) if (path / "fake-store.txt").is_file() else None
    )
    try:
        opened = open_source(store)
        assert isinstance(opened, FakeStore)
        assert (
            open_source(real_run, index=tmp_path / "i.sqlite").kind == "rollout"
        )  # other folders still open as before
        with pytest.raises(Exception, match="known kinds: fake-store, .*rollout"):
            open_source(tmp_path)
        server = ViewServer(opened, 0)
        server.start_background()
        try:
            assert json.loads(get(server, "/api/summary")[2]) == {"kind": "fake-store", "title": "a fake store"}
            assert json.loads(get(server, "/api/candidates?gate=solver")[2]) == {"candidates": ["solver"]}
            assert get(server, "/api/trials")[0] == 404
        finally:
            server.shutdown()
            server.server_close()
    finally:
        registry.VIEW_SOURCES.unregister("fake-store")


def test_a_huge_task_folder_is_listed_up_to_the_cap(tmp_path):
    from agentmill.view.trial import TASK_LISTING_CAP, task_summary

    task = tmp_path / "task"
    (task / "environment" / "app").mkdir(parents=True)
    (task / "instruction.md").write_text("x")
    for i in range(TASK_LISTING_CAP + 100):
        (task / "environment" / "app" / f"f{i:04d}.txt").write_text("y")
    (task / "environment" / "link").symlink_to("/etc/passwd")
    summary = task_summary({"task": "big", "task_path": str(task), "instruction": "x"})
    paths = [f["path"] for f in summary["files"]]
    assert len(paths) == TASK_LISTING_CAP and summary["files_cut"]
    assert paths[:2] == ["instruction.md", "environment/app/f0000.txt"] and "environment/link" not in paths
    small = task_summary({"task_path": str(task / "environment" / "app"), "instruction": None})
    assert summary["exists"] and small["files_cut"]
    assert task_summary({"task_path": str(tmp_path / "gone")})["exists"] is False
