"""A small real training job: a neural network trained by SGD with momentum on the digits.

scikit-learn's digits (1,797 8x8 images, bundled, offline) are split 70/30 into training and
validation sets; a one-hidden-layer network (``--hidden`` units) is trained by SGD with
``--learning_rate``, ``--momentum`` and weight decay ``--wd`` (L2), for ``--epochs`` epochs in
minibatches of ``--batch_size``. It follows the training-job contract (``--name value``
arguments in, metric lines out), one line per epoch in the classic format:

    [Epoch 3] training: loss=0.4120 accuracy=0.8851
    [Epoch 3] validation: loss=0.4630 accuracy=0.8667

A loss that becomes NaN or infinite ends the job with exit code 1. About a second on one core.
"""

import argparse
import math
import os
import sys
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learning_rate", type=float, default=0.01)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--wd", type=float, default=1e-4, help="L2 penalty (weight decay)")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    x_train, x_val, y_train, y_val = train_test_split(
        x, y, test_size=0.3, random_state=args.seed, stratify=y
    )
    model = MLPClassifier(
        hidden_layer_sizes=(args.hidden,),
        solver="sgd",
        learning_rate_init=args.learning_rate,
        momentum=args.momentum,
        nesterovs_momentum=False,
        alpha=args.wd,
        batch_size=args.batch_size,
        random_state=args.seed,
    )
    classes = np.unique(y)
    for epoch in range(args.epochs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", RuntimeWarning)  # overflow shows as a NaN loss
            model.partial_fit(x_train, y_train, classes=classes)
        for split, xs, ys in (("training", x_train, y_train), ("validation", x_val, y_val)):
            with np.errstate(all="ignore"):
                proba = model.predict_proba(xs)
            if not np.all(np.isfinite(proba)):
                print(f"[Epoch {epoch}] {split}: loss=nan", flush=True)
                print("loss is nan: stopping", file=sys.stderr)
                return 1
            loss = log_loss(ys, proba, labels=classes)
            accuracy = float(np.mean(classes[proba.argmax(axis=1)] == ys))
            print(f"[Epoch {epoch}] {split}: loss={loss:.4f} accuracy={accuracy:.4f}", flush=True)
            if not math.isfinite(loss):
                print(f"loss is {loss}: stopping", file=sys.stderr)
                return 1
    out = os.environ.get("TUNER_OUTPUT_DIR")
    if out:
        with open(os.path.join(out, "metrics.txt"), "w") as f:
            f.write(f"validation-accuracy {accuracy}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
