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
import subprocess
import sys
from pathlib import Path
from types import FrameType

EXIT_FILE = "exit_code"
LAUNCH_MARKER = "TUNER_LAUNCH_FOLDER"  # tuner.launchers.tracked.LAUNCH_MARKER (stdlib only here)


def read_exit_code(path: Path) -> int | None:
    """The status a wrapper kept in ``path``, or None when there is none (yet)."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _keep(path: Path, code: int) -> None:
    partial = path.with_name(path.name + ".partial")
    with open(partial, "w") as f:
        f.write(f"{code}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(partial, path)


def main(argv: list[str]) -> int:
    status_file, command = Path(argv[0]), argv[1:]
    child: subprocess.Popen[bytes] | None = None

    def forward(sig: int, _frame: FrameType | None) -> None:
        if child is not None and child.poll() is None:
            child.send_signal(sig)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)  # handlers are reset to the default in the child
    try:
        # Only the wrapper carries the launch marker, so a search by marker finds the wrapper
        # (whose pid leads the job's process group), not the job.
        env = {k: v for k, v in os.environ.items() if k != LAUNCH_MARKER}
        child = subprocess.Popen(command, env=env)
    except (OSError, ValueError) as exc:
        print(f"tuner: cannot start {command[0]!r}: {exc}", file=sys.stderr, flush=True)
        _keep(status_file, 127)
        return 127
    code = child.wait()
    _keep(status_file, code)
    if code < 0:  # end the way the job ended, so a watching parent sees the same signal
        if -code not in (signal.SIGKILL, signal.SIGSTOP):  # their action cannot be changed
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
