"""Table-driven log parsing: each case is a log (bytes), the definitions, and what they yield."""

import math
import time

import pytest

from tuner import MetricDefinition, ValidationError
from tuner.metrics import (
    MAX_REGEX_PROGRAM_SIZE,
    MAX_UNPARSED,
    LogMetricParser,
    MetricPoint,
    ObjectiveAggregation,
    final_objective,
    log_chunks,
    parse_log,
    validate_metric_definitions,
)

ACC = MetricDefinition("validation-accuracy", r"validation: accuracy=([0-9\.]+)")
ACC_PLAIN = MetricDefinition("acc", r"accuracy=([0-9.]+)")
LOSS = MetricDefinition("loss", r"loss=([-+0-9.eEnaifNAIF]+)")

CASES = [
    ("plain lines", b"validation: accuracy=0.5\nvalidation: accuracy=0.75\n", [ACC], [0.5, 0.75]),
    ("no final newline", b"validation: accuracy=0.5\nvalidation: accuracy=0.6", [ACC], [0.5, 0.6]),
    (
        "windows line ends",
        b"validation: accuracy=0.5\r\nvalidation: accuracy=0.6\r\n",
        [ACC],
        [0.5, 0.6],
    ),
    (
        "carriage-return progress bar",
        b"epoch 1 [====>    ] 40%\repoch 1 [=========] 100%\rvalidation: accuracy=0.81\n",
        [ACC],
        [0.81],
    ),
    ("ansi colours", b"\x1b[1;32mvalidation: accuracy=\x1b[0m0.9\x1b[0m\n", [ACC], [0.9]),
    (
        "ansi cursor codes and titles",
        b"\x1b]0;title\x07\x1b[2Kvalidation: accuracy=0.4\n",
        [ACC],
        [0.4],
    ),
    (
        "invalid utf-8 around the match",
        b"\xff\xfe junk validation: accuracy=0.7 \xc3\n",
        [ACC],
        [0.7],
    ),
    ("several matches on one line", b"loss=0.5 loss=0.25\n", [LOSS], [0.5, 0.25]),
    ("exponents", b"loss=1e-3\nloss=2.5E+02\nloss=-3.0e-1\n", [LOSS], [0.001, 250.0, -0.3]),
    (
        "nan and inf",
        b"loss=nan\nloss=inf\nloss=-inf\nloss=NaN\n",
        [LOSS],
        [math.nan, math.inf, -math.inf, math.nan],
    ),
    ("a capture that is not a number is skipped", b"validation: accuracy=1.2.3\n", [ACC], []),
    ("no match", b"training: accuracy=0.5\n", [ACC], []),
    (
        "two definitions, order of appearance",
        b"loss=0.9 validation: accuracy=0.1\nloss=0.8\n",
        [ACC, LOSS],
        [0.1, 0.9, 0.8],
    ),
]


