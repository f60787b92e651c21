"""The unit tier cannot reach the network: the core is pure and must stay that way."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import pytest_socket


@pytest.fixture(autouse=True)
def _no_network() -> Iterator[None]:
    pytest_socket.disable_socket(allow_unix_socket=False)
    yield
    pytest_socket.enable_socket()
