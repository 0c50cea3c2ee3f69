"""Whose fault is a verifier sandbox that did not start: the agent's final state, or the machinery's.

An agent can damage its own tree so that the verifier's sandbox cannot start over it (`rm -rf /app`,
`chmod 000` on a mount point's folder, a folder replaced by a file, a looping link). Counted as a
sandbox_error, that wrong answer would be excluded from pass@k and rerun by `--retry infra`: a
policy could turn its failures into reruns. So a failed start is tried once more (a passing
transient), then the same verifier sandbox (mounts, limits, environment) is started over the
image's pristine tree: if that starts, the only difference was the agent's state, and the trial is
the agent's failure. If it does not start either, the machinery is at fault: sandbox_error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
from pathlib import Path

from agentmill.errors import SandboxError
from agentmill.images import Image
from agentmill.sandbox.command import run_command
from agentmill.sandbox.protocol import SandboxSpec

_CONTROL_TIMEOUT = 30.0


async def starts_over_pristine_tree(image: Image, spec: SandboxSpec, scratch: Path) -> bool:
    """Whether `spec`'s sandbox starts when its root is a fresh copy of the image's template."""
    pristine = scratch / "control-rootfs"
    await asyncio.to_thread(shutil.rmtree, pristine, True)
    try:
        root = await asyncio.to_thread(image.instantiate, pristine)
        control = dataclasses.replace(spec, rootfs=root)
        try:
            # the spec's environment comes with it (every exec starts from the sandbox's base_env);
            # the bound matters: an image whose `true` never returns must not hold the trial
            run = await run_command(control, ["/usr/bin/true"], timeout=_CONTROL_TIMEOUT)
        except SandboxError:
            return False
        return run.marks.startswith("s")
    except OSError:
        return False  # the template itself could not be copied: not the agent's doing
    finally:
        await asyncio.to_thread(shutil.rmtree, pristine, True)
