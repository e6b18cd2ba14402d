"""Run one training job's command and keep its exit status in a file (stdlib only).

Usage: ``python exit_keeper.py STATUS_FILE PROGRAM [ARG...]``. The local launcher starts every
job through this wrapper, so the job's exit status outlives the tuner: a tuner that was killed
and re-attaches to the job (which is then not its child, so ``waitpid`` cannot tell) reads the
status from ``STATUS_FILE`` (written atomically, ``<code>\\n``, negative for a signal, as
``subprocess`` reports it). The wrapper exits the way the job did (same code, same signal);
SIGTERM, SIGINT and SIGHUP sent to it alone are passed on to the job. Arguments are handed to
the program as argv, never through a shell.
"""

from __future__ import annotations

import os
import signal
import sys

TYPE_CHECKING = False  # typing itself is not imported: it would double the start-up time
if TYPE_CHECKING:
    from pathlib import Path
    from types import FrameType

EXIT_FILE = "exit_code"
LAUNCH_MARKER = "TUNER_LAUNCH_FOLDER"  # tuner.launchers.tracked.LAUNCH_MARKER (stdlib only here)
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Reset to their default action in the job: Python ignores SIGPIPE and SIGXFSZ, and the
# forwarded ones have handlers here (subprocess's restore_signals does the same).
DEFAULT_IN_JOB = (*FORWARDED, signal.SIGPIPE, signal.SIGXFSZ)


def read_exit_code(path: Path) -> int | None:
    """The status a wrapper kept in ``path``, or None when there is none (yet)."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _keep(path: str, code: int) -> None:
    partial = path + ".partial"
    with open(partial, "w") as f:
        f.write(f"{code}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(partial, path)


def main(argv: list[str]) -> int:
    """Start the job with ``os.posix_spawnp`` (os and signal only: the wrapper starts in about
    the time of a bare interpreter, half that of one importing subprocess), wait, keep."""
    status_file, command = argv[0], argv[1:]
    child: int | None = None

    def forward(sig: int, _frame: FrameType | None) -> None:
        if child is not None:
            try:  # noqa: SIM105 - contextlib is one more import at start-up
                os.kill(child, sig)
            except ProcessLookupError:  # it has ended; waitpid below collects it
                pass

    for sig in FORWARDED:
        signal.signal(sig, forward)
    # Only the wrapper carries the launch marker, so a search by marker finds the wrapper
    # (whose pid leads the job's process group), not the job.
    env = {k: v for k, v in os.environ.items() if k != LAUNCH_MARKER}
    # A forwarded signal that comes while the job starts waits until ``child`` is known.
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    try:
        child = os.posix_spawnp(command[0], command, env, setsigmask=(), setsigdef=DEFAULT_IN_JOB)
    except (OSError, ValueError, IndexError) as exc:  # ValueError: a NUL byte in an argument
        program = command[0] if command else ""
        print(f"tuner: cannot start {program!r}: {exc}", file=sys.stderr, flush=True)
        _keep(status_file, 127)
        return 127
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    _, status = os.waitpid(child, 0)  # retried by Python when a forwarded signal interrupts
    code = os.waitstatus_to_exitcode(status)
    _keep(status_file, code)
    if code < 0:  # end the way the job ended, so a watching parent sees the same signal
        if -code not in (signal.SIGKILL, signal.SIGSTOP):  # their action cannot be changed
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
