"""How a definition's choices are matched: without regard to case (``random`` is ``Random``,
``maximize`` is ``Maximize``), the one rule every choice field of our definition keeps."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def canonical(value: Any, choices: Iterable[str]) -> Any:
    """The choice ``value`` names without regard to case, or ``value`` unchanged when it names
    none (for the field's own check to refuse, naming the choices)."""
    if isinstance(value, str):
        for choice in choices:
            if value.lower() == choice.lower():
                return choice
    return value
