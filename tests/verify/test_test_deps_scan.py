"""What test scripts ask to install (verify/test_deps_scan.py), form by form: each row is a script
and exactly the packages and the skipped items read from it. test_test_deps.py has the forms of
public test scripts and the resolution; mutation testing found most single rules here unprotected."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from agentmill.verify.test_deps_scan import Requests, _scan, requested


def scan(text: str, test_dirs: list[Path] | None = None) -> Requests:
    out = Requests()
    _scan(text, out, test_dirs or [])
    return out


@pytest.mark.parametrize(
    ("script", "packages", "skipped"),
    [
        # programs by path, python -m pip, versioned pips; other programs that take `install` or `-m pip`
        ("/opt/x/y/pip install a", ["a"], []),
        ("python3 -m pip install b\npip3.11 install c", ["b", "c"], []),
        ("ls -m pip install no\nnpm install left-pad\npip list install", [], []),
        ("/opt/v=1/pip install d", ["d"], []),  # a path holding '=' is a program, not an assignment
        # uv's forms
        ("uv tool run --with e black==24.1.0 .", ["e", "black==24.1.0"], []),
        ("uv run --with f pytest==8.0 /tests", ["f"], []),  # `uv run`'s command is not a tool to install
        ("uv sync --with no\nfoo tool run --with no\ncargo run --with no", [], []),
        ("uvx --from g tool\nuvx --with=h,i --from=j tool", ["g", "h", "i", "j"], []),
        ("uvx --with=k==1.0 tool", ["k==1.0"], []),
        ("uvx --with-requirements req.txt l==1", ["l==1"], []),
        ("uvx -w m -p 3.12 n==1\nuvx -q -q o==2\nuvx -q p==1 q==2", ["m", "n==1", "o==2", "p==1"], []),
        ("uvx -w\nuvx -w r\nuvx -w s -w t tool", ["r", "s", "t"], []),
        ("uvx u@1@2", [], ["u==1@2"]),
        ("uvx -w u1,u2 tool", ["u1", "u2"], []),
        # install arguments
        ("pip install v -r\npip install --upgrade w", ["v", "w"], ["-r "]),
        ("pip install --editable ./pkg x\npip install y -e", ["x", "y"], ["--editable ./pkg", "-e"]),
        ("pip install -e ./p\npip install a1 -e ./q b1 c1", ["a1", "b1", "c1"], ["-e ./p", "-e ./q"]),
        ("pip install Xlib pyX", ["Xlib", "pyX"], []),
        ("pip install a2 -i https://x b2 c2 --target /t d2", ["a2", "b2", "c2", "d2"], []),
        (
            "pip install 'z >= 1.2' . .. $PKG ./local https://x/y.whl",
            ["z>=1.2"],
            [".", "..", "$PKG", "./local", "https://x/y.whl"],
        ),
        # prefixes, comments and separators
        (
            "exec pip install aa\ntime pip install ab\nfor x in 1; do pip install ac; done\n"
            "if false; then :; else pip install ad; fi\n! pip install ae\nA=1 B=2 pip install af",
            ["aa", "ab", "ac", "ad", "ae", "af"],
            [],
        ),
        ("# note; pip install no\n  # pip install no\n  # indented; pip install no", [], []),
        ("echo 'oops\npip install ag", ["ag"], []),  # an unreadable command does not end the scan
        ("A=1\n--x=1 pip install no", [], []),
    ],
)
def test_each_form(script, packages, skipped):
    r = scan(script)
    assert (r.packages, r.skipped) == (packages, skipped)


def test_requirements_files_are_read_from_the_tests_folders_only(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "req.txt").write_bytes(
        b"# \xff a comment\n\"q1==1\"\n'q2==2'\nq3 >= 2 # why # more\nq4==1; python_version>'3'\n\n-i https://x\n--hash=x\n"
    )
    (tmp_path / "outside.txt").write_text("evil==1\n")
    for ref in ("/tests/req.txt", "$TEST_DIR/req.txt", "${TEST_DIR}/req.txt", "req.txt"):
        r = scan(f"pip install -r {ref}", [tests])
        assert (r.packages, r.skipped) == (["q1==1", "q2==2", "q3>=2", "q4==1"], []), ref
    for flag in ("--requirement", "--requirements"):
        assert scan(f"pip install p0 {flag} req.txt p1", [tests]).packages == [
            "p0",
            "q1==1",
            "q2==2",
            "q3>=2",
            "q4==1",
            "p1",
        ]
    r = scan("pip install -r ../outside.txt -r missing.txt", [tests])
    assert (r.packages, r.skipped) == ([], ["-r ../outside.txt", "-r missing.txt"])


def test_the_scripts_of_a_task_are_its_shell_files_and_its_test_script(tmp_path):
    folder = tmp_path / "tests"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "b.sh").write_text("pip install from-b\n")
    (folder / "a.sh").write_bytes(b"# \xff\npip install from-a\n")
    (folder / "notes.md").write_text("pip install no\n")
    single = tmp_path / "setup.sh"
    single.write_text("pip install from-single\n")
    runner = tmp_path / "run-tests"
    runner.write_text("pip install from-runner\n")
    other = tmp_path / "helper.py"
    other.write_text("# pip install no\nimport os  # ; pip install no\n")
    task = SimpleNamespace(tests_sources=(single, folder, runner, other), test_script="run-tests")
    assert requested(task).packages == ["from-single", "from-a", "from-b", "from-runner"]
