"""The pre-verification pass on crafted root filesystems (host-side; the end-to-end attacks are in
test_reward_hacks.py): what it moves aside, what it must leave alone, and that it never follows links."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from agentmill.sandbox.bwrap import prepare_root
from agentmill.verify.hardening import Hardening, harden


def _tree(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    prepare_root(root)
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def _pass(tmp_path: Path, rootfs: Path, template: Path | None = None, **kw):
    return harden(
        rootfs, template, tmp_path / "quarantine", workdir=kw.pop("workdir", "/app"), env=kw.pop("env", {}), **kw
    )


def test_resolver_follows_links_as_text_inside_the_rootfs(tmp_path):
    root = _tree(tmp_path / "r", {"app/real.txt": "x"})
    os.symlink("/tests", root / "app/t")
    os.symlink("t/expected.txt", root / "app/chained")
    os.symlink("../app/t/../real.txt", root / "app/dotdot")
    os.symlink("loop2", root / "app/loop1")
    os.symlink("loop1", root / "app/loop2")
    os.symlink("/proc/self/root/tests/x", root / "app/proc")
    h = Hardening(root, None, tmp_path / "q")
    assert h.resolve("/app/chained") == "/tests/expected.txt"
    assert h.resolve("/app/dotdot") == "/real.txt"  # '..' applies to the link's target, as the kernel does
    assert h.resolve("/app/loop1") is None
    assert h.resolve("/app/proc") == "/proc/self/root/tests/x"
    assert h.resolve("/app/real.txt") == "/app/real.txt"


def test_a_host_path_link_is_never_followed(tmp_path):
    """A link to a host folder (outside the rootfs) is read as text: the pass never writes or reads there."""
    outside = tmp_path / "host-secret"
    outside.mkdir()
    (outside / "conftest.py").write_text("x")
    root = _tree(tmp_path / "r", {})
    os.symlink(str(outside), root / "app")  # /app -> a host path: inside the sandbox it is dangling
    evidence = _pass(tmp_path, root)
    assert (outside / "conftest.py").exists()
    assert not any("conftest" in e.path for e in evidence)


def test_honest_leftovers_and_the_images_own_files_are_not_evidence(tmp_path):
    template = _tree(
        tmp_path / "template",
        {
            "app/conftest.py": "# the task's own",
            "pytest.ini": "[pytest]\n",
            "root/.local/bin/env": "export PATH=/opt/x:$PATH\n",
            "home/dev/.profile": "export PATH=$HOME/bin:$PATH\n",
        },
    )
    root = tmp_path / "r"
    subprocess.run(["cp", "-a", str(template), str(root)], check=True)
    _tree(
        root,
        {
            "app/README.md": "notes",
            "app/__pycache__/m.cpython-311.pyc": "x",
            "app/src/util.py": "x = 1",
            "app/test.py": "print(1)",
            "root/.bashrc": 'alias ll="ls -l"\nexport EDITOR=vim\n',
            "root/.local/bin/mytool": "#!/bin/sh\n",
            "app/venv/lib/python3.11/site-packages/distutils-precedence.pth": "x",
            "app/tests/conftest.py": "x",
            "app/pyproject.toml": "[project]\nname = 'x'\n",
            "home/dev/.profile": "export PATH=$HOME/bin:$PATH\nalias gs='git status'\n",
        },
    )  # an alias added
    os.symlink("/app/README.md", root / "app/latest")
    os.symlink("../README.md", root / "app/src/README.md")
    os.symlink("/usr/bin/python3", root / "app/py")
    assert _pass(tmp_path, root, template) == []


def test_what_steers_is_moved_aside_not_deleted(tmp_path):
    root = _tree(
        tmp_path / "r",
        {
            "conftest.py": "x",
            "app/pyproject.toml": "[tool.pytest.ini_options]\naddopts='-q'\n",
            "app/pytest.py": "x",
            "app/json.py": "x",
            "app/_pytest/__init__.py": "x",
            "root/.local/lib/python3.11/site-packages/usercustomize.py": "x",
            "root/.local/bin/env": "export PYTEST_ADDOPTS=--co",
            "root/.profile": "export PATH=/evil:$PATH",
            "root/.local/bin/python3": "#!/bin/sh\n",
            "logs/verifier/reward.txt": "1",
        },
    )
    os.mkfifo(root / "app/answer.txt")
    os.chmod(root / "root/.local/bin", 0o555)
    evidence = _pass(tmp_path, root)
    by_path = {e.path: e.kind.value for e in evidence}
    assert by_path == {
        "/conftest.py": "runner_config",
        "/app/pyproject.toml": "runner_config",
        "/app/pytest.py": "shadow_module",
        "/app/json.py": "shadow_module",
        "/app/_pytest": "shadow_module",
        "/root/.local/lib/python3.11/site-packages/usercustomize.py": "python_startup",
        "/root/.local/bin/env": "shell_startup",
        "/root/.profile": "shell_startup",
        "/root/.local/bin/python3": "planted_tool",
        "/logs/verifier": "prepared_logs",
        "/app/answer.txt": "special_file",
    }, by_path
    assert all(not os.path.lexists(root / p.lstrip("/")) for p in by_path)
    assert (tmp_path / "quarantine/root/.local/bin/env").read_text() == "export PYTEST_ADDOPTS=--co"
    assert any("pinned" in e.detail for e in evidence if e.path == "/root/.local/bin/env")


def test_root_links_are_restored_and_hard_links_to_planted_files_caught(tmp_path):
    root = _tree(tmp_path / "r", {"logs/verifier/reward.txt": "1"})
    os.link(root / "logs/verifier/reward.txt", root / "root/keep.txt")
    os.unlink(root / "lib64")
    (root / "lib64").mkdir()
    (root / "lib64/ld-linux-x86-64.so.2").write_text("fake loader")
    os.unlink(root / "bin")
    evidence = _pass(tmp_path, root)
    kinds = {(e.path, e.kind.value) for e in evidence}
    assert {("/lib64", "root_layout"), ("/bin", "root_layout"), ("/root/keep.txt", "protected_link")} <= kinds
    assert os.readlink(root / "lib64") == "usr/lib64" and os.readlink(root / "bin") == "usr/bin"


def test_pythonpath_and_image_path_folders_count(tmp_path):
    root = _tree(tmp_path / "r", {"srv/lib/sitecustomize.py": "x", "srv/lib/os.py": "x", "opt/tools/bash": "x"})
    evidence = _pass(tmp_path, root, env={"PYTHONPATH": "/srv/lib", "PATH": "/opt/tools:/usr/bin"})
    assert {(e.path, e.kind.value) for e in evidence} == {
        ("/srv/lib/sitecustomize.py", "python_startup"),
        ("/srv/lib/os.py", "shadow_module"),
        ("/opt/tools/bash", "planted_tool"),
    }
    shutil.rmtree(tmp_path / "quarantine")


def test_root_links_are_compared_with_what_the_image_had(tmp_path):
    # A template whose /lib64 link points elsewhere (an image's own layout) is no evidence when
    # the trial kept it; a real /lib32 folder of the template is the image's folder, walked as any.
    template = _tree(tmp_path / "t", {"lib32/libc.so": "image's"})
    os.unlink(template / "lib64")
    os.symlink("usr/lib/x86_64-linux-gnu", template / "lib64")
    root = tmp_path / "r"
    subprocess.run(["cp", "-a", str(template), str(root)], check=True)
    assert _pass(tmp_path, root, template) == []
    os.unlink(root / "lib64")
    os.symlink("usr/lib64", root / "lib64")  # the generic link, not this image's: changed
    evidence = _pass(tmp_path, root, template)
    assert [(e.path, e.kind.value) for e in evidence] == [("/lib64", "root_layout")]
    assert os.readlink(root / "lib64") == "usr/lib/x86_64-linux-gnu"


def test_an_overlay_upper_is_judged_by_what_it_changed(tmp_path):
    # An overlay's upper holds only the agent's changes: an absent /bin is the image's own link
    # (planted: absence as removal, caught by the corpus check); a whiteout is a removal, as a
    # char device (kernels that allow it) or a `.wh.` file (fuse-overlayfs's fallback).
    template = _tree(tmp_path / "t", {})
    upper = tmp_path / "upper"
    (upper / "app").mkdir(parents=True)
    (upper / "app/out.txt").write_text("hello")
    assert harden(upper, template, tmp_path / "q", workdir="/app", env={}, overlay=True) == []
    (upper / ".wh.bin").write_text("")
    evidence = harden(upper, template, tmp_path / "q2", workdir="/app", env={}, overlay=True)
    assert [(e.path, e.kind.value) for e in evidence] == [("/bin", "root_layout")]
    assert os.readlink(upper / "bin") == "usr/bin" and not os.path.lexists(upper / ".wh.bin")
