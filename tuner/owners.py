"""Lease holders: the name a process holds tuning-job leases under, and whether the process a
name stands for is provably gone.

``process_owner()`` is ``host:pid:token:ticks:pidns:boot``: readable (host and process id
first), unique (a random token), and enough for another process on the same machine to tell
that the holder has ended: the same boot (``/proc/sys/kernel/random/boot_id``), the same PID
namespace (``/proc/self/ns/pid``: a process in another container may have the same number),
and no process with that id that started at that tick (so a reused id is not mistaken for the
holder). A lease whose holder is gone is as free as an expired one: ``tuner resume`` after a
``kill -9`` need not wait out the lease. Anywhere this cannot be told (another machine, no
``/proc``), the lease is left to expire.
"""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path

HOST_CHARS = 64  # owners are stored in 128 characters


def start_ticks(pid: int) -> int:
    """When process ``pid`` started, in clock ticks since boot (0 if it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[19])


def _machine() -> tuple[str, str, str]:
    """This host's name, this boot's id and this process's PID namespace ('' where unknown)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
        namespace = str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        boot = namespace = ""
    return socket.gethostname()[:HOST_CHARS].replace(":", "-"), boot, namespace


def process_owner() -> str:
    """A name for this process as the holder of tuning-job leases (see the module contract)."""
    host, boot, namespace = _machine()
    pid = os.getpid()
    return f"{host}:{pid}:{secrets.token_hex(3)}:{start_ticks(pid)}:{namespace}:{boot}"


def owner_is_gone(owner: str | None) -> bool:
    """True only when ``owner`` names a process of this machine, boot and PID namespace that
    no longer runs; False for any other (or an older, shorter name), which may well live."""
    parts = (owner or "").split(":")
    if len(parts) != 6 or not all(p.isdigit() for p in (parts[1], parts[3])):
        return False
    host, pid, _token, ticks, namespace, boot = parts
    if not boot or (host, boot, namespace) != _machine():
        return False
    return start_ticks(int(pid)) != int(ticks)
