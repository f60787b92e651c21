"""The unit tier cannot reach the network: the core is pure and must stay that way.

The guard is the test's own thread's: a worker that ran integration tests earlier keeps its running
system (tests/integration/conftest.py) for the rest of the session, and that system's threads (its
gateway, its pollers) still talk to its emulator while a unit test runs beside them.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest


class NetworkBlocked(RuntimeError):
    """A unit test tried to open a socket or resolve a name."""


@pytest.fixture(autouse=True)
def _no_network() -> Iterator[None]:
    test_thread = threading.current_thread()
    real_socket, real_getaddrinfo = socket.socket, socket.getaddrinfo

    def blocked_here() -> bool:
        return threading.current_thread() is test_thread

    class GuardedSocket(real_socket):  # type: ignore[misc, valid-type]
        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            if blocked_here():
                raise NetworkBlocked("a unit test opened a socket")
            return super().__new__(cls, *args, **kwargs)

    def guarded_getaddrinfo(*args: Any, **kwargs: Any) -> Any:
        if blocked_here():
            raise NetworkBlocked("a unit test resolved a name")
        return real_getaddrinfo(*args, **kwargs)

    socket.socket = GuardedSocket  # type: ignore[misc]
    socket.getaddrinfo = guarded_getaddrinfo
    try:
        yield
    finally:
        socket.socket, socket.getaddrinfo = real_socket, real_getaddrinfo  # type: ignore[misc]
