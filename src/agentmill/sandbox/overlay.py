"""The bubblewrap backend over an overlay, as a backend of its own so the conformance suite runs it.

Trials of overlay images pass `SandboxSpec.lower` themselves (images/build.py). Given a plain spec,
this backend makes one: the spec's rootfs becomes the read-only lower layer and the sandbox writes
into a fresh upper folder beside it, which is what trials get with AGENTMILL_OVERLAY=1.
"""

from __future__ import annotations

import dataclasses

from agentmill.sandbox.bwrap import BwrapSandbox, prepare_root
from agentmill.sandbox.protocol import SandboxSpec
from agentmill.sandbox.registry import sandbox_backend


@sandbox_backend("bwrap-overlay")
class BwrapOverlaySandbox(BwrapSandbox):
    def __init__(self, spec: SandboxSpec, *, name: str | None = None):
        if spec.lower is None:
            upper = spec.rootfs.with_name(spec.rootfs.name + ".upper")
            upper.mkdir(exist_ok=True)
            prepare_root(spec.rootfs)
            spec = dataclasses.replace(spec, lower=spec.rootfs, rootfs=upper)
        super().__init__(spec, name=name)
