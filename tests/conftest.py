"""Shared test configuration: hypothesis profiles and the anyio backend."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=40,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio (trio is not a dependency)."""
    return "asyncio"


# No test touches the network: only loopback (and Unix sockets) may be connected to.
import ipaddress  # noqa: E402
import socket  # noqa: E402

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _check_address(sock: socket.socket, address: object) -> None:
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    host = address[0] if isinstance(address, tuple) else address
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConnectionRefusedError(f"tests may only connect to loopback, not {host!r}")


def _guarded_connect(self: socket.socket, address: object) -> None:
    _check_address(self, address)
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    _check_address(self, address)
    return _real_connect_ex(self, address)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path, parent):  # type: ignore[no-untyped-def]
    """Collect the test modules as tests only, not also as doctest modules (``--doctest-modules`` is for the package):
    a module that skips at import (the conformance modules without the official code) is then one skip, not two."""
    from _pytest.doctest import DoctestModule

    collected = yield
    return [c for c in collected if not isinstance(c, DoctestModule)]
