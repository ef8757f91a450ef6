"""Body schemas of the server actions (``POST /servers/{id}/action``).

Resize and its confirm and revert, migrate, live migrate, evacuate, stop,
start, shelve, unshelve and reset state, per microversion where Nova's
change.
"""

from typing import Any

from resize_sched.api.schemas.fields import DISK_CONFIG, FLAVOR_REF, NAME, body, closed


def _bare_action(name: str) -> dict[str, Any]:
    """An action whose value Nova does not look at (``null``, ``{}``...)."""
    return body(name, {})


def _action(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """The body of a server action whose value is an object of these
    properties and no others."""
    return body(name, closed(properties, required=required))


RESIZE = _action(
    "resize", {"flavorRef": FLAVOR_REF, "OS-DCF:diskConfig": DISK_CONFIG}, ["flavorRef"]
)


#: ``migrate`` up to 2.55: ``null`` or an empty object (Tempest sends ``{}``).
MIGRATE = body("migrate", {"type": ["object", "null"], "maxProperties": 0})

#: ``migrate`` from 2.56: an optional ``host`` (``null``: the scheduler chooses).
MIGRATE_V256 = body(
    "migrate",
    {
        "type": ["object", "null"],
        "properties": {"host": {"type": ["string", "null"], "minLength": 1, "maxLength": 255}},
        "additionalProperties": False,
    },
)

CONFIRM_RESIZE = _bare_action("confirmResize")
REVERT_RESIZE = _bare_action("revertResize")
STOP = _bare_action("os-stop")
START = _bare_action("os-start")
SHELVE = _bare_action("shelve")
SHELVE_OFFLOAD = _bare_action("shelveOffload")
#: ``unshelve`` up to 2.76: its value is not looked at.
UNSHELVE = _bare_action("unshelve")
#: ``unshelve`` from 2.77: ``null``, or an object naming the
#: ``availability_zone`` to place the offloaded server in (not an empty object).
UNSHELVE_V277 = body(
    "unshelve",
    {
        "type": ["object", "null"],
        "properties": {"availability_zone": NAME},
        "required": ["availability_zone"],
        "additionalProperties": False,
    },
)

#: Nova's boolean parameter type: JSON booleans and their usual spellings.
_BOOLEAN = {
    "enum": [
        True,
        "True",
        "TRUE",
        "true",
        "1",
        "ON",
        "On",
        "on",
        "YES",
        "Yes",
        "yes",
        False,
        "False",
        "FALSE",
        "false",
        "0",
        "OFF",
        "Off",
        "off",
        "NO",
        "No",
        "no",
    ]
}
_HOSTNAME = {
    "type": ["string", "null"],
    "minLength": 1,
    "maxLength": 255,
    "pattern": r"^[a-zA-Z0-9-._]*\Z",
}


def migrate_live(version: Any) -> dict[str, Any]:
    """``os-migrateLive`` at ``version`` (an :class:`~resize_sched.api.microversion.APIVersion`),
    as Nova's: ``block_migration`` and ``disk_over_commit`` required up to
    2.24; from 2.25 ``block_migration`` may be ``auto`` and
    ``disk_over_commit`` is gone; ``force`` from 2.30 up to 2.67."""
    properties: dict[str, Any] = {"host": _HOSTNAME}
    required = ["block_migration", "host"]
    if version.at_least("2.25"):
        properties["block_migration"] = {"oneOf": [_BOOLEAN, {"enum": ["auto"]}]}
    else:
        properties["block_migration"] = _BOOLEAN
        properties["disk_over_commit"] = _BOOLEAN
        required.append("disk_over_commit")
    if version.at_least("2.30") and not version.at_least("2.68"):
        properties["force"] = _BOOLEAN
    return _action("os-migrateLive", properties, required)


def evacuate(version: Any) -> dict[str, Any]:
    """``evacuate`` at ``version``, as Nova's: ``onSharedStorage`` required
    before 2.14, ``force`` from 2.29 up to 2.67."""
    properties: dict[str, Any] = {
        "host": {k: v for k, v in _HOSTNAME.items() if k != "type"} | {"type": "string"},
        "adminPass": {"type": "string", "maxLength": 255},
    }
    required: list[str] = []
    if not version.at_least("2.14"):
        properties["onSharedStorage"] = _BOOLEAN
        required.append("onSharedStorage")
    if version.at_least("2.29") and not version.at_least("2.68"):
        properties["force"] = _BOOLEAN
    return _action("evacuate", properties, required)


RESET_STATE = {
    "type": "object",
    "properties": {
        "os-resetState": {
            "type": "object",
            "properties": {"state": {"type": "string", "enum": ["active", "error"]}},
            "required": ["state"],
            "additionalProperties": False,
        }
    },
    "required": ["os-resetState"],
    "additionalProperties": False,
}


RESET_STATE = _action(
    "os-resetState", {"state": {"type": "string", "enum": ["active", "error"]}}, ["state"]
)
