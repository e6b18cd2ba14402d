"""``api.app.tail_lines``: the last lines of a log, across block boundaries and huge lines."""

from __future__ import annotations

import random

from api.app import tail_lines


def test_tail_matches_splitting_the_whole_file(tmp_path):
    rng = random.Random(5)
    lines = [b"x" * rng.choice([0, 1, 70, 65535, 65536, 200_000]) for _ in range(60)]
    log = tmp_path / "log.txt"
    content = b"\n".join(lines) + b"\n"
    log.write_bytes(content)
    for n in (0, 1, 2, 5, 59, 60, 61, 500):
        assert tail_lines(log, n) == b"\n".join(content.split(b"\n")[-n - 1 :]), n
    end = len(content) // 2  # the first half only, as a log chunk read so far
    assert tail_lines(log, 3, end) == b"\n".join(content[:end].split(b"\n")[-4:])
    (tmp_path / "empty.txt").write_bytes(b"")
    assert tail_lines(tmp_path / "empty.txt", 5) == b""
