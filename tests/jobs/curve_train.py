"""A training job with a flat learning curve, for early-stopping tests.

Prints ``validation: accuracy=<x>`` once per epoch for ``--epochs`` epochs, ``--step_sleep``
seconds apart (with ``--cross_at K``, ``1 - x`` before epoch K: an early ranking that is the
reverse of the final one); appends its pid to ``$TUNER_OUTPUT_DIR/pid`` at the start (one line
per run) and writes ``terminated`` there when it receives SIGTERM (then exits with 143);
``--exit_sleep`` seconds pass between its last line and its exit (a slow interpreter exit);
with ``--term_value V`` it prints one more line, accuracy V, when SIGTERM comes (a job that
reports once more in its grace period).
"""

import argparse
import os
import signal
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--x", type=float, required=True)
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--step_sleep", type=float, default=0.1)
parser.add_argument("--cross_at", type=int, default=0)
parser.add_argument("--exit_sleep", type=float, default=0.0)  # after the last epoch: a slow exit
parser.add_argument("--term_value", type=float, default=None)  # printed on SIGTERM
args, _unknown = parser.parse_known_args()
out = os.environ["TUNER_OUTPUT_DIR"]
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "pid"), "a") as f:
    f.write(f"{os.getpid()}\n")


def terminated(signum, frame):
    if args.term_value is not None:
        # one write: a print here could interrupt another print ("reentrant call")
        os.write(1, f"stopping validation: accuracy={args.term_value:.6f}\n".encode())
    with open(os.path.join(out, "terminated"), "w") as f:
        f.write("SIGTERM")
    sys.exit(143)


signal.signal(signal.SIGTERM, terminated)
for epoch in range(args.epochs):
    value = 1 - args.x if epoch + 1 < args.cross_at else args.x
    print(f"epoch {epoch + 1} validation: accuracy={value:.6f}", flush=True)
    time.sleep(args.step_sleep)
time.sleep(args.exit_sleep)
