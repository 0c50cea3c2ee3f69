"""Tamper evidence: what the verifier neutralised before or while it judged an agent's final state.

Each record says what was found (`kind`), where (`path`, inside the sandbox) and how it was
handled (`detail`). A trial with any evidence gets no reward, and its trajectory is dropped from
exports by default: RL users may instead keep and penalise it.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict


class TamperKind(str, Enum):
    RUNNER_CONFIG = "runner_config"  # conftest.py / pytest ini sections / plugins outside /tests
    PYTHON_STARTUP = "python_startup"  # sitecustomize.py, usercustomize.py, .pth files
    SHADOW_MODULE = "shadow_module"  # a module shadowing the test runner or the standard library
    SHELL_STARTUP = "shell_startup"  # shell files that set the test run's environment or commands
    PLANTED_TOOL = "planted_tool"  # a command planted where the test script's PATH looks
    PROTECTED_LINK = "protected_link"  # a link that resolves into /tests, /solution, /logs, /proc, ...
    PROTECTED_PATH = "protected_path"  # files planted where the verifier mounts its own (/tests, ...)
    PREPARED_LOGS = "prepared_logs"  # a /logs tree or reward files made before the verifier ran
    ROOT_LAYOUT = "root_layout"  # /bin, /lib64, ... replaced: the interpreters every script uses
    SPECIAL_FILE = "special_file"  # FIFOs and sockets, which hang readers
    REWARD_FILE = "reward_file"  # the reward file was pinned, linked or rewritten after the tests ended
    RUNNER_GUARD = "runner_guard"  # the pytest guard found an untrusted plugin or module at run time
    SUPERVISOR = "supervisor"  # the test run killed the verifier's supervisor or forged its marks


class Tamper(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: TamperKind
    path: str
    detail: str

    def line(self) -> str:
        return f"{self.kind.value} {self.path}: {self.detail}"


# Lines the in-sandbox pytest guard prints on stderr: AGENTMILL_TAMPER<TAB>kind<TAB>path<TAB>detail.
# An agent's program could print one too, but only to its own cost: evidence never adds reward.
MARKER = "AGENTMILL_TAMPER"


def parse_markers(text: str) -> list[Tamper]:
    out = []
    for line in text.splitlines():
        parts = line.strip().split("\t")
        if len(parts) == 4 and parts[0] == MARKER:
            try:
                out.append(Tamper(kind=TamperKind(parts[1]), path=parts[2][:300], detail=parts[3][:300]))
            except ValueError:
                continue
    return out
