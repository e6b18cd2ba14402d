"""Lease holders: the name a process holds tuning-job leases under, and whether the process a
name stands for is provably gone.

``process_owner()`` is ``host:pid:token:ticks:pidns:boot``: readable (host and process id
first), unique (a random token), and enough for another process on the same machine to tell
that the holder has ended: the same boot (``/proc/sys/kernel/random/boot_id``), the same PID
namespace (``/proc/self/ns/pid``: a process in another container may have the same number),
and no process with that id that started at that tick (so a reused id is not mistaken for the
holder; a process ``/proc`` hides, as ``hidepid=2`` hides other users', is asked with signal
0). A service's worker process holds its leases under its own name, never the service's,
followed by ``:pid:ticks`` of the service (``process_owner(service=...)``): such a holder is
gone only once the service has ended too. While the service runs it decides (it lets the lease
of a worker it saw die run out, so that a worker failing at once is not restarted every scan),
and another service or a ``tuner resume`` on the machine does not take the tuning job over
before the lease runs out (another service did, once per scan). A lease whose holder is gone is
as free as an expired one: ``tuner resume`` after a ``kill -9`` need not wait out the lease.
Anywhere this cannot be told (another machine, no ``/proc``, a ``/proc`` of another
namespace), the lease is left to expire.
"""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path

HOST_CHARS = 40  # owners are stored in 128 characters (a worker's: eight fields)


def start_ticks(pid: int) -> int:
    """When process ``pid`` started, in clock ticks since boot (0 if it is gone)."""
    try:
        return _ticks(Path(f"/proc/{pid}/stat").read_text())
    except OSError:
        return 0


def _ticks(stat: str) -> int:
    """The start time in a ``/proc/PID/stat`` line (after the parenthesised command name)."""
    return int(stat.rsplit(")", 1)[1].split()[19])


def _machine() -> tuple[str, str, str]:
    """This host's name, this boot's id and this process's PID namespace ('' where unknown,
    as where ``/proc`` is another namespace's: its ``self`` is not this process)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
        namespace = str(os.stat("/proc/self/ns/pid").st_ino)
        if int(Path("/proc/self/stat").read_text().split()[0]) != os.getpid():
            boot = namespace = ""
    except (OSError, ValueError):
        boot = namespace = ""
    return socket.gethostname()[:HOST_CHARS].replace(":", "-"), boot, namespace


def process_owner(service: str | None = None) -> str:
    """A name for this process as the holder of tuning-job leases (see the module contract);
    ``service``: the name of the service whose worker this process is, whose process id and
    start are appended."""
    host, boot, namespace = _machine()
    pid = os.getpid()
    own = f"{host}:{pid}:{secrets.token_hex(3)}:{start_ticks(pid)}:{namespace}:{boot}"
    parts = (service or "").split(":")
    if len(parts) == 6 and parts[1].isdigit() and parts[3].isdigit():
        own += f":{parts[1]}:{parts[3]}"
    return own


def owner_text(owner: str | None) -> str:
    """``owner`` as a person reads it: ``process 5846 on vm`` (``... a worker of the service
    in process 77 ...`` for a service's worker); an owner of another form as it is."""
    parts = (owner or "").split(":")
    if len(parts) not in (6, 8) or not parts[1].isdigit():
        return repr(owner)
    worker = f" (a worker of the service in process {parts[6]})" if len(parts) == 8 else ""
    return f"process {parts[1]} on {parts[0]}{worker}"


def owner_is_gone(owner: str | None) -> bool:
    """True only when ``owner`` names a process of this machine, boot and PID namespace that
    no longer runs and, for a service's worker, whose service no longer runs either; False for
    any other (or an older, shorter name), which may well live."""
    parts = (owner or "").split(":")
    if len(parts) not in (6, 8) or not all(p.isdigit() for p in parts[1:4:2] + parts[6:]):
        return False
    host, pid, _token, ticks, namespace, boot = parts[:6]
    if not boot or (host, boot, namespace) != _machine():
        return False
    return _ended(pid, ticks) and (len(parts) == 6 or _ended(parts[6], parts[7]))


def _ended(pid: str, ticks: str) -> bool:
    """Whether the process ``pid`` that started at ``ticks`` (of this machine) has ended."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:  # gone, or hidden (/proc mounted hidepid=2 hides other users')
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except OSError:  # EPERM: it runs, as another user
            return False
        return False
    except OSError:  # there, but not readable by this user (hidepid=1)
        return False
    return _ticks(stat) != int(ticks)  # another process has the id now
