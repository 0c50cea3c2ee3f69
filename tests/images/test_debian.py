"""Debian-built images (AGENTMILL_IMAGES=debian): public-style Dockerfiles build for real from
Debian's archive, their oracle passes and nop fails; layers are cached by (step, parent); what an
agent writes never reaches the image, and system directories stay read-only.

One base (bookworm minbase + python3) is built once into the agentmill cache and shared by every
test and later run; each test's images go to a private cache. Needs network to Debian's archive.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import uuid
from pathlib import Path

import pytest

from agentmill.agents import NopAgent, OracleAgent
from agentmill.images import ImageBuilder
from agentmill.images.userns import BuilderUnavailable, build_identity
from agentmill.rollout.trial import run_trial
from agentmill.tasks import load_task
from agentmill.verify.outcome import Outcome
from tests.conftest import sandbox, scratch_cache, simple_task

try:
    build_identity()
    _why = None
except BuilderUnavailable as e:
    _why = str(e)

pytestmark = [sandbox, pytest.mark.skipif(_why is not None, reason=f"Debian image builder unavailable: {_why}")]

# Terminal-Bench's boilerplate plus a package this host does not have: one shared, cached layer.
APT_LINE = (
    "RUN apt-get update && apt-get install -y --no-install-recommends tmux asciinema figlet \\\n"
    "    && rm -rf /var/lib/apt/lists/*\n"
)
REWARD = (
    "#!/bin/bash\nif {cond}; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
)


def builder_for(tmp_path: Path) -> ImageBuilder:
    return ImageBuilder(cache=scratch_cache(tmp_path), mode="debian", retry_delays=(3.0,))


def task_at(tmp_path: Path, name: str, dockerfile: str, *, cond: str, solve: str, **kw):
    return load_task(
        simple_task(tmp_path, name, dockerfile=dockerfile, test_sh=REWARD.format(cond=cond), solve_sh=solve, **kw)
    )


def oracle_and_nop(task, builder):
    async def both():
        return await asyncio.gather(run_trial(task, OracleAgent(), builder), run_trial(task, NopAgent(), builder))

    oracle, nop = asyncio.run(asyncio.wait_for(both(), 900))
    assert oracle.outcome is Outcome.PASSED, (
        oracle.exception,
        oracle.verifier_stdout[-1500:],
        oracle.verifier_stderr[-1500:],
    )
    assert nop.outcome is Outcome.FAILED, (nop.outcome, nop.exception)
    return oracle, nop


def test_apt_installs_packages_the_host_lacks_and_dirs_under_workdir(tmp_path):
    assert shutil.which("figlet") is None, "this test needs a package the host does not have"
    df = (
        "FROM debian:bookworm-slim\n" + APT_LINE + "WORKDIR /app\n"
        "RUN mkdir -p /app/data/in && echo 'agentmill' > /app/data/in/word.txt\n"
    )
    task = task_at(
        tmp_path,
        "banner",
        df,
        cond="figlet agentmill | cmp -s - /app/data/banner.txt",
        solve='figlet "$(cat data/in/word.txt)" > data/banner.txt\n',
    )
    builder = builder_for(tmp_path)
    oracle, _ = oracle_and_nop(task, builder)
    image = asyncio.run(builder.get(task))
    assert image.builder == "debian" and image.workdir == "/app" and len(image.layers) >= 3
    assert (Path(image.system) / "usr/bin/asciinema").exists() and (Path(image.system) / "usr/bin/tmux").exists()
    assert any("Debian layers" in n for n in oracle.notes)


def test_user_added_in_the_dockerfile_runs_later_steps(tmp_path):
    df = (
        "FROM debian:bookworm-slim\n"
        "RUN useradd --create-home --shell /bin/bash builder\n"
        "USER builder\nWORKDIR /home/builder/work\n"
        "RUN echo \"built-by=$(whoami) home=$HOME\" > made.txt && ls -ld . | awk '{print $3}' > owner.txt\n"
    )
    task = task_at(
        tmp_path,
        "user",
        df,
        cond="grep -qx 'built-by=builder home=/home/builder' /home/builder/work/made.txt "
        "&& grep -qx builder /home/builder/work/owner.txt "
        "&& grep -qx 'done home=/home/builder' /home/builder/work/answer.txt",
        solve='echo "done home=$HOME" > answer.txt\n',
    )
    builder = builder_for(tmp_path)
    oracle, _ = oracle_and_nop(task, builder)
    image = asyncio.run(builder.get(task))
    assert image.workdir == "/home/builder/work" and image.env.get("HOME") == "/home/builder"
    assert any("USER builder" in n for n in oracle.notes)


def test_multi_stage_build_with_copy_from(tmp_path):
    df = (
        "FROM python:3.11-slim AS gen\n"
        "WORKDIR /src\n"
        "RUN python -c \"print('#!/bin/sh'); print('echo multi-stage-ok')\" > tool && chmod +x tool\n"
        "FROM debian:bookworm-slim\n"
        "COPY --from=gen /src/tool /usr/local/bin/tool\n"
        "WORKDIR /app\n"
    )
    task = task_at(
        tmp_path,
        "multi",
        df,
        cond='[ "$(tool)" = multi-stage-ok ] && grep -qx multi-stage-ok /app/out.txt',
        solve="tool > /app/out.txt\n",
    )
    builder = builder_for(tmp_path)
    oracle_and_nop(task, builder)
    image = asyncio.run(builder.get(task))
    assert not (Path(image.system) / "usr/bin/pip3").exists(), (
        "the final stage must not inherit the first stage's files"
    )


def test_ubuntu_base(tmp_path):
    df = "FROM ubuntu:24.04\n" + APT_LINE + "WORKDIR /app\n"
    task = task_at(
        tmp_path,
        "ubuntu",
        df,
        cond='[ "$(cat /app/out.txt)" = "$(figlet -w 60 ok)" ]',
        solve="figlet -w 60 ok > /app/out.txt\n",
    )
    oracle, _ = oracle_and_nop(task, builder_for(tmp_path))
    assert any("Ubuntu" in n and "built as Debian bookworm" in n for n in oracle.notes)


def test_python_slim_base_has_python_and_pip(tmp_path):
    df = (
        "FROM python:3.11-slim\nWORKDIR /app\n"
        "RUN pip install --no-cache-dir --no-deps six==1.16.0 && python -c 'import six' && pip --version > pipver\n"
    )
    task = task_at(
        tmp_path,
        "pyslim",
        df,
        cond="python -c 'import six' && grep -q '^pip ' /app/pipver && grep -qx 42 /app/answer.txt",
        solve="python -c 'print(6 * 7)' > /app/answer.txt\n",
    )
    oracle_and_nop(task, builder_for(tmp_path))


def test_layer_cache_builds_a_shared_prefix_once(tmp_path):
    nonce = uuid.uuid4().hex[:8]
    prefix = f"FROM debian:bookworm-slim\nWORKDIR /app\nRUN echo {nonce} > stamp && date +%s%N > built-at\n"
    a = load_task(simple_task(tmp_path, "a", dockerfile=prefix + "RUN echo a > which\n"))
    b = load_task(simple_task(tmp_path, "b", dockerfile=prefix + "RUN echo b > which\n"))
    builder = builder_for(tmp_path)
    first = asyncio.run(builder.get(a))
    second = asyncio.run(builder.get(b))
    shared = first.layers[-2]
    assert second.layers[:-1] == first.layers[:-1] and second.layers[-1] != first.layers[-1]
    assert any("(1 layer(s) built now)" in n for n in second.notes), second.notes
    stamp_a = (builder.store.rootfs(shared) / "app/built-at").read_text()
    assert (Path(second.system) / "app/built-at").read_text() == stamp_a  # the prefix ran once
    assert (first.rootfs / "app/which").read_text() == "a\n" and (second.rootfs / "app/which").read_text() == "b\n"
    # a layer stores only what its step changed: untouched files are the parent's, linked
    base, child = builder.store.rootfs(first.layers[0]), builder.store.rootfs(shared)
    python = Path(os.path.realpath(base / "usr/bin/python3")).relative_to(base)
    assert (child / python).stat().st_ino == (base / python).stat().st_ino
    assert builder.store.info(shared).size_bytes < builder.store.info(first.layers[0]).size_bytes / 10
    for key in {*first.layers[1:], *second.layers[1:]}:  # this test's layers are unique: do not let them pile up
        builder.store.remove(key)


def test_agent_writes_never_reach_the_image_and_system_dirs_are_read_only(tmp_path):
    df = "FROM debian:bookworm-slim\nWORKDIR /app\nRUN echo pristine > /app/state.txt\n"
    attack = (
        "for p in /usr/bin/python3 /bin/bash /etc/passwd /usr/local/lib/python3.11/dist-packages/sitecustomize.py "
        "/usr/lib/python3/dist-packages/evil.pth; do (echo hacked > $p) 2>/dev/null && echo WROTE $p >> /app/log; done; "
        "echo mine-$RANDOM > /app/state.txt; echo x > /root/private; true\n"
    )
    task = task_at(
        tmp_path,
        "trust",
        df,
        cond="! grep -q WROTE /app/log 2>/dev/null && grep -q '^mine-' /app/state.txt",
        solve=attack,
    )
    builder = builder_for(tmp_path)
    oracle_and_nop(task, builder)
    image = asyncio.run(builder.get(task))
    assert (image.rootfs / "app/state.txt").read_text() == "pristine\n"
    assert (Path(image.system) / "app/state.txt").read_text() == "pristine\n"
    assert not (image.rootfs / "root/private").exists()
    # concurrent trials of one image see only their own files
    isolate = load_task(
        simple_task(
            tmp_path,
            "iso",
            dockerfile=df,
            test_sh=REWARD.format(cond="grep -qx 1 /app/count"),
            solve_sh="touch /app/mine-$RANDOM$RANDOM; sleep 2; ls /app | grep -c '^mine-' > /app/count\n",
        )
    )

    async def two():
        return await asyncio.gather(*(run_trial(isolate, OracleAgent(), builder) for _ in range(2)))

    results = asyncio.run(asyncio.wait_for(two(), 300))
    assert all(r.outcome is Outcome.PASSED for r in results), [r.exception for r in results]


def test_check_json_names_base_and_layers(tmp_path):
    from agentmill.rollout.check import check_tasks

    task = task_at(
        tmp_path, "meta", "FROM debian:bookworm-slim\nWORKDIR /app\n", cond="test -f /app/x", solve="touch /app/x\n"
    )
    builder = builder_for(tmp_path)
    [row] = [r.to_json() for r in asyncio.run(check_tasks([task], builder=builder))]
    image = asyncio.run(builder.get(task))
    meta = json.loads((image.path / "image.json").read_text())
    assert meta["builder"] == "debian" and meta["layers"] == image.layers and meta["base"] == "debian:bookworm-slim"
    assert row["verdict"] == "ok" and row["image"].startswith(
        f"image {image.key[:12]}: Debian layers {image.layers[0][:12]}"
    )
    assert "for base 'debian:bookworm-slim'" in row["image"]


def test_images_listing_and_prune(tmp_path):
    from agentmill.images.inventory import list_entries, prune

    task = task_at(tmp_path, "inv", "FROM debian:bookworm-slim\nWORKDIR /app\n", cond="true", solve="true\n")
    builder = builder_for(tmp_path)
    image = asyncio.run(builder.get(task))
    cache = builder.root.parent
    entries = list_entries(cache)  # this cache's images; no layers folder of its own
    [entry] = [e for e in entries if e.kind == "image"]
    assert entry.key == image.key and entry.what == "debian: debian:bookworm-slim" and entry.size_bytes > 0
    assert prune(cache, older_than_days=1) == []  # just used: kept
    removed = prune(cache, everything=True)
    assert [e.key for e in removed] == [image.key] and not image.path.exists()


def test_auto_mode_keeps_the_host_fast_path_and_falls_back_to_debian(tmp_path):
    builder = ImageBuilder(cache=scratch_cache(tmp_path), mode="auto", retry_delays=(3.0,))
    simple = load_task(
        simple_task(tmp_path, "simple", dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\nRUN echo x > x\n")
    )
    image = asyncio.run(builder.get(simple))
    assert image.builder == "host" and not image.layers
    needs = load_task(
        simple_task(tmp_path, "needs", dockerfile="FROM debian:bookworm-slim\n" + APT_LINE + "WORKDIR /app\n")
    )
    image = asyncio.run(builder.get(needs))
    assert image.builder == "debian" and image.workdir == "/app"
    assert any("host userland insufficient" in n and "figlet" in n for n in image.notes), image.notes
    alpine = load_task(simple_task(tmp_path, "alpine", dockerfile="FROM alpine:3.19\nRUN apk add bash\n"))
    with pytest.raises(Exception, match="not Debian-based"):
        asyncio.run(builder.get(alpine))


def test_terminal_bench_task_as_written(tmp_path):
    # A legacy Terminal-Bench task on its python base image with the recording boilerplate: the
    # verifier's pytest (offline toolkit) runs inside the Debian-built image.
    from tests.tasks.test_public_style import TB_RUN_TESTS, tb_task

    df = (
        "FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\n\n"
        "RUN apt-get update && apt-get install -y tmux asciinema \\\n    && rm -rf /var/lib/apt/lists/*\n\n"
        "RUN mkdir -p /app/data && printf 'a,1\\nb,2\\n' > /app/data/in.csv\n"
    )
    path = tb_task(
        tmp_path,
        "tb-sum",
        dockerfile=df,
        run_tests=TB_RUN_TESTS,
        instruction="Sum the second column of /app/data/in.csv into /app/data/sum.txt.",
        solution="python -c \"print(sum(int(l.split(',')[1]) for l in open('data/in.csv')))\" > data/sum.txt\n",
        test_outputs="from pathlib import Path\n\n\ndef test_sum():\n"
        "    assert Path('/app/data/sum.txt').read_text().strip() == '3'\n",
    )
    task = load_task(path)
    builder = builder_for(tmp_path)
    oracle, _ = oracle_and_nop(task, builder)
    assert "1 passed" in oracle.verifier_stdout
    image = asyncio.run(builder.get(task))
    assert image.workdir == "/app" and (Path(image.system) / "usr/bin/asciinema").exists()


def test_layer_sharing_never_keeps_a_parents_content_for_a_changed_file(tmp_path):
    # A step that rewrites a file with the same size and restores its mtime must still get its own copy.
    nonce = uuid.uuid4().hex[:8]
    df = (
        f"FROM debian:bookworm-slim\nRUN echo {nonce}-aaaa > /opt/f && touch -d 2001-01-01 /opt/f\n"
        f"RUN echo {nonce}-bbbb > /opt/f && touch -d 2001-01-01 /opt/f\n"
    )
    builder = builder_for(tmp_path)
    image = asyncio.run(builder.get(load_task(simple_task(tmp_path, dockerfile=df))))
    assert (Path(image.system) / "opt/f").read_text() == f"{nonce}-bbbb\n"
    assert (builder.store.rootfs(image.layers[1]) / "opt/f").read_text() == f"{nonce}-aaaa\n"
    for key in image.layers[1:]:
        builder.store.remove(key)
