"""Checking a request body against a schema, and reading a count it passed.

The message of a refused body names the first offending field, as Nova's
validator does; the formats checked are Nova's too.
"""

from typing import Any

import jsonschema
from oslo_utils import uuidutils

from resize_sched.api import faults
from resize_sched.api.schemas.fields import MAX_INT

#: The formats checked (as Nova's validator does): the address ones and
#: ``uuid`` (a server or group id in a scheduler hint).
_FORMATS = jsonschema.FormatChecker(["ipv4", "ipv6"])


@_FORMATS.checks("uuid")
def _is_uuid(value: object) -> bool:
    # NOTE: as Nova's: anything uuid.UUID reads (with or without dashes);
    # a non-string is the type check's to refuse.
    return not isinstance(value, str) or uuidutils.is_uuid_like(value)


def _describe(error: jsonschema.ValidationError) -> str:
    path = "/".join(str(p) for p in error.absolute_path)
    if error.validator == "additionalProperties" or not path:
        return f"Invalid input: {error.message}"
    return f"Invalid input for field/attribute {path}. Value: {error.instance!r}. {error.message}"


def validate(body: Any, schema: dict[str, Any]) -> None:
    """Check a request body against a schema.

    :param body: the decoded JSON body.
    :param schema: one of the schemas above.
    :raises faults.BadRequest: the body does not match; the message names the
        first offending field.
    """
    validator = jsonschema.Draft202012Validator(schema, format_checker=_FORMATS)
    error = jsonschema.exceptions.best_match(validator.iter_errors(body))
    if error is not None:
        raise faults.BadRequest(_describe(error))


def as_int(value: int | str, name: str = "value") -> int:
    """A count as validated above (an int or a digit string) as an int.

    The schemas already bound both forms; this checks again, before any
    conversion, so a count that reaches it unvalidated is a 400 too.

    :param value: the value.
    :param name: the field, for the message.
    :returns: the integer.
    :raises faults.BadRequest: not a count of at most :data:`MAX_INT`.
    """
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise faults.BadRequest(f"Invalid input for field/attribute {name}: not an integer.")
    if isinstance(value, str):
        text = value.strip()
        if not text.isascii() or not text.isdigit() or len(text) > len(str(MAX_INT)):
            raise faults.BadRequest(
                f"Invalid input for field/attribute {name}: not an integer of at most {MAX_INT}."
            )
        value = int(text)
    if not 0 <= value <= MAX_INT:
        raise faults.BadRequest(
            f"Invalid input for field/attribute {name}: must be between 0 and {MAX_INT}."
        )
    return value
