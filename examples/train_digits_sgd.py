"""A small real training job: a linear classifier trained by SGD on scikit-learn's digits.

It follows the training-job contract: hyperparameters arrive as ``--name value`` arguments and
metrics are printed in the classic log format, one line per epoch:

    [Epoch 3] training: loss=0.4120 accuracy=0.8851
    [Epoch 3] validation: loss=0.4630 accuracy=0.8667

Runs in well under a second on one CPU core; offline (the digits ship with scikit-learn).
"""

import argparse
import math
import os
import sys

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learning_rate", type=float, default=0.01)
    parser.add_argument("--wd", type=float, default=1e-4, help="L2 penalty (weight decay)")
    parser.add_argument("--momentum", type=float, default=0.0, help="averaging of the weights")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    x_train, x_val, y_train, y_val = train_test_split(
        x, y, test_size=0.3, random_state=args.seed, stratify=y
    )
    model = SGDClassifier(
        loss="log_loss",
        learning_rate="constant",
        eta0=args.learning_rate,
        alpha=args.wd,
        # "momentum" here is Polyak averaging of the iterates, the closest knob SGDClassifier has.
        average=max(1, int(args.momentum * 100)) if args.momentum > 0 else False,
        random_state=args.seed,
    )
    classes = np.unique(y)
    for epoch in range(args.epochs):
        model.partial_fit(x_train, y_train, classes=classes)
        for split, xs, ys in (("training", x_train, y_train), ("validation", x_val, y_val)):
            proba = model.predict_proba(xs)
            loss = log_loss(ys, proba, labels=classes)
            accuracy = float(np.mean(model.predict(xs) == ys))
            print(f"[Epoch {epoch}] {split}: loss={loss:.4f} accuracy={accuracy:.4f}", flush=True)
            if not math.isfinite(loss):
                print(f"loss is {loss}: stopping", file=sys.stderr)
                return 1
    out = os.environ.get("TUNER_OUTPUT_DIR")
    if out:
        with open(os.path.join(out, "final.txt"), "w") as f:
            f.write(f"validation-accuracy {accuracy}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
