"""Enough open files for hundreds of trials in flight.

Each live trial holds several descriptors in this process: the launcher's answer socket and the
sandbox's pidfd, the guest's pinned socket, the tmux channel, a model connection. At 256 in flight
that passes the common soft limit of 1024 (systemd's default), and the next socket fails with
EMFILE. The hard limit is the administrator's; the soft one is ours to raise up to it, once per
process, before the first trial.
"""

from __future__ import annotations

import resource

CEILING = 1 << 20  # never ask for more than this, whatever an unlimited hard limit allows

_raised = False


def allow_open_files() -> int:
    """Raise this process's soft RLIMIT_NOFILE to its hard limit (at most CEILING). Returns the
    soft limit now in force."""
    global _raised
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if _raised:
        return soft
    _raised = True
    want = CEILING if hard == resource.RLIM_INFINITY else min(hard, CEILING)
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):  # a sandbox or seccomp policy that refuses: keep what we have
            pass
    return soft