@pytest.mark.parametrize(
    ("log", "defs", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@pytest.mark.parametrize("chunk", [0, 1, 2, 3, 7])
def test_parsing(log, defs, expected, chunk):
    points, _ = parse_log(log, defs, chunk_size=chunk)
    values = [p.value for p in points]
    assert len(values) == len(expected)
    for got, want in zip(values, expected, strict=True):
        assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want)
    assert [p.seq for p in points] == list(range(len(points)))


def test_multibyte_character_split_across_reads():
    parser = LogMetricParser([MetricDefinition("m", r"é=([0-9.]+)")])
    data = "é=0.5\n".encode()
    assert parser.feed(data[:1]) == []
    points = parser.feed(data[1:])
    assert [p.value for p in points] == [0.5]


def test_very_long_lines_are_cut_without_losing_later_lines():
    parser = LogMetricParser([ACC], max_line_chars=1000)
    log = b"x" * 50_000 + b"\nvalidation: accuracy=0.25\n"
    points = []
    for i in range(0, len(log), 4096):
        points += parser.feed(log[i : i + 4096])
    points += parser.close()
    assert [p.value for p in points] == [0.25]
    assert len(parser._buffer) == 0


def test_a_long_line_fed_at_once_is_parsed_in_the_same_pieces_as_fed_in_parts(tmp_path):
    """``check-metrics`` feeds a whole log at once: its pieces were cut off the rest one by one,
    each cut copying the rest (a 48 MB line took 24 s). Pieces of max_line_chars, the last one
    of 1 to max_line_chars kept for the next feed, whichever way the bytes come."""
    line = "".join(f"validation: accuracy=0.{i:03d} " for i in range(300))  # no line break
    at_once = LogMetricParser([ACC], max_line_chars=100)
    in_parts = LogMetricParser([ACC], max_line_chars=100)
    whole = at_once.feed(line.encode()) + at_once.close()
    parts = [p for i in range(0, len(line), 7) for p in in_parts.feed(line[i : i + 7].encode())]
    parts += in_parts.close()
    assert [p.value for p in whole] == [p.value for p in parts]
    assert at_once.lines == in_parts.lines == 1  # one line, however many pieces
    log = tmp_path / "log.txt"
    log.write_bytes(line.encode())
    assert b"".join(log_chunks(log, chunk_size=1000)) == line.encode()
    assert max(map(len, log_chunks(log, chunk_size=1000))) == 1000


@pytest.mark.parametrize(
    "chunk, read",
    [
        (1 << 20, [("acc", 0.91), ("acc", 0.5), ("percent", 0.912), ("acc", 0.25)]),
        (7, [("acc", 0.5), ("acc", 0.25)]),
    ],
    ids=["line-read-whole", "line-arriving-in-pieces"],
)
def test_a_number_cut_by_a_long_lines_cut_is_dropped_not_misread(chunk, read):
    """``accuracy=0.91`` cut after ``0.9`` was read as 0.9 and the job Completed with it (a
    QA helper: a line over 64 KiB arriving in pieces, e.g. a one-line JSON dump); and the tail
    of a number cut before it (``12%`` of ``0.912%``) read as 12. A line whose end has arrived
    is not cut; matches wholly inside a piece are read."""
    size = 100
    line = "x" * (size - len("accuracy=0.9")) + "accuracy=0.91 "  # cut after 0.9
    line += "y" * (3 * size - len(line) - 3) + "0.9" + "12% accuracy=0.5 end"  # and again
    percent = MetricDefinition("percent", r"([0-9.]+)%")
    parser = LogMetricParser([ACC_PLAIN, percent], max_line_chars=size)
    data = (line + "\nvalidation: accuracy=0.25\n").encode()
    points = [p for i in range(0, len(data), chunk) for p in parser.feed(data[i : i + chunk])]
    points += parser.close()
    assert [(p.name, p.value) for p in points] == read
    assert parser.lines == 2
    dropped = 4 - len(read) // 2 * 2  # whole: none; in pieces: 0.9 of 0.91 and 12 of 0.912
    assert parser.dropped_at_cuts == ({"acc": 1, "percent": 1} if dropped else {})


def test_a_crlf_split_between_two_reads_is_one_line_break():
    """A \r\n cut by a read's end (a 1 MiB piece of a log) counted as two breaks: an empty
    line more than the same log read whole."""
    log = b"validation: accuracy=0.5\r\nvalidation: accuracy=0.6\r\nend\r"
    whole = LogMetricParser([ACC])
    expected = [p.value for p in whole.feed(log) + whole.close()]
    for cut in range(1, len(log)):
        parser = LogMetricParser([ACC])
        points = parser.feed(log[:cut]) + parser.feed(log[cut:]) + parser.close()
        assert [p.value for p in points] == expected == [0.5, 0.6], cut
        assert parser.lines == whole.lines == 3, cut


def test_points_carry_time_from_the_clock():
    ticks = iter([10.0, 11.0])
    parser = LogMetricParser([ACC], clock=lambda: next(ticks))
    points = parser.feed(b"validation: accuracy=0.1\nvalidation: accuracy=0.2\n")
    assert [p.timestamp for p in points] == [10.0, 11.0]


def test_unparsed_captures_are_reported():
    _, parser = parse_log(b"validation: accuracy=...\n", [ACC])
    assert parser.unparsed[0].text == "..."


def test_captures_that_are_not_numbers_keep_memory_flat():
    """Every such capture was kept for the job's life: a regex that matched at every place
    (``([0-9.]*)``, refused now) over a 20 MB log took the tuner to 1.9 GB."""
    letters = MetricDefinition("letter", r"([a-j])")
    parser = LogMetricParser([letters])
    for _ in range(100):
        parser.feed(b"abcdefghij" * 100 + b"\n")
    assert parser.unparsed_count == 100_000
    assert len(parser.unparsed) == MAX_UNPARSED
    assert parser.last_unparsed == {"letter": "j"}


def test_digits_outside_ascii_are_not_numbers():
    wide = MetricDefinition("score", r"score=(\S+)")
    log = "score=\u0661\u0662\nscore=\uff13\nscore=0.5\n".encode()  # float() reads 12, 3
    points, parser = parse_log(log, [wide])
    assert [p.value for p in points] == [0.5]
    assert [u.text for u in parser.unparsed] == ["\u0661\u0662", "\uff13"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"Name": "a", "Regex": "acc=(["}, "must be valid RE2 syntax (linear-time engine"),
        ({"Name": "a", "Regex": r"(a)\1"}, "no backreferences, no lookaround), got '(a)\\\\1'"),
        ({"Name": "a", "Regex": "(?=a)(b)"}, "invalid perl operator"),
        ({"Name": "a", "Regex": "acc=[0-9]+"}, "exactly one capture group, got 0"),
        ({"Name": "a", "Regex": "(a)=(b)"}, "exactly one capture group, got 2"),
        ({"Name": "", "Regex": "(a)"}, "non-empty Name"),
        ({"Name": "a"}, 'must be {"Name": ..., "Regex": ...}'),
    ],
)
def test_bad_definitions(spec, message):
    with pytest.raises(ValidationError) as info:
        MetricDefinition.from_dict(spec)
    assert message in str(info.value)


