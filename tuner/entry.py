"""The ``tuner`` command's entry point: ``tuner.cli`` with a Ctrl-C or SIGTERM during its
imports (about a second) answered as a Ctrl-C at any later time is, without a traceback (a
SIGTERM there killed the process: exit 143, no message); and a command
interrupted (exit 130) ignores further Ctrl-C and SIGTERM while the process exits: the
interpreter's shutdown puts the default handlers back, and a supervisor repeating SIGTERM
turned 130 into death by signal (143)."""

import signal
import sys

INTERRUPTED = 130


def _terminated(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:  # a verb may set its own later
        signal.signal(signal.SIGTERM, _terminated)
    try:
        from tuner.cli import main as run

        code = run()
    except KeyboardInterrupt:
        print("tuner: interrupted", file=sys.stderr)
        code = INTERRUPTED
    if code == INTERRUPTED:
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, signal.SIG_IGN)
    return code
