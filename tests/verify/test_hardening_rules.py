"""The pre-verification pass (verify/hardening.py), rule by rule: which places count, what each
finding says, how entries are moved aside, and where the walk stops.

test_hardening.py shows the pass on whole crafted trees; mutation testing then found most single
rules unprotected (a place set, a file suffix, a message, a pinned mode), so each has a test here.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from agentmill.sandbox.bwrap import ROOT_SYMLINKS, prepare_root
from agentmill.verify import hardening
from agentmill.verify.hardening import Hardening, _head, _Places, harden


def _tree(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    prepare_root(root)
    (root / "app").mkdir(exist_ok=True)
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def _copy(src: Path, dest: Path) -> Path:
    subprocess.run(["cp", "-a", str(src), str(dest)], check=True)
    return dest


def _pass(tmp_path: Path, rootfs: Path, template: Path | None = None, q: str = "quarantine", **kw):
    return harden(rootfs, template, tmp_path / q, workdir=kw.pop("workdir", "/app"), env=kw.pop("env", {}), **kw)


def found(evidence) -> dict[str, tuple[str, str]]:
    return {e.path: (e.kind.value, e.detail) for e in evidence}


# -- the places that steer a test run ---------------------------------------------------------------


def test_the_places_are_exactly_these():
    env = {
        "PYTHONPATH": "/srv/lib::relative:/opt//x/",
        "PATH": "/opt/tools:/usr/bin:/usr:/usr/local/bin:/.agentmill/tk/bin:relative:/home/dev/bin/",
    }
    p = _Places("/srv/work/", env, ["/root", "/home/dev"])
    sites = {f"{h}/.local/lib/python3.{m}/site-packages" for h in ("/root", "/home/dev") for m in range(6, 16)}
    assert p.homes == {"/root", "/home/dev"}
    assert p.config_dirs == {"/srv/work", "/srv", "/", "/app", "/root", "/home/dev"}
    assert p.import_dirs == {"/srv/work", "/", "/app", "/srv/lib", "/opt/x"}
    assert p.startup_dirs == sites | {"/srv/lib", "/opt/x"} | p.import_dirs
    assert p.uv_bins == {"/root/.local/bin", "/home/dev/.local/bin"}
    assert p.path_dirs == {
        "/opt/tools",
        "/home/dev/bin",
        "/root/.local/bin",
        "/home/dev/.local/bin",
        "/root/bin",
        "/app",
        "/app/bin",
    }


def test_no_workdir_and_no_environment_leave_the_root_and_app():
    p = _Places("", {}, ["/root"])
    assert p.config_dirs == {"/", "/app", "/root"}
    assert p.import_dirs == {"/", "/app"}
    assert p.path_dirs == {"/root/.local/bin", "/root/bin", "/app", "/app/bin"}


# -- what each finding says -------------------------------------------------------------------------


def test_every_kind_of_finding_says_what_it_is(tmp_path):
    root = _tree(
        tmp_path / "r",
        {
            "app/tox.ini": "[tox]\n[pytest]\naddopts = -p evil\n",
            "app/setup.cfg": "[tool:pytest]\naddopts = -p evil\n",
            "app/sitecustomize.pyc": "x",
            "app/evil.pth": "import os",
            "app/json.pyc": "x",
            "app/re.cpython-311-x86_64-linux-gnu.so": "x",
            "app/pytest/__init__.py": "x",
            "app/csv/__init__.pyc": "x",
            "root/.local/bin/env.fish": "set -x PATH /evil $PATH",
            "root/.bashrc": "export PYTEST_ADDOPTS=--co " + "x" * 80 + "\n",
            "app/bin/grep": "#!/bin/sh\n",
        },
    )
    evidence = found(_pass(tmp_path, root, command_dirs=(Path("/usr/bin"),)))
    config = "pytest would read it (in /app, the working folder or an ancestor); moved aside"
    assert evidence == {
        "/app/tox.ini": ("runner_config", config),
        "/app/setup.cfg": ("runner_config", config),
        "/app/sitecustomize.pyc": ("python_startup", "runs at every Python start-up from /app; moved aside"),
        "/app/evil.pth": ("python_startup", "runs at every Python start-up from /app; moved aside"),
        "/app/json.pyc": ("shadow_module", "module 'json' shadows the standard library; moved aside"),
        "/app/re.cpython-311-x86_64-linux-gnu.so": (
            "shadow_module",
            "module 're' shadows the standard library; moved aside",
        ),
        "/app/pytest": ("shadow_module", "package 'pytest' shadows the test runner; moved aside"),
        "/app/csv": ("shadow_module", "package 'csv' shadows the standard library; moved aside"),
        "/root/.local/bin/env.fish": (
            "shell_startup",
            "the uv installer's env file, which test scripts source; moved aside",
        ),
        "/root/.bashrc": ("shell_startup", f"sets what a sourcing test script runs: {'PYTEST'!r}; moved aside"),
        "/app/bin/grep": ("planted_tool", "shadows the command 'grep' on a test script's PATH; moved aside"),
    }


def test_a_test_runner_module_file_is_named_as_such(tmp_path):
    root = _tree(tmp_path / "r", {"app/pluggy.py": "x"})
    assert found(_pass(tmp_path, root)) == {
        "/app/pluggy.py": ("shadow_module", "module 'pluggy' shadows the test runner; moved aside")
    }


def test_a_steering_shell_line_is_quoted_cut_at_sixty_characters(tmp_path):
    root = _tree(tmp_path / "r", {"root/.profile": "alias pytest=" + "y" * 100 + "\n"})
    (detail,) = [e.detail for e in _pass(tmp_path, root)]
    assert detail == f"sets what a sourcing test script runs: {'alias pytest='!r}; moved aside"
    root = _tree(tmp_path / "r2", {"root/.profile": "PYTHON" + "P" * 70 + "=1\n"})
    (detail,) = [e.detail for e in _pass(tmp_path, root, q="q2")]
    assert detail == f"sets what a sourcing test script runs: {('PYTHON' + 'P' * 70 + '=')[:60]!r}; moved aside"


def test_same_names_elsewhere_are_not_findings(tmp_path):
    # a project's own .bashrc (not a home), a home file that is not a shell start-up file, a
    # config file without a pytest section, json.txt, a tool name outside PATH folders
    root = _tree(
        tmp_path / "r",
        {
            "app/.bashrc": "export PATH=/opt/bin:$PATH\n",
            "root/notes.txt": "reward PATH=/x\n",
            "app/tox.ini": "[tox]\nenvlist = py\n",
            "app/json.txt": "{}",
            "app/docs/grep": "x",
            "srv/sitecustomize.py": "x",
            "srv/json/__init__.py": "x",  # a package named like a module, outside the import folders
            "app/mypkg/__init__.py": "x",
        },
    )
    assert _pass(tmp_path, root) == []


# -- moving aside -----------------------------------------------------------------------------------


def test_each_move_gets_its_own_name_in_the_quarantine(tmp_path):
    for i in range(3):
        root = _tree(tmp_path / f"r{i}", {"conftest.py": str(i)})
        _pass(tmp_path, root)
    q = tmp_path / "quarantine"
    assert sorted(p.name for p in q.iterdir()) == ["conftest.py", "conftest.py.1", "conftest.py.2"]
    assert [(q / n).read_text() for n in ("conftest.py", "conftest.py.1", "conftest.py.2")] == ["0", "1", "2"]


def test_pinned_entries_are_unpinned_moved_and_said_to_be_pinned(tmp_path):
    root = _tree(tmp_path / "r", {"app/ro/conftest.py": "x", "conftest.py": "x", "app/pytest.py": "x"})
    (root / "app/json").mkdir()
    (root / "app/json/__init__.py").write_text("x")
    os.chmod(root / "app/json", 0o555)  # a read-only package folder
    os.chmod(root / "app/pytest.py", 0o444)  # a read-only file in a writable folder
    os.chmod(root / "root", 0o500)
    os.symlink("/tests", root / "root/t")  # in a read-only folder
    evidence = found(_pass(tmp_path, root))
    assert evidence["/conftest.py"][1].endswith("(in /, the working folder or an ancestor); moved aside")
    assert evidence["/app/json"][1].endswith("standard library; it was pinned read-only; moved aside")
    assert evidence["/app/pytest.py"][1].endswith("test runner; it was pinned read-only; moved aside")
    assert evidence["/root/t"][1].endswith("; it was pinned read-only; moved aside")
    assert stat.S_IMODE(os.stat(root / "root").st_mode) == 0o700  # opened up: owner write and search added
    assert stat.S_IMODE(os.stat(tmp_path / "quarantine/app/json").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(tmp_path / "quarantine/app/pytest.py").st_mode) == 0o444  # a file keeps its mode


# -- the verifier's mount points --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("top", "kind"),
    [
        ("logs", "prepared_logs"),
        ("tests", "protected_path"),
        ("solution", "protected_path"),
        (".agentmill", "protected_path"),
    ],
)
def test_each_mount_point_that_is_not_a_folder_is_moved_aside(tmp_path, top, kind):
    root = _tree(tmp_path / "r", {})
    if (root / top).is_dir():
        os.rename(root / top, tmp_path / "kept")
    (root / top).write_text("1")
    os.link(root / top, root / "app/copy")
    evidence = found(_pass(tmp_path, root))
    assert evidence[f"/{top}"] == (kind, f"/{top} is not a folder (the verifier mounts its own there); moved aside")
    assert evidence["/app/copy"] == (
        "protected_link",
        "hard link to a file planted under a protected path; moved aside",
    )


@pytest.mark.parametrize("top", ["tests", "solution", ".agentmill"])
def test_each_mount_point_is_emptied_even_when_an_earlier_one_is_absent(tmp_path, top):
    root = _tree(tmp_path / "r", {f"{top}/x": "planted"})
    assert not (root / "logs").exists()
    assert found(_pass(tmp_path, root)) == {
        f"/{top}/x": ("protected_path", "planted before verification (file, mode 0644); moved aside")
    }


def test_empty_mount_points_stay_and_read_only_ones_are_opened(tmp_path):
    root = _tree(tmp_path / "r", {})
    (root / "logs/agent/deep").mkdir(parents=True)
    os.chmod(root / "logs/agent", 0o555)
    os.chmod(root / "logs", 0o555)
    (root / "logs/linked").mkdir()
    os.symlink("/app", root / "logs/linked/app")  # a folder holding only a link is not empty
    evidence = found(_pass(tmp_path, root))
    assert list(evidence) == ["/logs/linked"]
    assert (root / "logs/agent/deep").is_dir()
    assert stat.S_IMODE(os.stat(root / "logs/agent").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(root / "logs").st_mode) == 0o755


# -- the root's links -------------------------------------------------------------------------------


def test_the_root_links_are_the_templates_or_the_defaults(tmp_path):
    assert Hardening(tmp_path, None, tmp_path / "q")._root_links() == ROOT_SYMLINKS
    template = _tree(tmp_path / "t", {})
    os.unlink(template / "lib64")
    (template / "lib64").mkdir()  # a real folder: the image's, walked as any
    os.unlink(template / "lib")  # absent: every sandbox root gets the default
    os.unlink(template / "sbin")
    os.symlink("usr/bin", template / "sbin")
    assert Hardening(tmp_path, template, tmp_path / "q")._root_links() == {
        "bin": "usr/bin",
        "sbin": "usr/bin",
        "lib": "usr/lib",
    }


def test_a_removed_or_replaced_root_link_is_restored_and_said_so(tmp_path):
    root = _tree(tmp_path / "r", {})
    os.unlink(root / "sbin")
    os.unlink(root / "lib64")
    os.symlink("/tmp/evil", root / "lib64")
    assert found(_pass(tmp_path, root)) == {
        "/lib64": (
            "root_layout",
            "/lib64 must be the link to /usr/lib64 (every ELF loader and #!/bin/sh lives behind it); moved aside",
        ),
        "/sbin": ("root_layout", "removed; restored"),
    }
    assert os.readlink(root / "sbin") == "usr/sbin" and os.readlink(root / "lib64") == "usr/lib64"


def test_an_overlay_upper_without_one_link_still_has_the_others_checked(tmp_path):
    template = _tree(tmp_path / "t", {})
    upper = tmp_path / "upper"
    (upper / "app").mkdir(parents=True)
    os.symlink("/tmp/evil", upper / "sbin")  # /bin absent (the image's own), /sbin changed
    evidence = harden(upper, template, tmp_path / "q", workdir="/app", env={}, overlay=True)
    assert [(e.path, e.kind.value) for e in evidence] == [("/sbin", "root_layout")]


# -- the agent's entries against the template -------------------------------------------------------


def test_only_what_the_agent_added_or_changed_counts(tmp_path):
    template = _tree(
        tmp_path / "t",
        {
            "app/json/__init__.py": "the image's own package",
            "app/csv/data.txt": "x",
            "root/.bashrc": "export PATH=/opt:$PATH\n",
        },
    )
    os.symlink("/logs/x", template / "app/keep")  # the image's own link (task content)
    os.symlink("/tests/a", template / "app/moved")
    root = _copy(template, tmp_path / "r")
    (root / "app/conftest.py").write_text("x")  # new
    os.unlink(root / "app/moved")
    os.symlink("/tests/b", root / "app/moved")  # the same name, another target
    (root / "app/csv/__init__.pyc").write_text("x")  # the image's folder made a package
    with open(root / "root/.bashrc", "a") as f:
        f.write("alias ll='ls -l'\n")  # only this line is the agent's
    evidence = found(_pass(tmp_path, root, template))
    assert set(evidence) == {"/app/conftest.py", "/app/moved", "/app/csv"}


@pytest.mark.parametrize("change", ["mode", "size", "type"])
def test_a_changed_file_is_the_agents(tmp_path, change):
    template = _tree(tmp_path / "t", {"app/conftest.py": "x"})
    root = _copy(template, tmp_path / "r")
    path = root / "app/conftest.py"
    if change == "mode":
        os.chmod(path, 0o600)
    elif change == "size":
        st = os.stat(path)
        path.write_text("xy")
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    else:
        os.unlink(path)
        os.symlink("/tests/x", path)
    assert set(found(_pass(tmp_path, root, template))) == {"/app/conftest.py"}


def test_entries_at_the_top_whose_names_begin_with_x_are_found_where_they_are(tmp_path):
    # paths are made by stripping the leading "/" only (a top-level name starting with X once hid a bug class)
    template = _tree(tmp_path / "t", {})
    os.symlink("/logs/x", template / "Xkeep")
    root = _copy(template, tmp_path / "r")
    os.symlink("/tests", root / "Xlink")
    evidence = found(_pass(tmp_path, root, template))
    assert list(evidence) == ["/Xlink"]
    assert os.readlink(tmp_path / "quarantine/Xlink") == "/tests"


# -- the walk's bound, the workdir, the default commands --------------------------------------------


def test_the_walk_stops_past_its_entry_budget_and_says_where(tmp_path, monkeypatch):
    root = _tree(tmp_path / "r", {"srv/deep/deeper/z.txt": "x"})  # the deepest entry: the walk's last
    for d in ("logs/agent", "tests", "solution"):  # the verifier's mount points are never walked
        (root / d).mkdir(parents=True)
    skipped = {"usr", "etc", "proc", "dev", "tmp", "logs", "tests", "solution", ".agentmill", *ROOT_SYMLINKS}
    entries = 0
    for top in os.listdir(root):
        if top not in skipped:
            entries += 1 + sum(len(d) + len(f) for _, d, f in os.walk(root / top))
    monkeypatch.setattr(hardening, "_MAX_ENTRIES", entries)
    assert _pass(tmp_path, root) == []
    monkeypatch.setattr(hardening, "_MAX_ENTRIES", entries - 1)
    assert found(_pass(tmp_path, root, q="q2")) == {
        "/srv/deep/deeper": ("protected_path", f"more than {entries - 1} entries: walk stopped")
    }
    monkeypatch.setattr(hardening, "_MAX_ENTRIES", 1)
    assert found(_pass(tmp_path, root, q="q3")) == {"/": ("protected_path", "more than 1 entries: walk stopped")}


def test_the_working_folder_given_is_the_one_whose_ancestors_count(tmp_path):
    root = _tree(tmp_path / "r", {"srv/conftest.py": "x"})
    (root / "srv/work").mkdir()
    assert _pass(tmp_path, root, workdir="/app") == []
    assert set(found(_pass(tmp_path, root, workdir="/srv/work", q="q2"))) == {"/srv/conftest.py"}


def test_without_command_folders_the_hosts_bin_and_sbin_are_the_known_commands(tmp_path):
    sbin_only = sorted(set(os.listdir("/usr/sbin")) - set(os.listdir("/usr/bin")))
    assert sbin_only, "the host has no command in /usr/sbin alone"
    root = _tree(tmp_path / "r", {f"app/bin/{sbin_only[0]}": "x", "app/bin/ls": "x", "app/bin/mytool": "x"})
    evidence = harden(root, None, tmp_path / "q", workdir="/app", env={})
    assert {e.path for e in evidence} == {f"/app/bin/{sbin_only[0]}", "/app/bin/ls"}


# -- the resolver -----------------------------------------------------------------------------------


def test_the_resolver_reads_dots_empty_parts_and_the_verifiers_mounts_as_text(tmp_path):
    root = _tree(tmp_path / "r", {"app/real.txt": "x"})
    for d in ("tests", "logs", "solution"):
        (root / d).mkdir()
    os.symlink("/app", root / "tests/a")  # a link planted where the verifier mounts its own /tests
    os.symlink("/app", root / "logs/b")
    os.symlink("/app", root / ".agentmill/c")
    os.symlink("/app", root / "solution/d")
    os.symlink("/etc/passwd", root / "app/hosts")  # /etc is the host's: not looked at in the rootfs
    h = Hardening(root, None, tmp_path / "q")
    assert h.resolve("/tests/a/x") == "/tests/a/x"  # inside the sandbox /tests/a is not the agent's link
    assert h.resolve("/logs/b/x") == "/logs/b/x"
    assert h.resolve("/.agentmill/c") == "/.agentmill/c"
    assert h.resolve("/solution/d/x") == "/solution/d/x"
    assert h.resolve("/app//./real.txt") == "/app/real.txt"
    assert h.resolve("/../../app/./../app/real.txt") == "/app/real.txt"  # '..' at the root stays at the root
    assert h.resolve("/app/hosts") == "/etc/passwd"
    assert h.resolve("/app/missing/../real.txt") == "/app/real.txt"


def test_the_resolver_follows_forty_links_and_calls_the_forty_first_a_loop(tmp_path):
    root = _tree(tmp_path / "r", {"app/end.txt": "x"})
    for i in range(41):
        os.symlink(f"l{i + 1}" if i < 40 else "end.txt", root / f"app/l{i}")
    h = Hardening(root, None, tmp_path / "q")
    assert h.resolve("/app/l1") == "/app/end.txt"  # 40 hops
    assert h.resolve("/app/l0") is None  # 41


@pytest.mark.parametrize(
    ("target", "moved"),
    [
        ("/tests", True),
        ("/tests/x", True),
        ("/testsuite", False),
        ("/logs", True),
        ("/dev/stdin", True),
        ("/dev/null", False),
    ],
)
def test_a_link_is_moved_aside_exactly_when_it_resolves_to_a_protected_path(tmp_path, target, moved):
    root = _tree(tmp_path / "r", {})
    os.symlink(target, root / "app/l")
    evidence = _pass(tmp_path, root)
    assert [(e.path, e.kind.value) for e in evidence] == ([("/app/l", "protected_link")] if moved else [])
    if moved:
        assert evidence[0].detail == f"link to {target!r} resolves to {target}; moved aside"


def test_a_link_loop_is_moved_aside_as_a_loop(tmp_path):
    root = _tree(tmp_path / "r", {})
    os.symlink("b", root / "app/a")
    os.symlink("a", root / "app/b")
    evidence = _pass(tmp_path, root)
    # once /app/a is moved aside, /app/b dangles: no loop is left to move
    assert [(e.path, e.detail) for e in evidence] == [("/app/a", "link to 'b' resolves to a loop; moved aside")]


# -- kinds, modes, inodes ---------------------------------------------------------------------------


def test_what_was_planted_is_described_by_kind_and_mode(tmp_path):
    root = _tree(tmp_path / "r", {"logs/reward.txt": "1"})
    os.chmod(root / "logs/reward.txt", 0o640)
    (root / "logs/sub").mkdir()
    (root / "logs/sub/f").write_text("x")
    os.chmod(root / "logs/sub", 0o750)
    os.symlink("/app", root / "logs/link")
    os.mkfifo(root / "logs/fifo", 0o600)
    os.mkfifo(root / "app/answer", 0o644)
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(root / "app/sock"))
    s.close()
    os.chmod(root / "app/sock", 0o755)
    assert {p: d for p, (_, d) in found(_pass(tmp_path, root)).items()} == {
        "/logs/fifo": "planted before verification (FIFO, mode 0600); moved aside",
        "/logs/link": "planted before verification (link, mode 0777); moved aside",
        "/logs/reward.txt": "planted before verification (file, mode 0640); moved aside",
        "/logs/sub": "planted before verification (folder, mode 0750); moved aside",
        "/app/answer": "FIFO, mode 0644: a reader of it would hang; moved aside",
        "/app/sock": "socket, mode 0755: a reader of it would hang; moved aside",
    }


def test_a_hard_link_to_a_planted_file_or_to_one_inside_a_planted_folder_is_caught(tmp_path):
    root = _tree(tmp_path / "r", {"logs/reward.txt": "1", "tests/sub/expected.txt": "55"})
    os.link(root / "logs/reward.txt", root / "app/a")
    os.link(root / "tests/sub/expected.txt", root / "app/b")
    (root / "app/c").write_text("1")  # same content, its own inode: the agent's file
    evidence = {(e.path, e.kind.value) for e in _pass(tmp_path, root)}
    assert {("/app/a", "protected_link"), ("/app/b", "protected_link")} <= evidence
    assert not any(path == "/app/c" for path, _ in evidence)


@pytest.mark.parametrize(
    ("init", "moved"),
    [
        ("__init__.py", True),
        ("__init__.pyc", True),
        ("__init__.cpython-311-x86_64-linux-gnu.so", True),
        ("__init__.txt", False),
        ("helpers.so", False),
        (None, False),  # a namespace package: Python prefers the real module to it
    ],
)
def test_a_folder_shadows_a_module_only_as_a_package(tmp_path, init, moved):
    root = _tree(tmp_path / "r", {"app/json/data.txt": "x"})
    if init:
        (root / "app/json" / init).write_text("x")
    evidence = [(e.path, e.kind.value) for e in _pass(tmp_path, root)]
    assert evidence == ([("/app/json", "shadow_module")] if moved else [])


# -- reading files the agent made -------------------------------------------------------------------


def test_a_file_is_read_without_following_a_link_or_waiting_on_a_fifo(tmp_path):
    (tmp_path / "f").write_bytes(b"x" * ((1 << 20) + 5))
    assert _head(tmp_path / "f") == b"x" * (1 << 20)
    os.symlink(tmp_path / "f", tmp_path / "l")
    with pytest.raises(OSError):
        _head(tmp_path / "l")
    os.mkfifo(tmp_path / "p")
    assert _head(tmp_path / "p") == b""  # no writer: an empty read, not a hang


def test_undecodable_shell_files_are_read_leniently(tmp_path):
    template = _tree(tmp_path / "t", {})
    (template / "root/.bashrc").write_bytes(b"# \xff\xfe\nexport PATH=/opt:$PATH\n")
    root = _copy(template, tmp_path / "r")
    (root / "root/.bashrc").write_bytes(b"# \xff\xfe\nexport PATH=/opt:$PATH\n# \xfa\n")
    assert _pass(tmp_path, root, template) == []  # the PATH line is the image's own
    (root / "root/.bashrc").write_bytes(b"# \xff\nexport PYTEST_ADDOPTS=-x\n")
    assert set(found(_pass(tmp_path, root, template, q="q2"))) == {"/root/.bashrc"}


def test_a_steering_function_on_a_later_added_line_is_found(tmp_path):
    root = _tree(tmp_path / "r", {"root/.bashrc": "alias ll='ls -l'\npytest() { echo passed; }\n"})
    assert found(_pass(tmp_path, root))["/root/.bashrc"][0] == "shell_startup"


def test_the_homes_under_home_count(tmp_path):
    root = _tree(tmp_path / "r", {"home/dev/.profile": "export PATH=/evil:$PATH\n", "home/dev/notes": "PATH=/x"})
    assert set(found(_pass(tmp_path, root))) == {"/home/dev/.profile"}


def test_a_package_at_the_root_shadows_too(tmp_path):
    root = _tree(tmp_path / "r", {"json/__init__.py": "x"})
    assert found(_pass(tmp_path, root, workdir="/app")) == {
        "/json": ("shadow_module", "package 'json' shadows the standard library; moved aside")
    }


def test_a_read_only_logs_folder_with_only_mount_points_is_opened(tmp_path):
    root = _tree(tmp_path / "r", {})
    (root / "logs/agent").mkdir(parents=True)
    os.chmod(root / "logs", 0o555)
    assert _pass(tmp_path, root) == []
    assert stat.S_IMODE(os.stat(root / "logs").st_mode) == 0o755


def test_a_non_folder_mount_point_does_not_end_the_check_of_the_others(tmp_path):
    root = _tree(tmp_path / "r", {"tests/x": "planted"})
    (root / "logs").write_text("1")
    assert set(found(_pass(tmp_path, root))) == {"/logs", "/tests/x"}


def test_a_folder_the_pass_cannot_list_is_opened_up_and_walked(tmp_path, monkeypatch):
    # as a non-root host sees a folder the agent made mode 000 (as root the listing never fails)
    real = os.listdir

    def listdir(path="."):
        if Path(path).is_dir() and stat.S_IMODE(os.stat(path).st_mode) & 0o700 != 0o700:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    root = _tree(tmp_path / "r", {})
    (root / "app/locked").mkdir()
    os.symlink("/tests", root / "app/locked/l")
    os.chmod(root / "app/locked", 0o000)
    monkeypatch.setattr(hardening.os, "listdir", listdir)
    assert set(found(_pass(tmp_path, root))) == {"/app/locked/l"}
    assert stat.S_IMODE(os.stat(root / "app/locked").st_mode) == 0o700


def test_an_extension_init_added_to_the_images_own_package_is_the_agents(tmp_path):
    # Python loads an extension __init__ before __init__.py: the image's source one staying as it was
    # does not make the package the image's (planted: only the first __init__ found checked; caught)
    template = _tree(tmp_path / "t", {"app/csv/__init__.py": "the image's own"})
    root = _copy(template, tmp_path / "r")
    (root / "app/csv/__init__.cpython-311-x86_64-linux-gnu.so").write_text("x")
    assert set(found(_pass(tmp_path, root, template))) == {"/app/csv"}
    assert _pass(tmp_path, _copy(template, tmp_path / "r2"), template, q="q2") == []  # honest twin
