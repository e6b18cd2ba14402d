"""Metric definitions and streaming log parsing (pure: stdlib plus the RE2 regex engine).

A metric definition is ``{"Name": ..., "Regex": ...}`` as in SageMaker: the regex has exactly one
capture group, whose text is read as a float (``nan``, ``inf`` and exponents included). Every
match in every log line is one ``MetricPoint`` (value, order, time).

``LogMetricParser`` takes the raw bytes of a log as they arrive, in chunks of any size, and
survives what real training logs contain: lines split across reads, carriage-return progress
bars (``\\r`` ends a line like ``\\n``), ANSI colour and cursor codes (removed before matching),
invalid UTF-8 (replaced by U+FFFD), multibyte characters split across reads, and very long lines
(cut into pieces of ``max_line_chars``; a match that touches a cut is dropped, not read: it
may be the start or the end of a longer one, e.g. ``accuracy=0.9`` of ``accuracy=0.91``).

Metric regexes run on RE2 (the ``google-re2`` package), not on ``re``: log lines come from
training code the tuner does not control, and a backtracking engine lets one regex such as
``(a+)+$`` spend minutes on one line, freezing the service and every other tuning job. RE2
matches in time linear in the line, always, which is the only exception to "stdlib only" here:
a time budget per match is not enforceable for ``re`` (it holds the GIL and cannot be
interrupted from another thread), whereas RE2 needs no budget. The price is RE2's syntax:
no backreferences (``\\1``) and no lookaround (``(?=...)``); such a regex is refused when the
tuning job is created, with RE2's reason. Linear is not always cheap: a regex whose compiled
program exceeds ``MAX_REGEX_PROGRAM_SIZE`` instructions (counted repetitions such as
``(?:\\w{1,9}\\W{0,3}){1,80}``) overflows RE2's DFA cache and falls back to its NFA, which cost
33 us per byte of log here against 25 ns below the limit, so such a regex is refused too.
"""

from __future__ import annotations

import codecs
import math
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import re2

from tuner.errors import ValidationError

ANSI_ESCAPE = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC ... BEL or ST (titles, hyperlinks)
    r"|\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor movement)
    r"|\x1b[@-Z\\-_]"  # two-character escapes
)
LINE_BREAK = re.compile(r"\r\n|\r|\n")
DEFAULT_MAX_LINE_CHARS = 64 * 1024
MAX_REGEX_CHARS = 4096
MAX_METRIC_NAME_CHARS = 255  # SageMaker's limit; the store holds 256
# RE2 instructions: measured on 100 KB of noisy log lines, programs of 30-1,092 instructions
# matched at 22-37 ns per byte, 1,452 at 1.2 us and 5,772 at 33 us (the DFA cache overflows).
MAX_REGEX_PROGRAM_SIZE = 1000
# Texts on which a new metric regex must not match empty text (``check_matches_text``).
EMPTY_MATCH_PROBES = ("", "x", " ", "x y", "-")


def compile_metric_regex(regex: str) -> Any:
    """Compile with RE2 (linear-time matching); raise ``re2.error`` for what RE2 refuses."""
    options = re2.Options()
    options.log_errors = False
    return re2.compile(regex, options)


def _reason(exc: Exception) -> str:
    reason = exc.args[0] if exc.args else exc
    return reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)


class ObjectiveAggregation(StrEnum):
    """How a job's final objective is read from its time series."""

    LAST = "Last"  # the last reported value (SageMaker's semantics)
    BEST = "Best"  # the best finite value reported during the job


