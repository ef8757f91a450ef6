"""The field types and object shapes every body schema is built from.

Names, counts, booleans, ids, addresses, and the closed object that wraps
each body.

They follow Nova's ``parameter_types`` where we serve the same thing: counts
may be integers or digit strings, a flavor id is a string or an integer.
"""

from typing import Any

#: The largest count a body may carry (Nova's: a signed 32-bit integer).
MAX_INT = 2**31 - 1

#: Control characters (C0, DEL and C1): never in a name. PostgreSQL cannot
#: store NUL in text at all, and the others only garble logs and terminals.
_CONTROL = "\x00-\x1f\x7f-\x9f"

# NOTE: every pattern ends in \Z, not $: jsonschema searches with Python's re,
# where $ also matches before a final newline ("name\n" would pass).
NAME = {
    "type": "string",
    "minLength": 1,
    "maxLength": 255,
    "pattern": f"^(?!\\s)[^{_CONTROL}]*(?<!\\s)\\Z",
}
NO_CONTROL = f"^[^{_CONTROL}]*\\Z"
FLAVOR_REF = {
    "anyOf": [
        {"type": "string", "minLength": 1, "maxLength": 2048, "pattern": NO_CONTROL},
        {"type": "integer", "minimum": 0, "maximum": MAX_INT},
    ]
}
# NOTE: at most 10 digits, so no conversion ever meets Python's limit on
# integer strings (4,300 digits: a 500 before) and the maximum is checked on
# an int; the whitespace around is bounded by maxLength.
_INT_STRING = r"^\s*[0-9]{1,10}\s*\Z"

#: Nova's ``parameter_types.boolean``: JSON booleans and these strings.
_TRUE_STRINGS = ("True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes", "y", "t")
_FALSE_STRINGS = ("False", "FALSE", "false", "0", "OFF", "Off", "off", "NO", "No", "no", "n", "f")
BOOLEAN_VALUES = (True, False, *_TRUE_STRINGS, *_FALSE_STRINGS)
BOOLEAN = {"type": ["boolean", "string"], "enum": list(BOOLEAN_VALUES)}

#: Nova's access addresses: an IPv4 and an IPv6 address, checked as such.
ACCESS_IPV4 = {"type": "string", "format": "ipv4"}
ACCESS_IPV6 = {"type": "string", "format": "ipv6"}

#: A UUID, with or without its dashes, as Nova's ``uuid`` format takes it.
UUID_PATTERN = (
    "^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\\Z"
)
UUID = {"type": "string", "format": "uuid"}

#: ``OS-DCF:diskConfig``: accepted where Nova takes it, and ignored.
DISK_CONFIG = {"type": "string", "enum": ["AUTO", "MANUAL"]}


def as_bool(value: bool | str) -> bool:
    """A value :data:`BOOLEAN` accepted, as a bool."""
    if isinstance(value, bool):
        return value
    return value in _TRUE_STRINGS


def count(minimum: int) -> dict[str, Any]:
    """A count of at least ``minimum``: an integer or a digit string."""
    return {
        "type": ["integer", "string"],
        "pattern": _INT_STRING,
        "maxLength": 32,
        "minimum": minimum,
        "maximum": MAX_INT,
    }


def closed(
    properties: dict[str, Any], required: list[str] | None = None, **rules: Any
) -> dict[str, Any]:
    """An object of these properties and no others (the shape of every body
    and of most of their members).

    The keys keep the order jsonschema reports errors in (type, properties,
    required, additionalProperties, then ``rules``), which decides the one
    error a 400 names.

    :param properties: name -> schema.
    :param required: the names that must be present (None: no such rule).
    :param rules: further keywords (``anyOf``, ``minProperties``...).
    """
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    schema["additionalProperties"] = False
    schema.update(rules)
    return schema


def body(name: str, member: dict[str, Any]) -> dict[str, Any]:
    """A body of one required key, ``{name: member}``, as every action's and
    most resources' bodies are."""
    return closed({name: member}, required=[name])


def key_value_map(key_pattern: str, value: dict[str, Any]) -> dict[str, Any]:
    """An object of keys matching ``key_pattern``, each holding a ``value``
    (metadata, extra specs)."""
    return {
        "type": "object",
        "patternProperties": {key_pattern: value},
        "additionalProperties": False,
    }
