"""Loading CIFAR-10 from its python layout (folder, S3), the digits, and the validation split."""

from __future__ import annotations

from pathlib import Path

import boto3
import numpy as np
import pytest

from tests.training_container.conftest import upload_cifar
from training_container.data import (
    FILES,
    DataError,
    _read_batch,
    load,
    load_cifar10,
    split_validation,
)
from training_container.synthetic import write_cifar


def test_folder_or_its_parent_and_the_channel_major_layout(cifar_dir):
    for location in (cifar_dir, cifar_dir / "cifar-10-batches-py"):
        x_train, y_train, x_test, _ = load_cifar10(str(location))
        assert x_train.shape == (100, 3, 32, 32) and x_train.dtype == np.uint8
        assert y_train.shape == (100,) and y_train.dtype == np.int64
        assert x_test.shape == (20, 3, 32, 32)
        red = x_train[0]
        assert (red[0] == 255).all() and (red[1:] == 0).all()  # R plane first, row-major


def test_missing_data_says_where_it_looked(tmp_path):
    with pytest.raises(DataError, match=r"no CIFAR-10 python batches .* in .*nowhere"):
        load_cifar10(str(tmp_path / "nowhere"))
    bad = write_cifar(tmp_path / "bad")
    (bad / "test_batch").write_bytes(b"not a pickle")
    with pytest.raises(DataError, match="test_batch is not a CIFAR-10 python batch"):
        load_cifar10(str(tmp_path / "bad"))


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        (None, "data_batch_3 is not a CIFAR-10 python batch: EOFError"),  # an empty file
        (["not", "a", "dict"], "data_batch_3 is not a CIFAR-10 python batch: TypeError"),
        ({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 57]}, "labels must be 0-9"),
        ({b"data": np.zeros((1, 3072), np.uint8), b"labels": [-1]}, r"got -1\.\.-1"),
        (
            {b"data": np.full((1, 3072), 0.5), b"labels": [0]},
            "pixels must be whole numbers 0-255, got float64 data",
        ),
        ({b"data": np.full((1, 3072), 300), b"labels": [0]}, "pixels must be whole numbers"),
        (
            {b"data": np.zeros((2, 32, 32, 3), np.uint8), b"labels": [0, 1]},
            r"data must be N x 3072 \(channel-major 32x32\), got \(2, 32, 32, 3\)",
        ),
        ({b"data": np.zeros(3072, np.uint8), b"labels": [0]}, r"got \(3072,\)"),
        (
            {b"data": np.zeros((1, 3072), np.uint8), b"labels": [0.7]},
            "labels must be a list of whole numbers",
        ),
        (  # QA: the label wrapped to a negative number in the message
            {b"data": np.zeros((1, 3072), np.uint8), b"labels": np.array([2**63 + 5], np.uint64)},
            r"labels must be 0-9, got 9223372036854775813\.\.9223372036854775813",
        ),
    ],
)
def test_a_corrupt_batch_is_refused_naming_it(tmp_path, batch, message):
    """Tracebacks before (EOFError, TypeError), or a label out of range that crashed after an
    epoch of training, or float pixels silently wrapped into bytes."""
    import pickle

    folder = write_cifar(tmp_path / "d")  # its cifar-10-batches-py folder
    (folder / "data_batch_3").write_bytes(b"" if batch is None else pickle.dumps(batch))
    with pytest.raises(DataError, match=message):
        load_cifar10(str(folder))


