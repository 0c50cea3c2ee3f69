"""The bubblewrap backend over an overlay, as a backend of its own so the conformance suite runs it.

Trials of overlay images pass `SandboxSpec.lower` themselves (images/build.py). Given a plain spec,
this backend makes one: the spec's rootfs becomes the read-only lower layer and the sandbox writes
into a fresh upper folder beside it, which is what trials of big templates get (images/trial_fs.py).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

from agentmill.sandbox.bwrap import BwrapSandbox, prepare_root
from agentmill.sandbox.protocol import SandboxSpec
from agentmill.sandbox.registry import sandbox_backend
from agentmill.sandbox.uids import TEMPLATE_UID


def own_template(rootfs: Path) -> None:
    """Give a template to TEMPLATE_UID, once: an overlay's daemon reads it through that uid alone
    (as root; without root the template is ours already). Its modes are left as they are."""
    marker = rootfs.with_name(rootfs.name + ".template-owned")
    if os.geteuid() != 0 or marker.exists():
        return
    subprocess.run(["chown", "-R", "-h", f"{TEMPLATE_UID}:{TEMPLATE_UID}", str(rootfs)], check=True)
    marker.touch()


@sandbox_backend("bwrap-overlay")
class BwrapOverlaySandbox(BwrapSandbox):
    def __init__(self, spec: SandboxSpec, *, name: str | None = None):
        if spec.lower is None:
            upper = spec.rootfs.with_name(spec.rootfs.name + ".upper")
            upper.mkdir(exist_ok=True)
            prepare_root(spec.rootfs)
            own_template(spec.rootfs)
            spec = dataclasses.replace(spec, lower=spec.rootfs, rootfs=upper)
        super().__init__(spec, name=name)