def test_objective_must_be_defined_and_names_unique():
    with pytest.raises(ValidationError, match="objective_metric_name must be one of"):
        validate_metric_definitions([ACC], "loss")
    with pytest.raises(ValidationError, match="unique, got 'loss' twice"):
        validate_metric_definitions([LOSS, LOSS], "loss")


def _points(*values):
    return [MetricPoint("m", v, i, 0.0) for i, v in enumerate(values)]


def test_objective_last_and_best():
    pts = _points(0.5, 0.9, 0.7)
    assert final_objective(pts, "m") == 0.7
    assert final_objective(pts, "m", ObjectiveAggregation.BEST) == 0.9
    assert final_objective(pts, "m", ObjectiveAggregation.BEST, maximize=False) == 0.5
    assert final_objective(pts, "other") is None
    assert math.isnan(final_objective(_points(0.5, math.nan), "m"))
    assert final_objective(_points(0.5, math.nan), "m", ObjectiveAggregation.BEST) == 0.5
    only_inf = _points(math.inf, math.inf)  # nothing finite: the last value, as printed
    assert final_objective(only_inf, "m", ObjectiveAggregation.BEST) == math.inf
    assert math.isnan(final_objective(_points(math.inf, math.nan), "m", ObjectiveAggregation.BEST))


def test_catastrophic_regex_runs_in_linear_time():
    """``(a+)+$`` on ``a...a!`` takes exponential time on a backtracking engine; RE2 is linear."""
    slow = MetricDefinition("slow", r"(a+)+$")
    line = b"a" * 100_000 + b"!\n"
    started = time.perf_counter()
    points, parser = parse_log(line * 10, [slow])
    assert points == [] and parser.lines == 10
    assert time.perf_counter() - started < 5  # a backtracking engine needs ~2**27 steps at 27 a's


def test_a_regex_too_large_for_re2s_fast_path_is_refused():
    """Counted repetitions blow the program up past the DFA cache: refused, with its size."""
    accepted = MetricDefinition("ok", r"(?:\w{1,9}\W{0,3}){1,13}acc=([0-9.]+)")  # 948
    assert accepted.pattern.programsize <= MAX_REGEX_PROGRAM_SIZE
    regex = r"(?:\w{1,9}\W{0,3}){1,20}acc=([0-9.]+)"
    with pytest.raises(ValidationError) as caught:
        MetricDefinition("slow", regex)
    assert str(caught.value) == (
        "Regex of metric 'slow' must compile to at most 1000 RE2 instructions (a larger program "
        f"matches up to 1000 times slower), got 1452 for {regex!r}"
    )


@pytest.mark.parametrize(
    "regex", ["()", "(?:acc=([0-9.]+))?", "([0-9.]*)", r"\b([0-9.]*)", r"(?i)\s?(\d*)"]
)
def test_a_regex_that_matches_empty_text_is_refused_but_read_when_stored(tmp_path, regex):
    """QA: such a regex matches at every place of every line and captures no number. Review: a
    tuning job stored with one before the rule must still be read, resumed and taken over."""
    from tests.test_resume import definition
    from tuner.definition import TuningJobDefinition

    data = definition(tmp_path, 0.1, max_jobs=1).to_json()
    data["metric_definitions"] = [{"Name": "accuracy", "Regex": regex}]
    with pytest.raises(ValidationError, match=r"must not match empty text .it would match"):
        TuningJobDefinition.parse(data)
    stored = TuningJobDefinition.from_store(data, "resume")
    assert stored.metric_definitions[0].Regex == regex


@pytest.mark.parametrize(
    "regex", [r"acc=([0-9.]*)", r"\bacc\b\s*([0-9.]+)", r"(?:val_)?acc=([0-9.]+)", r"^([0-9.]+)$"]
)
def test_a_regex_that_needs_text_before_its_number_is_accepted(regex):
    """The empty-text probes refuse only regexes that match nothing in ordinary words."""
    MetricDefinition("acc", regex).check_matches_text()
