"""Datasets for the trainer: CIFAR-10 in its standard python layout, and scikit-learn's digits.

CIFAR-10 (``cifar-10-batches-py``: pickled ``data_batch_1`` .. ``data_batch_5`` and
``test_batch``, each a dict with ``b"data"`` (N x 3072 uint8, channel-major 32x32) and
``b"labels"``) is read from, in order: a local folder (the folder itself or its
``cifar-10-batches-py`` subfolder), an ``s3://bucket/prefix`` (boto3; the usual AWS
configuration, ``AWS_ENDPOINT_URL`` for S3-compatible stores), or a download through
torchvision where the network allows (``download=True``). Without any, ``DataError`` says where
it looked.

``digits`` are scikit-learn's bundled 8x8 digit images (1,797, offline), scaled to 32x32 and
repeated over 3 channels; 30% of them are the test set.

Every dataset comes back as uint8 images N x 3 x 32 x 32 and int64 labels, with a validation
split held out of the training set (``validation_fraction``, stratified, seeded): the tuner's
objective is measured on it, never on the test set.
"""

from __future__ import annotations

import atexit
import pickle
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

FILES = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
CLASSES = 10
CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2470, 0.2435, 0.2616)


# The only globals a CIFAR-10 batch names: numpy's array and dtype reconstruction (numpy 1 and
# 2 module paths; protocol 5's buffers) and the bytes codec of a protocol 2 pickle.
BATCH_GLOBALS = frozenset(
    [
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
        ("_codecs", "encode"),
    ]
)


class DataError(RuntimeError):
    """The dataset cannot be found or read; the message says where the trainer looked."""


@dataclass
class Splits:
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: int


class _BatchUnpickler(pickle.Unpickler):
    """Unpickles numpy arrays, dicts, lists, bytes and numbers, nothing else: a pickle may call
    any global it names (``os.system``), so every global outside ``BATCH_GLOBALS`` is refused
    before it is imported (the "Restricting Globals" recipe of Python's ``pickle`` docs). A
    dataset from S3 or a shared folder is data, never code."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in BATCH_GLOBALS:
            raise pickle.UnpicklingError(
                f"it names {module}.{name}, and a CIFAR-10 batch holds only numpy arrays, "
                "lists, bytes and numbers"
            )
        return super().find_class(module, name)


def _read_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        with open(path, "rb") as f:
            batch = _BatchUnpickler(f, encoding="bytes").load()
        raw = np.asarray(batch[b"data"])
        raw_labels = np.asarray(batch[b"labels"])
    except Exception as exc:  # unpickling bytes of unknown origin may raise anything:
        # an empty file (EOFError), a pickle of something else (TypeError), one naming a
        # global a batch never names (UnpicklingError), one naming numpy._core (saved by numpy
        # 2) read by numpy 1 (ModuleNotFoundError) ...
        raise DataError(f"{path} is not a CIFAR-10 python batch: {exc!r:.200}") from None
    if raw.dtype != np.uint8 and (
        raw.dtype.kind not in "iu" or (raw.size and (raw.min() < 0 or raw.max() > 255))
    ):  # astype would wrap 300 to 44 and cut 0.5 to 0 without a word
        raise DataError(f"{path}: pixels must be whole numbers 0-255, got {raw.dtype} data")
    if raw.ndim != 2 or raw.shape[1] != 3 * 32 * 32:  # HWC images were reshaped silently
        raise DataError(f"{path}: data must be N x 3072 (channel-major 32x32), got {raw.shape}")
    data = raw.astype(np.uint8).reshape(-1, 3, 32, 32)
    if len(data) == 0:
        raise DataError(f"{path}: the batch holds no images")
    if raw_labels.ndim != 1 or raw_labels.dtype.kind not in "iu":  # 0.7 was cut to 0
        raise DataError(f"{path}: labels must be a list of whole numbers, got {raw_labels!r:.80}")
    if len(data) != len(raw_labels):
        raise DataError(f"{path}: {len(data)} images but {len(raw_labels)} labels")
    if len(raw_labels) and (raw_labels.min() < 0 or raw_labels.max() >= CLASSES):
        # checked before the cast: a uint64 label of 2**63 or more would read as negative
        raise DataError(
            f"{path}: labels must be 0-{CLASSES - 1}, got {raw_labels.min()}..{raw_labels.max()}"
        )
    return data, raw_labels.astype(np.int64)


def _cifar_folder(root: Path) -> Path | None:
    for candidate in (root, root / "cifar-10-batches-py"):
        if all((candidate / f).exists() for f in FILES):
            return candidate
    return None


def _from_s3(uri: str, cache: Path) -> Path:
    """The batches under the prefix, or under its ``cifar-10-batches-py/`` (as a folder may
    hold them), downloaded into ``cache``."""
    import boto3

    bucket, _, prefix = uri[len("s3://") :].partition("/")
    prefix = prefix.rstrip("/")
    s3 = boto3.client("s3")
    nested = f"{prefix}/cifar-10-batches-py" if prefix else "cifar-10-batches-py"
    base = next((b for b in (prefix, nested) if _s3_has(s3, bucket, _s3_key(b, FILES[0]))), prefix)
    cache.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        key = _s3_key(base, name)
        try:
            s3.download_file(bucket, key, str(cache / name))
        except Exception as exc:  # botocore raises many kinds; all mean "not there"
            raise DataError(f"cannot read s3://{bucket}/{key}: {exc}") from None
    return cache


def _s3_key(base: str, name: str) -> str:
    return f"{base}/{name}" if base else name


def _s3_has(s3: Any, bucket: str, key: str) -> bool:
    try:
        s3.head_object(Bucket=bucket, Key=key)
    except Exception:  # missing, forbidden, no bucket: the download says which
        return False
    return True


def load_cifar10(location: str, download: bool = False) -> tuple[np.ndarray, ...]:
    """Train and test images and labels from a folder, an s3:// prefix, or a download."""
    if location.startswith("s3://"):
        cache = Path(tempfile.mkdtemp(prefix="cifar10-"))
        atexit.register(shutil.rmtree, cache, ignore_errors=True)  # 178 MB per trial otherwise
        folder = _from_s3(location, cache)
    else:
        found = _cifar_folder(Path(location))
        if found is None and download:
            from torchvision.datasets import CIFAR10

            try:
                CIFAR10(location, train=True, download=True)
            except Exception as exc:
                raise DataError(f"downloading CIFAR-10 into {location} failed: {exc}") from None
            found = _cifar_folder(Path(location))
        if found is None:
            raise DataError(
                f"no CIFAR-10 python batches ({', '.join(FILES)}) in {location} or "
                f"{Path(location) / 'cifar-10-batches-py'}; give --data_dir a folder or an "
                "s3:// prefix that holds them, or --download where the network allows"
            )
        folder = found
    parts = [_read_batch(folder / f) for f in FILES[:5]]
    x_train = np.concatenate([p[0] for p in parts])
    y_train = np.concatenate([p[1] for p in parts])
    x_test, y_test = _read_batch(folder / "test_batch")
    return x_train, y_train, x_test, y_test


