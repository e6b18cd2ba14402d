"""``tuner.owners``: a lease holder's name tells another process of the same machine that the
holder has ended, and nothing else is ever called ended."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tuner.owners import owner_is_gone, process_owner, start_ticks


def test_a_live_process_is_not_gone_and_an_ended_one_is() -> None:
    assert not owner_is_gone(process_owner())
    code = "from tuner.owners import process_owner; print(process_owner())"
    ended = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert owner_is_gone(ended)


def test_a_reused_process_id_is_not_taken_for_the_holder() -> None:
    host, pid, token, ticks, namespace, boot = process_owner().split(":")
    assert int(ticks) == start_ticks(os.getpid()) > 0
    earlier = ":".join([host, pid, token, str(int(ticks) - 1), namespace, boot])
    assert owner_is_gone(earlier)  # this id, but a process that started at another tick


def test_anything_that_cannot_be_told_is_not_gone() -> None:
    host, _pid, token, ticks, namespace, boot = process_owner().split(":")
    dead_pid = "4194304"  # PIDs stay below pid_max, at most 4194304: no such process anywhere
    for owner in (
        None,
        "",
        "old-host:123:abcdef",  # a name from before this rule
        ":".join(["another-host", dead_pid, token, ticks, namespace, boot]),
        ":".join([host, dead_pid, token, ticks, "1", boot]),  # another PID namespace
        ":".join([host, dead_pid, token, ticks, namespace, "0badf00d"]),  # another boot
        ":".join([host, "x", token, ticks, namespace, boot]),
    ):
        assert not owner_is_gone(owner), owner
    assert owner_is_gone(":".join([host, dead_pid, token, ticks, namespace, boot]))


def test_a_holder_that_proc_hides_is_asked_with_signal_zero(monkeypatch) -> None:
    """With /proc mounted hidepid=2 (or 1), another user's process has no /proc entry (or an
    unreadable one): its start time read as "gone", and a colleague's resume would have run
    the job twice."""
    import tuner.owners as owners

    host, _pid, token, ticks, namespace, boot = process_owner().split(":")
    hidden = ":".join([host, "1", token, ticks, namespace, boot])  # init: always running
    real_read = Path.read_text
    hide: list[type[OSError]] = []

    def read_text(path: Path, *args: object, **kwargs: object) -> str:
        if str(path) == "/proc/1/stat" and hide:
            raise hide[0]()
        return real_read(path, *args, **kwargs)  # type: ignore[arg-type]

    def eperm(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(Path, "read_text", read_text)
    monkeypatch.setattr(owners.os, "kill", eperm)
    hide.append(FileNotFoundError)  # hidepid=2: no entry; signal 0 says EPERM, it runs
    assert not owner_is_gone(hidden)
    hide[0] = PermissionError  # hidepid=1: an entry, not readable
    assert not owner_is_gone(hidden)


def _ended_process_owner(service: str | None = None) -> str:
    code = f"from tuner.owners import process_owner; print(process_owner(service={service!r}))"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_a_worker_that_ended_is_gone_only_once_its_service_has_ended_too() -> None:
    """Review: service B freed the lease of service A's worker that had ended (A lets it run
    out, so that a worker failing at once is not restarted every scan), and took the tuning
    job over at once, once per other service on the machine."""
    live_service = process_owner()
    worker = _ended_process_owner(service=live_service)
    _host, pid, _token, ticks = live_service.split(":")[:4]
    assert worker.split(":")[6:] == [pid, ticks]
    assert not owner_is_gone(worker)  # its service runs: that service decides
    ended_service = _ended_process_owner()
    assert owner_is_gone(_ended_process_owner(service=ended_service))
    live_worker = process_owner(service=ended_service)
    assert not owner_is_gone(live_worker)  # a worker outliving its killed service lives


def test_a_worker_s_name_fits_the_store_with_the_longest_host(monkeypatch) -> None:
    import socket

    monkeypatch.setattr(socket, "gethostname", lambda: "h" * 255)
    assert len(process_owner(service=process_owner())) <= 128
    assert not owner_is_gone(process_owner(service=process_owner()))


def test_an_owner_reads_as_a_process_on_a_host():
    """``tuner resume`` said "being run by vm:5846:9ec1d0:10234:4026531836:5f2c..."."""
    import socket

    from tuner.owners import owner_text

    host = socket.gethostname()[:40].replace(":", "-")
    assert owner_text(process_owner()) == f"process {os.getpid()} on {host}"
    worker = process_owner(service="box:77:abc:123:ns:boot")
    assert owner_text(worker) == (
        f"process {os.getpid()} on {host} (a worker of the service in process 77)"
    )
    assert owner_text("winner") == "'winner'"  # another form: as it is
