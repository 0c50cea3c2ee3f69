"""Container-less builds against the real sandbox: honoured steps, caching, and honest refusals."""

import asyncio
import json

import pytest

from agentmill.errors import NeedsContainerError
from agentmill.images import ImageBuilder, ImageBuildError
from agentmill.tasks import load_task
from tests.conftest import sandbox, scratch_cache, simple_task

pytestmark = sandbox


def build(tmp_path, dockerfile, **files):
    task = load_task(simple_task(tmp_path, dockerfile=dockerfile, environment_files=files or None))
    builder = ImageBuilder(cache=scratch_cache(tmp_path))
    return builder, task, asyncio.run(builder.get(task))


def test_workdir_env_copy_run_are_honoured(tmp_path):
    df = (
        "FROM python:3.11-slim\nARG GREETING=hello\nENV APP_HOME=/srv/app MODE=test\nWORKDIR $APP_HOME\n"
        "COPY data/ ./data/\nCOPY one.txt two.txt /opt/files/\nCOPY --chmod=755 tool.sh /usr/local/bin/tool\n"
        'RUN echo "$GREETING $MODE" > built.txt && python --version > pyver && tool > toolout && id -u > uid\n'
        "RUN <<EOF\nset -e\nmkdir -p /data\necho heredoc > /data/h.txt\nEOF\n"
        "USER nobody\n"
    )
    builder, task, image = build(
        tmp_path, df, **{"data/a.csv": "x,y\n", "one.txt": "1", "two.txt": "2", "tool.sh": "#!/bin/sh\necho tool-ran\n"}
    )
    root = image.rootfs
    assert image.workdir == "/srv/app"
    assert image.env == {"LANG": "C.UTF-8", "APP_HOME": "/srv/app", "MODE": "test"}  # LANG: set by python images
    assert (root / "srv/app/data/a.csv").read_text() == "x,y\n"
    assert (root / "opt/files/one.txt").read_text() == "1" and (root / "opt/files/two.txt").read_text() == "2"
    assert (image.usr_local / "bin/tool").exists()
    assert (root / "srv/app/built.txt").read_text() == "hello test\n"
    assert (root / "srv/app/pyver").read_text().startswith("Python 3.")
    assert (root / "srv/app/toolout").read_text() == "tool-ran\n"
    assert (root / "data/h.txt").read_text() == "heredoc\n"
    assert any("USER nobody ignored" in n for n in image.notes)


def test_build_is_cached_by_content_hash(tmp_path):
    df = "FROM debian:bookworm-slim\nWORKDIR /app\nRUN date +%s%N > /app/stamp\n"
    builder, task, first = build(tmp_path, df)
    stamp = (first.rootfs / "app/stamp").read_text()
    again = asyncio.run(builder.get(task))
    assert again.key == first.key and (again.rootfs / "app/stamp").read_text() == stamp
    meta = json.loads((first.path / "image.json").read_text())
    assert meta["workdir"] == "/app"
    # a changed environment is a new image
    (task.environment_dir / "Dockerfile").write_text(df + "RUN true\n")
    changed = asyncio.run(builder.get(load_task(task.path)))
    assert changed.key != first.key


def test_concurrent_builds_of_one_image_build_once(tmp_path):
    df = "FROM debian:bookworm-slim\nWORKDIR /app\nRUN date +%s%N > /app/stamp\n"
    task = load_task(simple_task(tmp_path, dockerfile=df))
    builder = ImageBuilder(cache=scratch_cache(tmp_path))

    async def go():
        return await asyncio.gather(*(builder.get(task) for _ in range(4)))

    images = asyncio.run(go())
    assert len({(i.rootfs / "app/stamp").read_text() for i in images}) == 1


def test_apt_install_of_host_packages_is_satisfied(tmp_path):
    _, _, image = build(
        tmp_path,
        "FROM debian:bookworm\nRUN apt-get update && apt-get install -y --no-install-recommends bash coreutils && rm -rf /var/lib/apt/lists/*\n",
    )
    assert image.base == "debian:bookworm"


@pytest.mark.parametrize(
    "dockerfile, reason",
    [
        ("FROM alpine:3.19\nRUN apk add bash\n", "not Debian-based"),
        (
            "FROM debian:bookworm\nRUN apt-get update && apt-get install -y definitely-not-a-package-xyz\n",
            "definitely-not-a-package-xyz",
        ),
        ("FROM golang:1.22 AS build\nRUN true\nFROM debian:bookworm\n", "multi-stage"),
        ("FROM debian:bookworm\nCOPY --from=builder /x /y\n", "--from"),
        ("FROM debian:bookworm\nADD https://example.com/x.tar.gz /opt/\n", "URL"),
    ],
)
def test_unbuildable_environments_need_a_container(tmp_path, dockerfile, reason):
    with pytest.raises(NeedsContainerError, match=reason):
        build(tmp_path, dockerfile)