@dataclass(frozen=True)
class MetricDefinition:
    """A named regex with exactly one capture group that yields the metric's value."""

    name: str
    regex: str
    pattern: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValidationError(f"a metric definition needs a non-empty Name, got {self.name!r}")
        if not isinstance(self.regex, str) or not self.regex:
            raise ValidationError(
                f"metric {self.name!r} needs a non-empty Regex string, got {self.regex!r}"
            )
        if len(self.regex) > MAX_REGEX_CHARS or "\x00" in self.regex:
            raise ValidationError(
                f"Regex of metric {self.name!r} must be at most {MAX_REGEX_CHARS} characters "
                f"without NUL bytes, got {self.regex!r:.100}"
            )
        try:
            pattern = compile_metric_regex(self.regex)
        except re2.error as exc:
            raise ValidationError(
                f"Regex of metric {self.name!r} must be valid RE2 syntax (linear-time engine: "
                f"no backreferences, no lookaround), got {self.regex!r}: {_reason(exc)}"
            ) from None
        if pattern.programsize > MAX_REGEX_PROGRAM_SIZE:
            raise ValidationError(
                f"Regex of metric {self.name!r} must compile to at most "
                f"{MAX_REGEX_PROGRAM_SIZE} RE2 instructions (a larger program matches up to "
                f"1000 times slower), got {pattern.programsize} for {self.regex!r:.200}"
            )
        if pattern.groups != 1:
            raise ValidationError(
                f"Regex of metric {self.name!r} must have exactly one capture group, "
                f"got {pattern.groups} in {self.regex!r}"
            )
        object.__setattr__(self, "pattern", pattern)

    def check_matches_text(self) -> None:
        """Refuse a regex that matches empty text: it matches at every place of every line (or
        at every word, as ``\\b([0-9.]*)`` does) and captures no number. Probed on an empty
        line and on the shortest words, so a regex that matches empty text only in rarer
        places may still pass. Checked on new definitions only (``TuningJobDefinition``): one
        stored before the rule is read, resumed and taken over as it was."""
        if any(self._matches_empty(text) for text in EMPTY_MATCH_PROBES):
            raise ValidationError(
                f"Regex of metric {self.name!r} must not match empty text (it would match at "
                f"every place of every line, capturing no number), got {self.regex!r}: make "
                "what comes before the number, and the number, required, e.g. "
                "'accuracy=([0-9.]+)'"
            )

    def _matches_empty(self, text: str) -> bool:
        return any(m.group(0) == "" for m in self.pattern.finditer(text))

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> MetricDefinition:
        if not isinstance(spec, Mapping) or set(spec) != {"Name", "Regex"}:
            raise ValidationError(
                f'a metric definition must be {{"Name": ..., "Regex": ...}}, got {spec!r}'
            )
        return cls(spec["Name"], spec["Regex"])

    def to_dict(self) -> dict[str, str]:
        return {"Name": self.name, "Regex": self.regex}


def check_metric_name(name: str) -> None:
    """A new definition's metric names fit the store (checked where definitions are made, not
    in ``MetricDefinition``: a tuning job an older version stored with a longer name is still
    read and resumed)."""
    if len(name) > MAX_METRIC_NAME_CHARS or "\x00" in name:
        raise ValidationError(
            f"a metric's Name must be at most {MAX_METRIC_NAME_CHARS} characters (SageMaker's "
            f"limit) without NUL bytes, got {name!r:.100} ({len(name)} characters)"
        )


def validate_metric_definitions(
    definitions: Iterable[MetricDefinition | Mapping[str, Any]], objective_metric_name: str
) -> list[MetricDefinition]:
    """Build and check definitions: names unique, the objective among them.

    Raises ``ValidationError`` naming the rule and the value.
    """
    defs = [
        d if isinstance(d, MetricDefinition) else MetricDefinition.from_dict(d) for d in definitions
    ]
    names = [d.name for d in defs]
    for name in names:
        if names.count(name) > 1:
            raise ValidationError(f"metric names must be unique, got {name!r} twice")
    if objective_metric_name not in names:
        raise ValidationError(
            f"objective_metric_name must be one of the metric definitions {names}, "
            f"got {objective_metric_name!r}"
        )
    return defs


@dataclass(frozen=True)
class MetricPoint:
    """One reported value of a metric: ``seq`` orders all points of one job."""

    name: str
    value: float
    seq: int
    timestamp: float


MAX_UNPARSED = 100  # matches that are not numbers kept as examples per log (all are counted)
UNPARSED_TEXT_CHARS = 200  # of the last such capture kept per metric


@dataclass(frozen=True)
class UnparsedMatch:
    """A regex match whose captured text is not a number (shown by ``check-metrics``)."""

    name: str
    text: str
    line: str


