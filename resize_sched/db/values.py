"""Checks of the plain values a data API call is given: whole numbers in bounds, non-blank text."""

from typing import Any


def whole_number(value: Any, name: str, *, minimum: int, maximum: int = 2**31 - 1) -> int:
    """Check ``value`` is an int (not a bool) within bounds.

    :returns: the value.
    :raises ValueError: with a message naming ``name``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if not minimum <= value <= maximum:
        raise ValueError(f"{name} must be between {minimum} and {maximum}, got {value}")
    return value


def text(value: Any, name: str, *, max_length: int = 255) -> str:
    """Check ``value`` is a non-blank string of at most ``max_length``.

    :returns: the value, stripped.
    :raises ValueError: with a message naming ``name``.
    """
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    value = value.strip()
    if len(value) > max_length:
        raise ValueError(f"{name} must be at most {max_length} characters long")
    return value
