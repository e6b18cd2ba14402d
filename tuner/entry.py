"""The ``tuner`` command's entry point: ``tuner.cli`` with a Ctrl-C during its imports (about
half a second) answered as one at any later time is, without a traceback; and a command
interrupted (exit 130) ignores further Ctrl-C and SIGTERM while the process exits: the
interpreter's shutdown puts the default handlers back, and a supervisor repeating SIGTERM
turned 130 into death by signal (143)."""

import signal
import sys

INTERRUPTED = 130


def main() -> int:
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
