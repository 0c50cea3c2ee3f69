"""Every registered sandbox backend passes the conformance suite; planted defects make it fail."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from agentmill.errors import SandboxError
from agentmill.sandbox import BwrapSandbox, backend_names, create_sandbox, get_backend, sandbox_backend
from agentmill.sandbox.conformance import CHECKS, ConformanceFailure, run_check
from agentmill.sandbox.registry import unregister_backend
from tests.conftest import sandbox

pytestmark = sandbox


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, 180))


_NEEDS = {"bwrap-overlay": "fuse-overlayfs"}  # a backend's extra host tool


@pytest.mark.parametrize("check", sorted(CHECKS))
@pytest.mark.parametrize("backend", backend_names())
def test_backend_conforms(backend, check):
    if backend in _NEEDS and shutil.which(_NEEDS[backend]) is None:
        pytest.skip(f"{_NEEDS[backend]} not installed")
    _run(run_check(check, lambda spec: create_sandbox(spec, backend=backend)))


def test_registry_default_and_errors(monkeypatch):
    assert "bwrap" in backend_names()
    monkeypatch.delenv("AGENTMILL_SANDBOX", raising=False)
    assert get_backend() is BwrapSandbox
    monkeypatch.setenv("AGENTMILL_SANDBOX", "no-such-backend")
    with pytest.raises(
        SandboxError, match="unknown sandbox backend 'no-such-backend'.*known: .*bwrap.*from AGENTMILL_SANDBOX"
    ):
        get_backend()
    with pytest.raises(ValueError, match="already registered"):
        sandbox_backend("bwrap")(type("Other", (BwrapSandbox,), {}))


# -- planted defects: each must be caught by the check that exists for it -------------------------


class _Networked(BwrapSandbox):
    def __init__(self, spec, name=None):
        spec.network = True
        super().__init__(spec, name=name)


class _NoKill(BwrapSandbox):
    """stop() forgets the processes the sandbox started (a backend that only closes its channel)."""

    async def stop(self):
        if self._proc is not None and self._proc.returncode is None:
            await self.exec("true")  # still alive: nothing was killed
        self._proc_keep, self._proc = self._proc, None

    async def exec(self, cmd, **kw):
        if self._proc is None:
            raise SandboxError("sandbox is not running")
        return await super().exec(cmd, **kw)


class _SharedRoot(BwrapSandbox):
    """Every sandbox gets the same root filesystem: one trial's files leak into the next."""

    shared = None

    def __init__(self, spec, name=None):
        if _SharedRoot.shared is None:
            _SharedRoot.shared = spec.rootfs
        spec.rootfs = _SharedRoot.shared
        super().__init__(spec, name=name)


class _Undeclared(BwrapSandbox):
    """Offers the one-command mode and the rest, but declares nothing: callers would never use them."""

    capabilities = frozenset()


class _Overclaimed(BwrapSandbox):
    """Declares a guest socket it does not have: a terminal would connect to nothing."""

    @property
    def guest_socket(self):
        return None


class _HostNetworkAsInternet(BwrapSandbox):
    """Gives a spec that asks for the internet the host's own network: the host's loopback in reach."""

    def __init__(self, spec, name=None):
        if spec.internet:
            spec.internet, spec.network = False, True
        super().__init__(spec, name=name)


@pytest.mark.parametrize(
    "defect, check",
    [
        (_HostNetworkAsInternet, "internet_spares_the_host"),
        (_Networked, "no_network"),
        (_NoKill, "cleanup"),
        (_SharedRoot, "isolation"),
        (_Undeclared, "capabilities"),
        (_Overclaimed, "capabilities"),
    ],
)
def test_conformance_catches_planted_defect(defect, check):
    name = f"planted-{check}"
    sandbox_backend(name)(defect)
    try:
        assert name in backend_names()
        with pytest.raises(ConformanceFailure):
            _run(run_check(check, lambda spec: create_sandbox(spec, backend=name)))
    finally:
        unregister_backend(name)