def load_digits_rgb(seed: int = 0) -> tuple[np.ndarray, ...]:
    """scikit-learn's digits as 32x32 RGB uint8 images (70% train, 30% test, stratified)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    images = (x.reshape(-1, 8, 8) / 16.0 * 255).astype(np.uint8)
    images = images.repeat(4, axis=1).repeat(4, axis=2)  # 32x32, nearest neighbour
    images = np.repeat(images[:, None], 3, axis=1)
    x_train, x_test, y_train, y_test = train_test_split(
        images, y.astype(np.int64), test_size=0.3, random_state=seed, stratify=y
    )
    return x_train, y_train, x_test, y_test


def split_validation(
    x: np.ndarray, y: np.ndarray, fraction: float, seed: int
) -> tuple[np.ndarray, ...]:
    """Hold out ``fraction`` of each class (at least one image each) as the validation set."""
    if not 0 < fraction < 1:
        raise DataError(f"validation_fraction must be between 0 and 1, got {fraction}")
    rng = np.random.default_rng(seed)
    val_idx: list[int] = []
    for label in np.unique(y):
        idx = np.flatnonzero(y == label)
        rng.shuffle(idx)
        val_idx.extend(idx[: max(1, round(len(idx) * fraction))])
    mask = np.zeros(len(y), dtype=bool)
    mask[val_idx] = True
    return x[~mask], y[~mask], x[mask], y[mask]


def load(
    dataset: str, data_dir: str, validation_fraction: float, seed: int, download: bool = False
) -> Splits:
    if dataset == "cifar10":
        x_train, y_train, x_test, y_test = load_cifar10(data_dir, download)
        classes = 10
    elif dataset == "digits":
        x_train, y_train, x_test, y_test = load_digits_rgb(seed)
        classes = 10
    else:
        raise DataError(f"dataset must be cifar10 or digits, got {dataset!r}")
    x_tr, y_tr, x_val, y_val = split_validation(x_train, y_train, validation_fraction, seed)
    if len(x_tr) == 0:
        raise DataError(
            f"no training images left: {dataset} has {len(x_train)} and validation_fraction "
            f"{validation_fraction} holds out {len(x_val)} (at least one of each class)"
        )
    return Splits(x_tr, y_tr, x_val, y_val, x_test, y_test, classes)
