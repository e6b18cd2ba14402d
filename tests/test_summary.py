"""How tuning jobs and their numbers are shown (``tuner.summary``)."""

from __future__ import annotations

import pytest

from tuner.summary import objective_text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.9999996, "0.9999996"),  # six digits read it as 1, the target it had not reached
        (0.999998, "0.999998"),
        (0.5, "0.5"),
        (1200.4, "1200.4"),
        (1 / 3, "0.3333333333"),
        (float("inf"), "inf"),
        (-2.5e-5, "-2.5e-05"),
        (1234567.0, "1234567"),  # the pages wrote "1.234567e+6": they now follow this form
        (1e20, "1e+20"),
    ],
)
def test_objectives_are_shown_with_the_digits_that_tell_them_apart(value, text):
    assert objective_text(value) == text
