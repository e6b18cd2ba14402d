"""Signal handlers that cannot hang the process (tuner.signal_safe)."""

import signal
import subprocess
import sys
import textwrap
import threading

from tuner import signal_safe


def test_an_event_is_set_from_a_handler_that_interrupted_its_wait_while_it_held_the_lock():
    """The hang of `tuner run` on Ctrl-C: the handler ran while the main thread held the
    event's lock inside wait(); Event.set() there waits for that lock for ever."""
    event = threading.Event()
    previous = signal.signal(signal.SIGUSR1, lambda *_: signal_safe.set_event(event))
    try:
        with event._cond:  # where Event.wait holds it for a few bytecodes
            signal.raise_signal(signal.SIGUSR1)  # the handler runs here and returns
            assert not event.is_set()
        assert event.wait(5)
    finally:
        signal.signal(signal.SIGUSR1, previous)


STORM = textwrap.dedent(
    """
    import os, signal, subprocess, sys, threading, time
    from tuner import signal_safe
    event, handled = threading.Event(), []
    def on_signal(*_):
        handled.append(1)
        signal_safe.set_event(event)
        signal_safe.say("handled")
    signal.signal(signal.SIGUSR1, on_signal)
    sender = subprocess.Popen(
        ["sh", "-c", f"while kill -USR1 {os.getpid()} 2>/dev/null; do sleep 0.001; done"]
    )
    end = time.monotonic() + 2
    while time.monotonic() < end:
        event.wait(0)
        event.clear()
    sender.kill()
    sender.wait()
    print(len(handled))
    """
)


def test_a_storm_of_signals_while_the_main_thread_waits_on_the_event_never_hangs():
    """Signals from another process, one a millisecond, while the main thread loops on
    wait(0): with Event.set() in the handler this hung (or overflowed the stack) at once."""
    done = subprocess.run([sys.executable, "-c", STORM], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) > 50
    assert done.stderr.count("handled\n") == int(done.stdout)