def test_needs_container_verdict_is_cached(tmp_path):
    task = load_task(simple_task(tmp_path, dockerfile="FROM alpine\n"))
    builder = ImageBuilder(cache=scratch_cache(tmp_path))
    for _ in range(2):
        with pytest.raises(NeedsContainerError):
            asyncio.run(builder.get(task))
    assert list(builder.root.glob("*.needs-container"))


def test_failing_run_step_reports_line_and_output(tmp_path):
    with pytest.raises(ImageBuildError) as err:
        build(tmp_path, "FROM debian:bookworm\nWORKDIR /app\nRUN echo about-to-fail && exit 3\n")
    assert "Dockerfile:3" in str(err.value) and "exited 3" in str(err.value)
    assert "about-to-fail" in err.value.log


# A RUN step that appends to a file, then fetches from a real HTTP server on the host's loopback
# (build steps have the network), printing what a failed fetch prints.
FLAKY_FETCH = (
    "FROM debian:bookworm\nWORKDIR /app\n"
    'RUN echo ran >> /app/runs && python3 -c "import urllib.request as u; '
    "print(u.urlopen('http://127.0.0.1:{port}/payload').read().decode())\" > /app/payload "
    "|| { echo 'fetch: 503 Service Unavailable'; exit 6; }\n"
)


class _Flaky:
    """An HTTP server whose first `fail_times` answers are 503; it counts the requests it got."""

    def __init__(self, fail_times: int):
        import http.server
        import threading

        flaky = self
        self.requests = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                flaky.requests += 1
                ok = flaky.requests > fail_times
                self.send_response(200 if ok else 503)
                self.end_headers()
                self.wfile.write(b"fetched" if ok else b"busy")

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def test_transient_network_error_is_retried_from_an_empty_tree(tmp_path):
    # The failed attempt had already appended to /app/runs: a retry in place would run the step on
    # a tree that holds its half-result (`adduser` then says the user exists). The retry starts the
    # build again, so every RUN runs once on its parent's result (planted in-place retry: runs twice).
    server = _Flaky(fail_times=1)
    try:
        task = load_task(simple_task(tmp_path, dockerfile=FLAKY_FETCH.replace("{port}", str(server.port))))
        builder = ImageBuilder(cache=scratch_cache(tmp_path), retry_delays=(0.05, 0.05))
        image = asyncio.run(builder.get(task))
    finally:
        server.close()
    assert server.requests == 2  # failed once, then succeeded
    assert (image.rootfs / "app/payload").read_text() == "fetched\n"
    assert (image.rootfs / "app/runs").read_text() == "ran\n"


def test_a_step_that_adds_a_user_is_built_as_a_real_image_not_refused():
    # The host's /etc is read-only in host builds: such a step is for the Debian builder, decided
    # before it runs (never half-run on the host's tree first).
    from agentmill.images.build import _USER_TOOLS

    assert _USER_TOOLS.search("adduser --disabled-password --gecos '' appuser")
    assert _USER_TOOLS.search("apt-get update && useradd -m agent")
    assert not _USER_TOOLS.search("pip install fastapi-users && echo add-user-docs")


def test_network_failure_is_reported_but_never_cached_on_disk(tmp_path):
    from agentmill.images.build import NetworkFetchError, image_key

    server = _Flaky(fail_times=99)
    try:
        task = load_task(simple_task(tmp_path, dockerfile=FLAKY_FETCH.replace("{port}", str(server.port))))
        cache = scratch_cache(tmp_path)
        builder = ImageBuilder(cache=cache, retry_delays=(0.05, 0.05))
        with pytest.raises(NetworkFetchError, match=r"Dockerfile:3: RUN's network fetch failed 3 times") as err:
            asyncio.run(builder.get(task))
        assert server.requests == 3
        assert "container backend" in str(err.value)  # still reported as what it needs
        assert not list(builder.root.glob("*.needs-container"))
        with pytest.raises(NetworkFetchError):  # this process does not hammer the network again
            asyncio.run(builder.get(task))
        assert server.requests == 3
        fresh = ImageBuilder(cache=cache, retry_delays=(0.05,))
        assert fresh._load(image_key(task)) is None  # a later run builds again
    finally:
        server.close()