def test_data_copied_from_s3_is_removed_when_the_process_ends(cifar_dir, s3, tmp_path):
    """Every S3 load left a cifar10-* copy in /tmp: 178 MB per trial on real CIFAR-10."""
    import os
    import subprocess
    import sys

    data = upload_cifar(cifar_dir, "leak")
    temp = tmp_path / "tmp"
    temp.mkdir()
    code = f"from training_container.data import load_cifar10; load_cifar10({data!r})"
    env = {**os.environ, "TMPDIR": str(temp)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    assert list(temp.iterdir()) == []


def test_from_s3(cifar_dir, s3):
    client = boto3.client("s3")
    client.create_bucket(Bucket="datasets")
    for name in FILES:
        client.upload_file(
            str(cifar_dir / "cifar-10-batches-py" / name), "datasets", f"cifar/{name}"
        )
    x_train, y_train, _, _ = load_cifar10("s3://datasets/cifar")
    local = load_cifar10(str(cifar_dir))
    assert np.array_equal(x_train, local[0]) and np.array_equal(y_train, local[1])
    with pytest.raises(DataError, match="cannot read s3://datasets/elsewhere/data_batch_1"):
        load_cifar10("s3://datasets/elsewhere")
    for name in FILES:  # a prefix holding the cifar-10-batches-py folder, as a folder may
        client.upload_file(
            str(cifar_dir / "cifar-10-batches-py" / name),
            "datasets",
            f"tarball/cifar-10-batches-py/{name}",
        )
    nested, _, _, _ = load_cifar10("s3://datasets/tarball")
    assert np.array_equal(nested, local[0])


def test_validation_split_is_stratified_and_disjoint():
    x = np.arange(1000).reshape(1000, 1)
    y = np.repeat(np.arange(10), 100)
    x_tr, _, x_val, y_val = split_validation(x, y, 0.1, seed=0)
    assert len(x_val) == 100 and len(x_tr) == 900
    assert np.bincount(y_val).tolist() == [10] * 10
    assert not set(x_val.ravel()) & set(x_tr.ravel())
    with pytest.raises(DataError, match=r"between 0 and 1, got 1\.5"):
        split_validation(x, y, 1.5, seed=0)


def test_digits_are_32x32_rgb():
    splits = load("digits", "", 0.1, seed=0)
    assert splits.x_train.shape[1:] == (3, 32, 32)
    assert len(splits.x_train) + len(splits.x_val) + len(splits.x_test) == 1797
    assert splits.classes == 10


def test_no_training_images_left_is_a_data_error():
    """torch.cat([]) crashed in the first epoch."""
    with pytest.raises(DataError, match="no training images left: digits has 1257 and "):
        load("digits", "", 0.999, 0)


def test_a_batch_of_no_images_is_refused_naming_it(tmp_path):
    """It was accepted, though the README says an empty batch is refused."""
    import pickle

    folder = write_cifar(tmp_path / "d")
    empty = {b"data": np.zeros((0, 3072), np.uint8), b"labels": []}
    (folder / "data_batch_2").write_bytes(pickle.dumps(empty))
    with pytest.raises(DataError, match="data_batch_2: the batch holds no images"):
        load_cifar10(str(folder))


def test_a_batch_naming_a_module_this_numpy_lacks_is_a_data_error(tmp_path):
    """QA: a batch pickled by numpy 2 (``numpy._core``) and read by numpy 1 crashed with
    ModuleNotFoundError (exit 1, not the documented exit 2 naming the file)."""
    import pickle

    folder = write_cifar(tmp_path / "d")
    batch = pickle.dumps({b"data": np.zeros((1, 3072), np.uint8), b"labels": [0]})
    (folder / "data_batch_2").write_bytes(batch.replace(b"numpy", b"numpx"))
    with pytest.raises(
        DataError, match="data_batch_2 is not a CIFAR-10 python batch: UnpicklingError"
    ):
        load_cifar10(str(folder))


class _Payload:
    """Unpickling it calls os.system: what a hostile dataset on S3 or a shared disk can do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        import os

        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("protocol", [2, 5])
def test_a_batch_that_would_run_code_is_refused_and_runs_nothing(tmp_path, protocol):
    """pickle.load ran any callable a batch named (a shell command here)."""
    import pickle

    folder = write_cifar(tmp_path / "d")
    marker = tmp_path / "ran"
    batch = {b"data": np.zeros((1, 3072), np.uint8), b"labels": [0], b"x": _Payload(marker)}
    (folder / "data_batch_4").write_bytes(pickle.dumps(batch, protocol=protocol))
    with pytest.raises(
        DataError,
        match=r"data_batch_4 is not a CIFAR-10 python batch: UnpicklingError\('it names "
        r"posix\.system, and a CIFAR-10 batch holds only numpy arrays",
    ):
        load_cifar10(str(folder))
    assert not marker.exists()


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_batches_pickled_with_any_protocol_still_load(tmp_path, protocol):
    import pickle

    folder = write_cifar(tmp_path / "d")
    labels = np.arange(4) % 10
    batch = {
        b"batch_label": b"training batch 1 of 5",
        b"data": np.full((4, 3072), 7, np.uint8),
        b"labels": [int(v) for v in labels],
        b"filenames": [b"a.png"] * 4,
    }
    for name in ("data_batch_1", "test_batch"):
        (folder / name).write_bytes(pickle.dumps(batch, protocol=protocol))
    data, read_labels = _read_batch(folder / "data_batch_1")
    assert data.shape == (4, 3, 32, 32) and (data == 7).all()
    np.testing.assert_array_equal(read_labels, labels)
