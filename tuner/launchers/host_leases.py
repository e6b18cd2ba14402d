"""Host-wide leases: every tuner process on one machine (the service's workers, two ``tuner
run``s, a comparison beside a service) sees what the others' training jobs hold, so that
together they never hand out more than there is: a GPU (``tuner.launchers.slots``), or the
machine's places for local training jobs (``tuner.launchers.local_limit``).

Leases come in pools (``gpu-<id>`` for each GPU, ``local-jobs``). A lease is a file
``<root>/<pool>/<key hash>`` holding, as JSON, the share of the pool it takes (``share``: 1/k)
and who took it. Its holder keeps it locked (``flock``) for as long as it holds it; the local
launcher passes the locked descriptor on to the job's wrapper, so the lease lives exactly as long
as the job does, even when the tuner that started it dies. A pool's load is the sum of the
shares of its locked leases; a lease file that nobody locks is stale (its holder is gone) and is
removed. Reading loads and taking a lease happen under ``<root>/.lock``, so that no two
processes take the last share.

``root``: ``TUNER_LEASE_DIR`` (or its earlier name ``TUNER_GPU_LEASE_DIR``), else
``<temporary directory>/tuner-leases-<uid>`` (which must be this user's own real directory): one
user's processes share the machine; point several users at one directory to share across them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import math
import os
import stat
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from tuner.errors import LaunchError

LEASE_DIR_ENV = "TUNER_LEASE_DIR"
EARLIER_LEASE_DIR_ENV = "TUNER_GPU_LEASE_DIR"  # its name until local jobs had leases too
GPU_POOL = "gpu-"  # a GPU's pool is ``gpu-<id>``
EPSILON = 1e-6  # shares of 1/3 add up to 1.0000000000000002
WAIT_NOTICE_SECONDS = 60.0  # a wait that goes on is said again at most this often


def host_leases() -> HostLeases:
    """This machine's leases (the module docstring); a configured directory must be absolute.
    The default directory, in a temporary
    directory anyone may write in, must be this user's own real directory: one that another
    user made (or a symbolic link) is refused, so nobody else can drop or forge its leases."""
    variable = LEASE_DIR_ENV if os.environ.get(LEASE_DIR_ENV) else EARLIER_LEASE_DIR_ENV
    configured = os.environ.get(variable)
    if configured:
        if not os.path.isabs(configured):
            raise LaunchError(
                f"{variable} must be an absolute path (tuner processes started in other "
                f"folders would not share a relative one); got {configured!r}"
            )
        return HostLeases(Path(configured))
    return HostLeases(Path(tempfile.gettempdir()) / f"tuner-leases-{os.getuid()}", own=True)


def shares_left(load: float, per_whole: int) -> int:
    """How many more leases of 1/``per_whole`` fit in a pool that ``load`` of is held."""
    return max(0, math.floor(per_whole * (1 - load) + EPSILON))


def gpu_name(gpu: str, machine: str = "") -> str:
    """GPU ``gpu`` of this machine, or ``gpu@machine`` for one of another machine (a remote
    Docker engine's, named by its address): not the same card as this machine's GPU ``gpu``."""
    return f"{gpu}@{machine}" if machine else gpu


def gpu_pool(gpu: str, machine: str = "") -> str:
    """The pool of the leases of GPU ``gpu`` (of ``machine``: see ``gpu_name``)."""
    return GPU_POOL + gpu_name(gpu, machine)


def holders_text(held: Sequence[tuple[float, str]], most: int | None = None) -> str:
    """``job share, ...`` of ``(share, job)`` leases, the largest share first (then by name),
    at most ``most`` of them ("and N more"); "free" for none."""
    ranked = sorted(held, key=lambda lease: (-lease[0], lease[1]))
    shown = ranked if most is None else ranked[:most]
    text = ", ".join(f"{job} {share:.3g}" for share, job in shown) or "free"
    return text + (f" and {len(ranked) - len(shown)} more" if len(shown) < len(ranked) else "")


class WaitNotice:
    """When to say that a tuning job waits for other processes' jobs: as a wait begins, and
    under lasting contention (a place frees, is taken, the wait begins again) at most once per
    ``WAIT_NOTICE_SECONDS``, not at every job start."""

    def __init__(self) -> None:
        self._waiting = False
        self._said_at = -math.inf

    def due(self, waiting: bool) -> bool:
        """Whether to say so now, given whether this pass waits for other processes' jobs."""
        begins = waiting and not self._waiting
        self._waiting = waiting
        if begins and time.monotonic() - self._said_at >= WAIT_NOTICE_SECONDS:
            self._said_at = time.monotonic()
            return True
        return False


class HostLeases:
    """Leases under one root directory (created on first use, mode 0700 when made here);
    ``own``: the directory must be a real directory of this user's (``host_leases``)."""

    def __init__(self, root: Path, own: bool = False) -> None:
        self.root = Path(root)
        self.own = own

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the root's lock: loads read and leases taken inside agree with every process."""
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            if self.own:
                _check_own(self.root)
            fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise LaunchError(
                f"cannot use {self.root} for leases (set {LEASE_DIR_ENV} to a directory "
                f"this user may write in): {exc}"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def load(self, pool: str) -> float:
        """The share of ``pool`` that live leases hold (call inside ``locked``); stale lease
        files are removed on the way."""
        return sum(share for share, _ in self.holders(pool))

    def holders(self, pool: str) -> list[tuple[float, str]]:
        """``(share, job)`` of each live lease in ``pool`` (call inside ``locked``); stale lease
        files are removed on the way."""
        found = []
        with contextlib.suppress(FileNotFoundError):
            for path in self._folder(pool).iterdir():
                lease = _live_lease(path)
                if lease is None:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                else:
                    found.append(lease)
        return found

    def gpus(self) -> list[str]:
        """The GPU ids that have (had) leases here, in sorted order."""
        with contextlib.suppress(FileNotFoundError):
            return sorted(
                unquote(p.name).removeprefix(GPU_POOL)
                for p in self.root.iterdir()
                if p.is_dir() and p.name.startswith(GPU_POOL)
            )
        return []

    def hold(self, pool: str, key: str, share: float, job: str) -> int:
        """Take a lease of ``share`` of ``pool`` for ``key`` (call inside ``locked``); returns
        the locked descriptor (close-on-exec; a launcher passes it to its job on purpose)."""
        path = self._path(pool, key)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a live holder's file is left as is
            os.ftruncate(fd, 0)
            text = json.dumps({"share": share, "job": job, "key": key, "pid": os.getpid()})
            os.write(fd, text.encode())
        except BaseException:
            os.close(fd)
            raise
        return fd

    def is_held(self, pool: str, key: str) -> bool:
        """Whether a live lease for ``key`` in ``pool`` exists (one a job's wrapper still holds
        after the tuner that took it died)."""
        return _live_lease(self._path(pool, key)) is not None

    def forget(self, pool: str, key: str) -> None:
        """Remove ``key``'s lease file in ``pool`` when nobody holds it any more (call inside
        ``locked``, after closing the descriptor)."""
        path = self._path(pool, key)
        if _live_lease(path) is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def _folder(self, pool: str) -> Path:
        return self.root / quote(pool, safe="")

    def _path(self, pool: str, key: str) -> Path:
        return self._folder(pool) / hashlib.sha256(key.encode()).hexdigest()[:32]


def _check_own(root: Path) -> None:
    """Raise ``PermissionError`` unless ``root`` is a real directory this user owns."""
    info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode):
        raise PermissionError(f"{root} is not a directory (a symbolic link?); refused")
    if info.st_uid != os.getuid():
        raise PermissionError(f"{root} belongs to uid {info.st_uid}, not this user's; refused")


def read_held(path: Path) -> Any:
    """The JSON in file ``path`` while some process locks it (a lease, a waiter); None when
    nobody does or it is gone; ``{}`` when it is held but cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
        else:
            return None  # nobody holds it
        try:
            return json.loads(os.pread(fd, 4096, 0))
        except ValueError:
            return {}
    finally:
        os.close(fd)


def _live_lease(path: Path) -> tuple[float, str] | None:
    """``(share, job)`` of a lease file while somebody locks it; None for a stale or missing
    one (an unreadable share counts as a whole GPU: never hand out what might be taken)."""
    lease = read_held(path)
    if lease is None:
        return None
    try:
        share, job = float(lease["share"]), str(lease.get("job", "?"))
    except (ValueError, KeyError, TypeError, AttributeError):
        return 1.0, "?"
    return (share if 0 < share <= 1 else 1.0), job
