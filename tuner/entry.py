"""The ``tuner`` command's entry point: ``tuner.cli`` with a Ctrl-C during its imports (about
half a second) answered as one at any later time is, without a traceback."""

import sys


def main() -> int:
    try:
        from tuner.cli import main as run
    except KeyboardInterrupt:
        print("tuner: interrupted", file=sys.stderr)
        return 130
    return run()
