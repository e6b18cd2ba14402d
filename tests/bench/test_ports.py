"""bench/ports.py: ports for servers restarted on the same port lie outside the range that
outgoing connections take their local ports from."""

from __future__ import annotations

import socket

from bench import ports


def test_free_ports_lie_below_the_ephemeral_range_and_are_free():
    start = ports.ephemeral_start()
    drawn = {ports.free_port() for _ in range(20)}
    assert len(drawn) > 1  # drawn, not one fixed port
    for port in drawn:
        assert max(1024, start - 1 - ports.SPAN) <= port < start
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # still free


def test_a_range_with_no_room_below_falls_back_to_any_free_port(monkeypatch):
    monkeypatch.setattr(ports, "ephemeral_start", lambda: 1030)
    port = ports.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
