"""Which values count as numbers: ints that are not bools, real finite numbers (Python's or
NumPy's), for every check of an argument or a config field."""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["is_finite_number", "is_int"]


def is_int(value) -> bool:
    """True for Python and NumPy integers, but not for bools."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def is_finite_number(value) -> bool:
    """A real, finite number that is not a bool."""
    real = isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
    return real and math.isfinite(value)
