"""The unit tier's guard (tests/unit/conftest.py): a unit test reaches no network, while the threads
of a running system that its worker started earlier keep theirs."""

from __future__ import annotations

import socket
import threading

import pytest

from tests.unit.conftest import NetworkBlocked


def test_a_unit_test_can_open_no_socket_nor_resolve_a_name() -> None:
    with pytest.raises(NetworkBlocked):
        socket.create_connection(("127.0.0.1", 9))
    with pytest.raises(NetworkBlocked):
        socket.getaddrinfo("localhost", 80)


def test_another_thread_keeps_the_network() -> None:
    outcome: list[str] = []

    def open_one() -> None:
        try:
            socket.socket().close()
            socket.getaddrinfo("127.0.0.1", 80)
            outcome.append("opened")
        except NetworkBlocked as blocked:
            outcome.append(str(blocked))

    thread = threading.Thread(target=open_one)
    thread.start()
    thread.join()
    assert outcome == ["opened"]
