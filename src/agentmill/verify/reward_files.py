"""Reading the reward files from the host side, as hostile input.

The verifier's /logs/verifier is a host folder bind-mounted into the sandbox. It is read only after
every process in the sandbox is dead (a program the tests ran may have left a daemon rewriting
the reward), without following links (O_NOFOLLOW, relative to the folder's own descriptor),
regular files only, size-capped. A reward file that is pinned read-only, hard-linked, a link or
not a regular file, or that changed after the test script ended, is tamper evidence.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from agentmill.verify.tamper import Tamper, TamperKind

NAMES = ("reward.txt", "reward.json")
# What a test script hands a judged step on the host (verify/judged.py): read, and checked for
# rewrites by leftover processes, exactly like the reward files.
JUDGE_INPUT = "judge_input.json"
READ = NAMES + (JUDGE_INPUT,)
MAX_BYTES = 1 << 20


@dataclass
class RewardFiles:
    """What the reward files held at one moment: name -> (identity, bytes); None where absent."""

    files: dict[str, tuple[tuple, bytes] | None] = field(default_factory=dict)
    evidence: list[Tamper] = field(default_factory=list)

    def data(self, name: str) -> bytes | None:
        entry = self.files.get(name)
        return entry[1] if entry else None


def read_reward_files(logs: Path) -> RewardFiles:
    out = RewardFiles()
    try:
        dfd = os.open(logs, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        out.evidence.append(
            Tamper(kind=TamperKind.REWARD_FILE, path="/logs/verifier", detail=f"unreadable: {e.strerror}")
        )
        return out
    try:
        st = os.fstat(dfd)
        if not st.st_mode & stat.S_IWUSR:
            out.evidence.append(
                Tamper(
                    kind=TamperKind.REWARD_FILE,
                    path="/logs/verifier",
                    detail=f"the reward folder was pinned read-only (mode {stat.S_IMODE(st.st_mode):04o})",
                )
            )
        for name in READ:
            out.files[name] = _read_one(dfd, name, out.evidence)
    finally:
        os.close(dfd)
    return out


def _read_one(dfd: int, name: str, evidence: list[Tamper]) -> tuple[tuple, bytes] | None:
    where = f"/logs/verifier/{name}"
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            target = os.readlink(name, dir_fd=dfd)
            evidence.append(
                Tamper(kind=TamperKind.REWARD_FILE, path=where, detail=f"is a link to {target!r}; not followed")
            )
        else:
            evidence.append(Tamper(kind=TamperKind.REWARD_FILE, path=where, detail=f"unreadable: {e.strerror}"))
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            evidence.append(Tamper(kind=TamperKind.REWARD_FILE, path=where, detail="not a regular file"))
            return None
        if st.st_nlink > 1:
            evidence.append(
                Tamper(kind=TamperKind.REWARD_FILE, path=where, detail=f"hard-linked ({st.st_nlink} names)")
            )
        if not st.st_mode & stat.S_IWUSR:
            evidence.append(
                Tamper(
                    kind=TamperKind.REWARD_FILE,
                    path=where,
                    detail=f"pinned read-only (mode {stat.S_IMODE(st.st_mode):04o}): the test script could not write it",
                )
            )
        data = os.read(fd, MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            data = data[:MAX_BYTES]
        return (st.st_ino, st.st_size, st.st_mtime_ns), data
    finally:
        os.close(fd)


def rewritten(at_exit: RewardFiles, final: RewardFiles) -> list[Tamper]:
    """Reward files that changed between the test script's exit and the end of every process."""
    out = []
    for name in READ:
        if at_exit.files.get(name) != final.files.get(name):
            out.append(
                Tamper(
                    kind=TamperKind.REWARD_FILE,
                    path=f"/logs/verifier/{name}",
                    detail="changed after the test script ended (a leftover process wrote it)",
                )
            )
    return out
