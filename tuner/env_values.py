"""Numbers read from text and from environment variables: None for text that is not one, and a
ValidationError naming the variable, the rule and the value for a variable that is set badly."""

from __future__ import annotations

import math
import os

from tuner.errors import ValidationError

MOST = 1_000_000  # the largest count a setting takes (beyond it shares of 1/N underflow)
COUNT_RULE = f"a whole number from 1 to {MOST:,}"


def positive_seconds(text: str) -> float | None:
    """``text`` as a finite number of seconds > 0, or None when it is not one."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 < value < math.inf else None


def positive_whole(text: str) -> int | None:
    """``text`` as a whole number from 1 to ``MOST`` in ASCII digits, or None when it is not
    one (a string of thousands of digits too: it is never converted)."""
    digits = text.lstrip("0")
    if not (text.isascii() and text.isdigit()) or len(digits) > len(str(MOST)):
        return None
    value = int(text)
    return value if 1 <= value <= MOST else None


def optional_count_from_env(variable: str) -> int | None:
    """Environment ``variable`` as a whole number from 1 to ``MOST``, None when it is unset or
    blank."""
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return None
    value = positive_whole(raw)
    if value is None:
        raise ValidationError(f"{variable} must be {COUNT_RULE}; got {raw!r}")
    return value


def count_from_env(variable: str, default: int) -> int:
    """Environment ``variable`` as a whole number from 1 to ``MOST``, ``default`` when it is
    unset or blank."""
    value = optional_count_from_env(variable)
    return default if value is None else value
