"""``api.app.tail_start``: where the last lines of a log, across block boundaries and huge lines."""

from __future__ import annotations

import random
import re

from api.app import TAIL_LIMIT_BYTES, tail_start


def tail_lines(path, lines, end=None):
    data = path.read_bytes()[:end]
    return data[tail_start(path, lines, end) :]


def last_lines(data: bytes, n: int) -> bytes:
    """The reference: the last ``n`` lines, a last one without its newline counted."""
    return b"".join(re.findall(rb"[^\n]*\n|[^\n]+$", data)[-n:]) if n else b""


def test_tail_matches_splitting_the_whole_file(tmp_path):
    rng = random.Random(5)
    lines = [b"x" * rng.choice([0, 1, 70, 65535, 65536, 200_000]) for _ in range(60)]
    log = tmp_path / "log.txt"
    content = b"\n".join(lines) + b"\n"
    log.write_bytes(content)
    for n in (0, 1, 2, 5, 59, 60, 61, 500):
        assert tail_lines(log, n) == last_lines(content, n), n
    end = len(content) // 2  # the first half only, as a log chunk read so far
    assert tail_lines(log, 3, end) == last_lines(content[:end], 3)
    (tmp_path / "empty.txt").write_bytes(b"")
    assert tail_lines(tmp_path / "empty.txt", 5) == b""


def test_a_last_line_without_its_newline_is_one_of_the_lines(tmp_path):
    """tail=1 gave two lines when the job's last write had no newline (a progress line)."""
    log = tmp_path / "log.txt"
    log.write_bytes(b"a\nb\nfinal progress 100%")
    assert tail_lines(log, 1) == b"final progress 100%"
    assert tail_lines(log, 2) == b"b\nfinal progress 100%"
    assert tail_lines(log, 9) == b"a\nb\nfinal progress 100%"


def test_a_line_longer_than_the_limit_is_cut_at_its_start(tmp_path):
    log = tmp_path / "log.txt"
    log.write_bytes(b"first\n" + b"z" * (TAIL_LIMIT_BYTES + 10))
    assert tail_start(log, 1) == 6 + 10
    assert tail_start(log, 3) == 6 + 10
