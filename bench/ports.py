"""A free TCP port on 127.0.0.1 for a server that a benchmark or test starts, kills and starts
again on the same port.

``bind(("127.0.0.1", 0))`` hands out a port from the kernel's ephemeral range, the same range
every outgoing connection on the machine draws its local port from; while such a server is
down, any connection (a database client, an HTTP request) may take its port, and the restart
fails with "address already in use". A port just below that range is never taken that way.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
SPAN = 12000  # how far below the ephemeral range ports are drawn from


def ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (32768 where it cannot be read)."""
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A port free now, below the ephemeral range where it has room (else any free one)."""
    high = ephemeral_start() - 1
    low = max(1024, high - SPAN)
    draw = random.SystemRandom()  # not the seeded module state a test may have set
    for _ in range(200 if high - low >= 100 else 0):
        port = draw.randint(low, high)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