class LogMetricParser:
    """Incremental parser: ``feed`` bytes as they arrive, ``close`` at the end of the log."""

    def __init__(
        self,
        definitions: Sequence[MetricDefinition],
        max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
        clock: Any = time.time,
    ) -> None:
        self.definitions = list(definitions)
        self.max_line_chars = max_line_chars
        self.unparsed: list[UnparsedMatch] = []  # the first MAX_UNPARSED only: memory stays flat
        self.unparsed_count = 0  # all of them
        self.last_unparsed: dict[str, str] = {}  # per metric, its last such text
        self.lines = 0
        self.last_line = ""
        self.dropped_at_cuts: dict[str, int] = {}  # per metric, matches touching a cut
        self._clock = clock
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._after_cut = False  # the buffer continues a line cut before it
        self._seq = 0

    def feed(self, data: bytes) -> list[MetricPoint]:
        """Parse every line completed by ``data``; keep the unfinished tail for later."""
        text = self._buffer + self._decoder.decode(data)
        held = "\r" if text.endswith("\r") else ""  # maybe the first half of a \r\n
        parts = LINE_BREAK.split(text[: len(text) - len(held)])
        self._buffer = parts.pop() + held
        points: list[MetricPoint] = []
        for n, line in enumerate(parts):
            points.extend(self._parse_line(line, after_cut=n == 0 and self._after_cut))
        if parts:  # the buffer begins a line of its own
            self._after_cut = False
        # A line longer than max_line_chars is parsed in pieces of that size, cut by index:
        # cutting the rest off each piece copied it, quadratic in the line (a 48 MB line: 24 s).
        size = self.max_line_chars
        pieces = max(0, (len(self._buffer) - 1) // size)  # all but a last piece of 1..size
        for i in range(pieces):
            piece = self._buffer[i * size : (i + 1) * size]
            points.extend(self._parse_line(piece, self._after_cut or i > 0, before_cut=True))
        if pieces:
            self._after_cut = True
        self._buffer = self._buffer[pieces * size :]
        return points

    def close(self) -> list[MetricPoint]:
        """Parse the last line, which may lack a line break."""
        tail = self._buffer + self._decoder.decode(b"", final=True)
        self._buffer = ""
        if tail.endswith("\r"):  # held back by feed: the last line's break
            return self._parse_line(tail[:-1], self._after_cut)
        return self._parse_line(tail, self._after_cut) if tail else []

    def cut_note(self, name: str) -> str:
        """What was dropped of metric ``name`` at the cuts of long lines (see the module), as
        a clause to add to a message; empty when nothing was."""
        count = self.dropped_at_cuts.get(name, 0)
        if not count:
            return ""
        return (
            f" ({count} match{'es' if count > 1 else ''} dropped where a line longer than "
            f"{self.max_line_chars} characters was cut: print the metric on a line of its own)"
        )

    def _parse_line(
        self, line: str, after_cut: bool = False, before_cut: bool = False
    ) -> list[MetricPoint]:
        """The points of one line, or of one piece of a line cut before and/or after it: a
        match touching a cut is dropped (the text beyond the cut may extend or change it)."""
        if not before_cut:
            self.lines += 1
        clean = ANSI_ESCAPE.sub("", line)
        if clean.strip():
            self.last_line = clean.strip()
        now = self._clock()
        points = []
        for definition in self.definitions:
            for match in definition.pattern.finditer(clean):
                if (after_cut and match.start() == 0) or (before_cut and match.end() == len(clean)):
                    dropped = self.dropped_at_cuts
                    dropped[definition.name] = dropped.get(definition.name, 0) + 1
                    continue
                text = match.group(1)
                value = parse_number(text)
                if value is None:
                    self.unparsed_count += 1
                    self.last_unparsed[definition.name] = (text or "")[:UNPARSED_TEXT_CHARS]
                    if len(self.unparsed) < MAX_UNPARSED:
                        self.unparsed.append(UnparsedMatch(definition.name, text or "", clean))
                    continue
                points.append(MetricPoint(definition.name, value, self._seq, now))
                self._seq += 1
        return points


def parse_number(text: str | None) -> float | None:
    """The float a captured text spells in ASCII (``nan``, ``inf``, ``1e-3`` ...), or None."""
    if text is None:
        return None
    text = text.strip()
    # float() would read "1_000" as 1000 and "١٢" (Arabic-Indic digits) as 12: a log means
    # something else by either
    if "_" in text or not text.isascii():
        return None
    try:
        return float(text)
    except ValueError:
        return None


def log_chunks(path: str | Path, chunk_size: int = 1 << 20) -> Iterator[bytes]:
    """A log file's bytes in pieces of at most ``chunk_size``, read once, in order (memory stays
    flat, and a pipe works as well as a file). Raises OSError where it cannot be read."""
    with open(path, "rb") as f:
        while chunk := f.read(chunk_size):
            yield chunk


def parse_log(
    data: bytes, definitions: Sequence[MetricDefinition], chunk_size: int = 0
) -> tuple[list[MetricPoint], LogMetricParser]:
    """Parse a whole log (optionally in ``chunk_size`` pieces, as a stream would deliver it)."""
    parser = LogMetricParser(definitions)
    points: list[MetricPoint] = []
    step = chunk_size or max(1, len(data))
    for start in range(0, len(data), step):
        points.extend(parser.feed(data[start : start + step]))
    points.extend(parser.close())
    return points, parser


def final_objective(
    points: Iterable[MetricPoint],
    objective_metric_name: str,
    aggregation: ObjectiveAggregation = ObjectiveAggregation.LAST,
    maximize: bool = True,
) -> float | None:
    """The job's objective from its points, or None when the metric was never reported.

    ``LAST``: the value with the highest ``seq`` (it may be ``nan`` or infinite). ``BEST``: the
    best finite value, or the last value when none was finite (so a failure names what the log
    printed: ``inf`` stays ``inf``).
    """
    values = [p for p in points if p.name == objective_metric_name]
    if not values:
        return None
    last = max(values, key=lambda p: p.seq).value
    finite = [p.value for p in values if math.isfinite(p.value)]
    if aggregation is ObjectiveAggregation.LAST or not finite:
        return last
    return max(finite) if maximize else min(finite)
