"""The test suite cannot reach the network: only loopback connections are allowed (pytest-socket).

Configured in ``pyproject.toml`` (``--allow-hosts=127.0.0.1,::1,localhost``). The outside
address used is 192.0.2.1 (TEST-NET-1, RFC 5737: reserved for documentation, never routed),
and the guard is checked to be installed before any connection is attempted, so a broken
configuration fails the test without sending a packet.
"""

from __future__ import annotations

import socket
import threading

import pytest
import pytest_socket
from pytest_socket import SocketConnectBlockedError

OUTSIDE = ("192.0.2.1", 443)


@pytest.mark.filterwarnings("ignore:A test tried to use socket.socket.connect:UserWarning")
def test_outside_address_is_refused() -> None:
    # Given the suite's configuration: socket.connect is replaced by pytest-socket's guard
    assert socket.socket.connect is not pytest_socket._true_connect, "network block not installed"
    # When a test connects to an address outside the machine
    # Then the guard refuses before any packet is sent
    with pytest.raises(SocketConnectBlockedError):
        socket.create_connection(OUTSIDE, timeout=0.5)


def test_loopback_is_allowed() -> None:
    # Given a server listening on 127.0.0.1 (where the fake API servers run)
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[bytes] = []

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            accepted.append(conn.recv(16))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    # When a test connects to it
    with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
        client.sendall(b"ping")
    thread.join(timeout=5)
    server.close()
    # Then the connection goes through
    assert accepted == [b"ping"]
