"""The operators of flavor extra specs that filters match against host values.

As Nova's: a requirement is ``<op> <value>`` or a bare value. Bare and
``=``: the host's number is at least the value. ``==``, ``!=``, ``>=``,
``<=``: numbers. ``s==``, ``s!=``, ``s<``, ``s<=``, ``s>``, ``s>=``: strings.
``<in> word``: the host's value contains ``word``. ``<all-in> a b``: it
contains every word. ``<or> a <or> b``: it equals one of them.
"""

import operator
from collections.abc import Callable
from typing import Any


def _number(text: str) -> float:
    return float(text)


_NUMERIC: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    ">=": operator.ge,
    "<=": operator.le,
}
_STRING: dict[str, Callable[[Any, Any], bool]] = {
    "s==": operator.eq,
    "s!=": operator.ne,
    "s<": operator.lt,
    "s<=": operator.le,
    "s>": operator.gt,
    "s>=": operator.ge,
}


def match(value: str, requirement: str) -> bool:
    """Whether the host's ``value`` meets ``requirement``."""
    words = requirement.split()
    if not words:
        return value == requirement
    op, rest = words[0], words[1:]
    if op == "<or>":
        # NOTE: "<or> a <or> b": every other word is a choice.
        return value in rest[::2]
    if op == "<in>":
        return bool(rest) and rest[0] in value
    if op == "<all-in>":
        if not rest:
            return False
        have = value.split() if not value.startswith("[") else _list(value)
        return all(word in have for word in rest)
    if op in _STRING:
        return bool(rest) and _STRING[op](value, rest[0])
    if op in _NUMERIC:
        if not rest:
            return False
        try:
            return _NUMERIC[op](_number(value), _number(rest[0]))
        except ValueError:
            return False
    # NOTE: a bare value: equal as text.
    return value == requirement


def _list(value: str) -> list[str]:
    return [w.strip(" '\"") for w in value.strip("[]").split(",")]
