import pytest

from agentmill.errors import NeedsContainerError
from agentmill.images.base import check_base
from agentmill.images.dockerfile import parse_dockerfile, parse_env, split_flags, substitute


def test_parse_continuations_comments_heredoc(tmp_path):
    df = tmp_path / "Dockerfile"
    df.write_text(
        "# comment\nFROM python:3.11-slim AS base\n\nRUN apt-get update && \\\n"
        "    # inner comment\n    apt-get install -y git\nRUN <<EOF\necho one\necho two\nEOF\n"
        'CMD ["bash"]\n'
    )
    steps = parse_dockerfile(df)
    assert [s.keyword for s in steps] == ["FROM", "RUN", "RUN", "CMD"]
    assert steps[1].args == "apt-get update &&  apt-get install -y git"
    assert steps[2].heredoc == "echo one\necho two\n" and steps[2].heredoc_end == "EOF"
    assert steps[3].exec_form() == ["bash"]
    assert steps[2].line == 7


def test_unclosed_heredoc_names_the_line(tmp_path):
    df = tmp_path / "Dockerfile"
    df.write_text("FROM debian\nRUN <<EOF\necho\n")
    with pytest.raises(Exception, match="line 2"):
        parse_dockerfile(df)


def test_substitution_and_env_forms():
    assert substitute("${A}/x/$B/${C:-dflt}/${A:+alt}", {"A": "a", "B": "b"}) == "a/x/b/dflt/alt"
    assert parse_env('A=1 B="two words" C=') == {"A": "1", "B": "two words", "C": ""}
    assert parse_env("LEGACY some value") == {"LEGACY": "some value"}
    assert split_flags("--chown=1:1 --chmod=755 src dest") == ({"chown": "1:1", "chmod": "755"}, ["src", "dest"])
    assert split_flags('["a b", "c"]') == ({}, ["a b", "c"])


@pytest.mark.parametrize(
    "image",
    [
        "debian:bookworm-slim",
        "python:3.11-slim",
        "ubuntu:24.04",
        "ghcr.io/laude-institute/t-bench/python-3-13:20250620",
        "buildpack-deps:bookworm",
    ],
)
def test_debian_family_bases_run_on_host(image):
    check_base(image)  # no exception


@pytest.mark.parametrize(
    "image", ["alpine:3.20", "python:3.12-alpine", "fedora:40", "rockylinux:9", "scratch", "mycorp/secret-image:1"]
)
def test_foreign_bases_need_containers(image):
    with pytest.raises(NeedsContainerError):
        check_base(image)


def test_python_version_mismatch_is_noted():
    notes = check_base("python:3.13-slim-bookworm")
    assert any("3.13" in n for n in notes)