def test_images_command_lists_and_prunes(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from agentmill.cli import app

    builder, task, image = build(tmp_path, "FROM debian:bookworm-slim\nWORKDIR /app\nRUN echo x > /app/x\n")
    monkeypatch.setenv("AGENTMILL_CACHE", str(builder.root.parent))
    runner = CliRunner()
    listed = runner.invoke(app, ["images", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = [json.loads(line) for line in listed.stdout.splitlines() if line.strip()]
    assert [(r["kind"], r["key"], r["what"]) for r in rows] == [("image", image.key, "host: debian:bookworm-slim")]
    kept = runner.invoke(app, ["images", "prune"])  # just built: younger than 7 days
    assert kept.exit_code == 0 and "removed 0 entries" in kept.stdout and image.path.exists()
    pruned = runner.invoke(app, ["images", "prune", "--all"])
    assert pruned.exit_code == 0 and "removed 1 entries" in pruned.stdout and not image.path.exists()


def test_copy_never_follows_an_image_symlink_onto_the_host(tmp_path):
    # A RUN step plants links to host paths; later COPYs must land inside the image, not on the host.
    victim = tmp_path / "victim"  # a host folder outside the image
    victim.mkdir()
    df = (
        "FROM debian:bookworm-slim\nWORKDIR /app\n"
        f"RUN ln -s {victim} /app/outdir && ln -s {victim}/file.txt /app/outfile && mkdir -p /app/tree && "
        f"ln -s {victim} /app/tree/sub\n"
        "COPY one.txt /app/outdir/\nCOPY one.txt /app/outfile\nCOPY tree/ /app/tree/\n"
    )
    _, _, image = build(tmp_path, df, **{"one.txt": "1", "tree/sub/inner.txt": "inner"})
    assert list(victim.iterdir()) == [], "the build wrote through a symlink onto the host"
    root = image.rootfs
    assert (root / victim.relative_to("/") / "one.txt").read_text() == "1"  # the link resolved inside the image
    assert (root / victim.relative_to("/") / "file.txt").read_text() == "1"  # as Docker: the link, inside
    assert (root / "app/tree/sub/inner.txt").read_text() == "inner" and not (root / "app/tree/sub").is_symlink()


def test_the_default_builder_is_auto_host_first_then_debian(monkeypatch):
    from agentmill.images.build import builder_mode

    monkeypatch.delenv("AGENTMILL_IMAGES", raising=False)
    assert builder_mode() == "auto"
    monkeypatch.setenv("AGENTMILL_IMAGES", "Host")
    assert builder_mode() == "host"
    monkeypatch.setenv("AGENTMILL_IMAGES", "docker")
    with pytest.raises(Exception, match="AGENTMILL_IMAGES='docker': expected one of host, auto, debian"):
        builder_mode()


def test_one_builder_serves_several_event_loops(tmp_path):
    # trainers and tests call asyncio.run more than once with one builder: its locks must not be
    # carried from one event loop to the next (concurrent gets of one image make them wait)
    builder = ImageBuilder(cache=scratch_cache(tmp_path), mode="host")
    task = load_task(simple_task(tmp_path, "t"))

    async def together():
        return await asyncio.gather(*(builder.get(task) for _ in range(3)))

    first, second = asyncio.run(together()), asyncio.run(together())
    assert len({image.key for image in first + second}) == 1


def test_astrals_uv_installer_in_a_run_step_installs_the_asked_uv(tmp_path):
    # `curl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh` in a Dockerfile: where astral.sh is
    # unreachable (here: only PyPI, Debian's archive and npm are), the same uv release comes from
    # PyPI's uv wheel and the image says so (planted: no curl shim, caught: uv not found).
    df = (
        "FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624\n"
        'RUN curl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh\nENV PATH="/root/.local/bin:$PATH"\n'
        "RUN uv --version > /app/uv-version && . $HOME/.local/bin/env && uvx --version >> /app/uv-version\n"
    )
    _, _, image = build(tmp_path, df)
    assert (image.rootfs / "app/uv-version").read_text() == "uv 0.7.13\nuvx 0.7.13\n"
    noted = [n for n in image.notes if "astral.sh is unreachable" in n]
    assert noted == [] or "uv 0.7.13 was installed from PyPI's uv wheel" in noted[0]


def test_a_failed_steps_reason_is_its_last_words_not_curls_progress_meter():
    from agentmill.images.errors import last_words

    meter = (
        "  % Total    % Received % Xferd  Average Speed\n\r  0     0    0     0    0     0      0      0 "
        "--:--:-- --:--:-- --:--:--     0curl: (6) Could not resolve host: huggingface.co\n"
    )
    assert last_words(meter) == "curl: (6) Could not resolve host: huggingface.co"
    assert last_words("E: Unable to locate package nope\n  100  2.5k\n") == "E: Unable to locate package nope"
