"""What a test script asks to install is read from it, and resolved into a layer with the network
(PyPI, as a Dockerfile's RUN steps reach it): versions honoured, a missing version replaced by the
newest and said so, a missing package reported."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agentmill.tasks import load_task, write_task
from agentmill.verify.test_deps import ensure_test_deps
from agentmill.verify.test_deps_scan import Requests, _scan, requested


def scan(text: str, test_dirs: list[Path] | None = None) -> Requests:
    out = Requests()
    _scan(text, out, test_dirs or [])
    return out


def test_the_install_forms_of_public_test_scripts():
    tb = scan(
        "uv venv .tbench-testing\nsource .tbench-testing/bin/activate\n"
        "uv pip install pytest==8.4.1 rdflib==7.1.4\nuv run pytest $TEST_DIR/test_outputs.py -rA\n"
    )
    assert tb.packages == ["pytest==8.4.1", "rdflib==7.1.4"]
    assert scan(
        "python -m pip install \\\n    pytest==8.2.0 \\\n    numpy==1.26.4\\\n    scipy==1.16.3\n"
    ).packages == ["pytest==8.2.0", "numpy==1.26.4", "scipy==1.16.3"]
    assert scan(
        "uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 pytest --ctrf /logs/x.json /tests/t.py"
    ).packages == ["pytest==8.4.1", "pytest-json-ctrf==0.3.5"]
    assert scan("uv add requests 'httpx[http2]==0.27' && uv run --with=pandas,numpy pytest").packages == [
        "requests",
        "httpx[http2]==0.27",
        "pandas",
        "numpy",
    ]
    assert scan("VAR=1 sudo pip3 install -q --no-cache-dir six  # comment pip install nope\n").packages == ["six"]
    odd = scan("if true; then pip install $EXTRA -e . 'numpy>=1.2,<2'; fi\n# pip install commented\n")
    assert odd.packages == ["numpy>=1.2,<2"] and odd.skipped == ["$EXTRA", "-e ."]
    assert scan("uvx ruff@0.6.0 check /app\npytest /tests -k 'not pip install x'\n").packages == ["ruff==0.6.0"]


def test_requirements_files_are_read_from_the_tasks_tests(tmp_path):
    root = write_task(
        tmp_path / "t",
        instruction="x",
        test_sh="pip install -r /tests/requirements.txt\npytest /tests\n",
        test_files={"requirements.txt": "tomli-w==1.0.0  # pinned\n-i https://x\niniconfig\n"},
    )
    assert requested(load_task(root)).packages == ["tomli-w==1.0.0", "iniconfig"]


def test_resolution_honours_versions_and_says_what_it_could_not(tmp_path):
    python = Path(sys.executable)  # a Python with pip, as the toolkit's venv is
    deps = ensure_test_deps(
        ["tomli-w==1.0.0", "six==99.0.0", "agentmill-no-such-package-31"], python, root=tmp_path / "layers"
    )
    assert deps.installed == ["tomli-w==1.0.0", "six"]
    assert (deps.path / "site/tomli_w-1.0.0.dist-info").is_dir()
    assert any("six==99.0.0" in n and "newest" in n for n in deps.notes)
    assert list(deps.unresolved) == ["agentmill-no-such-package-31"]
    assert (deps.path / "unresolved").read_text().startswith("agentmill-no-such-package-31\t")
    again = ensure_test_deps(
        ["six==99.0.0", "agentmill-no-such-package-31", "tomli-w==1.0.0"], python, root=tmp_path / "layers"
    )
    assert again.path == deps.path  # keyed by what was asked, in any order: built once
    assert json.loads((deps.path / "result.json").read_text())["installed"] == deps.installed


def test_an_unreachable_index_is_tried_again_later_not_probed_package_by_package(tmp_path, monkeypatch):
    # A real pip against an index on a closed local port: one attempt, every package unresolved
    # with the reason, and the layer is rebuilt once RETRY_AFTER has passed.
    import socket

    from agentmill.verify import test_deps

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{port}/simple")
    monkeypatch.setenv("PIP_NO_INDEX", "")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    deps = ensure_test_deps(["tomli-w==1.0.0", "six"], Path(sys.executable), root=tmp_path / "layers")
    assert deps.installed == [] and set(deps.unresolved) == {"tomli-w==1.0.0", "six"}
    assert all("could not be reached" in why for why in deps.unresolved.values())
    assert test_deps._fresh(deps.path)
    monkeypatch.setattr(test_deps, "RETRY_AFTER", 0.0)
    assert not test_deps._fresh(deps.path)  # the next trial tries the index again
