"""A stand-in training job for tests: behaviour chosen by its arguments.

Tuned hyperparameters ``x``/``y`` (any others are accepted and ignored) give
``accuracy = 1 - (x - 0.3)^2 - (y - 0.6)^2``, printed for ``--epochs`` epochs in the classic
format. It records its own start and end times in ``$TUNER_OUTPUT_DIR/times.json`` and its argv
in ``argv.json``, so tests can check limits from the jobs' own clocks.
"""

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--x", type=float, default=0.5)
parser.add_argument("--y", type=float, default=0.5)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--sleep", type=float, default=0.0)
parser.add_argument("--exit_code", type=int, default=0)
parser.add_argument("--kill_signal", type=int, default=0)  # ends killed by it, e.g. 9 as on OOM
parser.add_argument("--no_metric", default="false")
parser.add_argument("--nan", default="false")
parser.add_argument("--ignore_sigterm", default="false")
parser.add_argument("--spawn_child", default="false")
args, _unknown = parser.parse_known_args()

start = time.time()
out = os.environ.get("TUNER_OUTPUT_DIR")
if out:
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "argv.json"), "w") as f:
        json.dump(sys.argv[1:], f)
    with open(os.path.join(out, "gpu.json"), "w") as f:
        names = ("CUDA_VISIBLE_DEVICES", "TUNER_GPU_FRACTION")
        json.dump({k: os.environ.get(k) for k in names}, f)
    with open(os.path.join(out, "env.json"), "w") as f:
        names = ("TUNER_SHARED_DIR", "TORCHINDUCTOR_CACHE_DIR", "OMP_NUM_THREADS")
        json.dump({k: os.environ.get(k) for k in names}, f)
    with open(os.path.join(out, "runs.txt"), "a") as f:  # one line per run of this job
        f.write(f"{os.getpid()}\n")
if args.ignore_sigterm == "true":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if args.spawn_child == "true":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    print(f"child pid={child.pid}", flush=True)

accuracy = 1 - (args.x - 0.3) ** 2 - (args.y - 0.6) ** 2
for epoch in range(args.epochs):
    time.sleep(args.sleep / max(1, args.epochs))
    value = math.nan if args.nan == "true" else accuracy - 0.01 * (args.epochs - 1 - epoch)
    if args.no_metric != "true":
        print(f"[Epoch {epoch}] validation: loss={1 - value:.4f} accuracy={value:.6f}", flush=True)
print("done", file=sys.stderr, flush=True)
if out:
    with open(os.path.join(out, "times.json"), "w") as f:
        json.dump({"start": start, "end": time.time()}, f)
if args.kill_signal:
    os.kill(os.getpid(), args.kill_signal)
sys.exit(args.exit_code)
