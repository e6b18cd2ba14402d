"""What a signal handler may do without hanging its process.

Python runs a handler in the main thread between two bytecodes, possibly while that thread
holds a lock the handler then wants: ``threading.Event.set`` from a handler that interrupted
the same event's ``wait`` (which holds the event's non-reentrant lock for a few bytecodes)
blocked forever; a Ctrl-C left ``tuner run`` hanging with its training jobs running. Writing
to ``sys.stderr`` from a handler that interrupted another write raises ``RuntimeError``
("reentrant call") wherever the main thread was.
"""

import _thread
import contextlib
import os
import threading


def set_event(event: threading.Event) -> None:
    """Set ``event`` from a signal handler: a new low-level thread sets it (it waits, if need
    be, for the interrupted main thread to let go of the event's lock); this returns at once."""
    _thread.start_new_thread(event.set, ())


def say(text: str) -> None:
    """Write ``text`` and a newline to standard error from a signal handler (one ``write``
    system call, no Python-level buffer or lock); a closed stream is ignored."""
    with contextlib.suppress(OSError):
        os.write(2, (text + "\n").encode())
