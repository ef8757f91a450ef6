"""JSON schemas of request bodies, and the validator the handlers call.

They follow Nova's (``nova/api/openstack/compute/schemas``) where we serve
the same thing: counts may be integers or digit strings, a flavor id is a
string or integer. Server create accepts ``imageRef`` (recorded, and checked
when ``[glance]`` is configured), accepts and ignores the optional keys
openstacksdk and the CLI send that mean nothing without networks here
(``networks``, ``metadata``...), and takes block device mappings only to
refuse them clearly (no volumes here); any other key is refused.
"""

from typing import Any

import jsonschema
from oslo_utils import uuidutils

from resize_sched.api import faults

#: The largest count a body may carry (Nova's: a signed 32-bit integer).
MAX_INT = 2**31 - 1

#: Control characters (C0, DEL and C1): never in a name. PostgreSQL cannot
#: store NUL in text at all, and the others only garble logs and terminals.
_CONTROL = "\x00-\x1f\x7f-\x9f"

# NOTE: every pattern ends in \Z, not $: jsonschema searches with Python's re,
# where $ also matches before a final newline ("name\n" would pass).
_NAME = {
    "type": "string",
    "minLength": 1,
    "maxLength": 255,
    "pattern": f"^(?!\\s)[^{_CONTROL}]*(?<!\\s)\\Z",
}
_NO_CONTROL = f"^[^{_CONTROL}]*\\Z"
_FLAVOR_REF = {
    "anyOf": [
        {"type": "string", "minLength": 1, "maxLength": 2048, "pattern": _NO_CONTROL},
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


def as_bool(value: bool | str) -> bool:
    """A value :data:`BOOLEAN` accepted, as a bool."""
    if isinstance(value, bool):
        return value
    return value in _TRUE_STRINGS


def _count(minimum: int) -> dict[str, Any]:
    return {
        "type": ["integer", "string"],
        "pattern": _INT_STRING,
        "maxLength": 32,
        "minimum": minimum,
        "maximum": MAX_INT,
    }


FLAVOR_CREATE = {
    "type": "object",
    "properties": {
        "flavor": {
            "type": "object",
            "properties": {
                "name": _NAME,
                "id": {
                    "anyOf": [
                        {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": 255,
                            "pattern": r"^(?! )[a-zA-Z0-9. _-]+(?<! )\Z",
                        },
                        {"type": "integer", "minimum": 0, "maximum": MAX_INT},
                        {"type": "null"},
                    ]
                },
                "ram": _count(1),
                "vcpus": _count(1),
                "disk": _count(0),
                "OS-FLV-EXT-DATA:ephemeral": _count(0),
                # NOTE: Nova takes "" for no swap.
                "swap": {"anyOf": [_count(0), {"type": "string", "enum": [""]}]},
                # NOTE: only nova-network ever used it; accepted and ignored.
                "rxtx_factor": {"type": "number", "exclusiveMinimum": 0},
                "os-flavor-access:is_public": BOOLEAN,
                "description": {"type": "null"},
            },
            "required": ["name", "ram", "vcpus", "disk"],
            "additionalProperties": False,
        }
    },
    "required": ["flavor"],
    "additionalProperties": False,
}

_SPEC_KEY = r"^[a-zA-Z0-9-_:. ]{1,255}\Z"
_SPEC_VALUE = {
    "type": ["string", "number", "boolean"],
    "minLength": 0,
    "maxLength": 255,
    "pattern": _NO_CONTROL,
}

EXTRA_SPECS_CREATE = {
    "type": "object",
    "properties": {
        "extra_specs": {
            "type": "object",
            "patternProperties": {_SPEC_KEY: _SPEC_VALUE},
            "additionalProperties": False,
        }
    },
    "required": ["extra_specs"],
    "additionalProperties": False,
}

EXTRA_SPEC_UPDATE = {
    "type": "object",
    "patternProperties": {_SPEC_KEY: _SPEC_VALUE},
    "minProperties": 1,
    "maxProperties": 1,
    "additionalProperties": False,
}

#: Nova's metadata: keys of letters, digits and ``-_:. ``, values strings,
#: both at most 255 characters (the database's columns).
METADATA = {
    "type": "object",
    "patternProperties": {
        r"^[a-zA-Z0-9-_:. ]{1,255}\Z": {"type": "string", "maxLength": 255},
    },
    "additionalProperties": False,
}

#: ``POST`` / ``PUT /servers/{id}/metadata``: the pairs to merge or to set.
METADATA_SET = {
    "type": "object",
    "properties": {"metadata": METADATA},
    "required": ["metadata"],
    "additionalProperties": False,
}

#: ``PUT /servers/{id}/metadata/{key}``: exactly one pair, the key's.
METADATA_ITEM = {
    "type": "object",
    "properties": {"meta": {**METADATA, "minProperties": 1, "maxProperties": 1}},
    "required": ["meta"],
    "additionalProperties": False,
}

#: Nova's access addresses: an IPv4 and an IPv6 address, checked as such.
ACCESS_IPV4 = {"type": "string", "format": "ipv4"}
ACCESS_IPV6 = {"type": "string", "format": "ipv6"}

_NETWORKS = {
    "oneOf": [
        {"type": "string", "enum": ["auto", "none"]},
        {"type": "array", "items": {"type": "object"}},
    ]
}

#: A UUID, with or without its dashes, as Nova's ``uuid`` format takes it.
UUID_PATTERN = (
    "^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\\Z"
)

_UUID = {"type": "string", "format": "uuid"}

#: ``os:scheduler_hints`` at create, as Nova checks them: ``same_host`` and
#: ``different_host`` name servers (one uuid or a list), ``group`` a server
#: group; the others Nova knows are checked for their shape, and any other
#: hint is accepted and ignored (Nova relaxed the schema so).
SCHEDULER_HINTS = {
    "type": "object",
    "properties": {
        "group": {"oneOf": [{"type": "array", "items": _UUID}, _UUID]},
        "different_host": {"oneOf": [_UUID, {"type": "array", "items": _UUID}]},
        "same_host": {"type": ["string", "array"], "items": _UUID},
        "query": {"type": ["string", "object"]},
        "target_cell": {"type": "string", "minLength": 1, "maxLength": 255},
        "different_cell": {"type": ["string", "array"], "items": {"type": "string"}},
        "build_near_host_ip": {
            "type": "string",
            "oneOf": [{"format": "ipv4"}, {"format": "ipv6"}],
        },
        "cidr": {"type": "string", "pattern": "^/[0-9a-f.:]+$"},
    },
    "additionalProperties": True,
}

SERVER_CREATE = {
    "type": "object",
    "properties": {
        "server": {
            "type": "object",
            "properties": {
                "name": _NAME,
                "flavorRef": _FLAVOR_REF,
                "imageRef": {"type": "string", "maxLength": 2048, "pattern": _NO_CONTROL},
                # Refused by the handler with a clear message: no volumes here.
                "block_device_mapping_v2": {"type": "array"},
                "block_device_mapping": {"type": "array"},
                # Never stored (as in Nova): returned once, on create.
                "adminPass": {"type": "string"},
                "accessIPv4": ACCESS_IPV4,
                "accessIPv6": ACCESS_IPV6,
                "metadata": METADATA,
                # Accepted and ignored: no networks here.
                "networks": _NETWORKS,
                "key_name": {"type": ["string", "null"]},
                "security_groups": {"type": "array"},
                "availability_zone": {"type": ["string", "null"]},
                "user_data": {"type": ["string", "null"]},
                "config_drive": {"type": ["boolean", "string"]},
                "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
                # Multiple create, as Nova's: min_count <= max_count is
                # checked by the handler.
                "min_count": _count(1),
                "max_count": _count(1),
                "return_reservation_id": BOOLEAN,
            },
            "required": ["name", "flavorRef"],
            "additionalProperties": False,
        },
        "os:scheduler_hints": SCHEDULER_HINTS,
        "OS-SCH-HNT:scheduler_hints": SCHEDULER_HINTS,
    },
    "required": ["server"],
    "additionalProperties": False,
}

_GROUP_POLICIES = ["anti-affinity", "affinity"]
_SOFT_GROUP_POLICIES = ["soft-anti-affinity", "soft-affinity"]


def server_group_create(version: Any) -> dict[str, Any]:
    """The body of ``POST /os-server-groups`` at a microversion: a
    ``policies`` list of one (``affinity``, ``anti-affinity``; their soft
    forms from 2.15) up to 2.63, then ``policy`` and ``rules``
    (``max_server_per_host``, a positive integer) from 2.64, as Nova."""
    names = _GROUP_POLICIES + (_SOFT_GROUP_POLICIES if version.at_least("2.15") else [])
    properties: dict[str, Any] = {"name": _NAME}
    if version.at_least("2.64"):
        properties["policy"] = {"type": "string", "enum": names}
        properties["rules"] = {
            "type": "object",
            "properties": {
                "max_server_per_host": {
                    "type": ["integer", "string"],
                    "pattern": "^[0-9]*\\Z",
                    "minimum": 1,
                    "minLength": 1,
                    "maximum": MAX_INT,
                }
            },
            "additionalProperties": False,
        }
        required = ["name", "policy"]
    else:
        properties["policies"] = {
            "type": "array",
            "prefixItems": [{"type": "string", "enum": names}],
            "items": False,
            "uniqueItems": True,
            "minItems": 1,
            "maxItems": 1,
        }
        required = ["name", "policies"]
    return {
        "type": "object",
        "properties": {
            "server_group": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            }
        },
        "required": ["server_group"],
        "additionalProperties": False,
    }


RESIZE = {
    "type": "object",
    "properties": {
        "resize": {
            "type": "object",
            "properties": {
                "flavorRef": _FLAVOR_REF,
                "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
            },
            "required": ["flavorRef"],
            "additionalProperties": False,
        }
    },
    "required": ["resize"],
    "additionalProperties": False,
}


def _bare_action(name: str) -> dict[str, Any]:
    """An action whose value Nova does not look at (``null``, ``{}``...)."""
    return {
        "type": "object",
        "properties": {name: {}},
        "required": [name],
        "additionalProperties": False,
    }


#: ``migrate`` up to 2.55: ``null`` or an empty object (Tempest sends ``{}``).
MIGRATE = {
    "type": "object",
    "properties": {"migrate": {"type": ["object", "null"], "maxProperties": 0}},
    "required": ["migrate"],
    "additionalProperties": False,
}

#: ``migrate`` from 2.56: an optional ``host`` (``null``: the scheduler chooses).
MIGRATE_V256 = {
    "type": "object",
    "properties": {
        "migrate": {
            "type": ["object", "null"],
            "properties": {"host": {"type": ["string", "null"], "minLength": 1, "maxLength": 255}},
            "additionalProperties": False,
        }
    },
    "required": ["migrate"],
    "additionalProperties": False,
}

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
UNSHELVE_V277 = {
    "type": "object",
    "properties": {
        "unshelve": {
            "type": ["object", "null"],
            "properties": {"availability_zone": _NAME},
            "required": ["availability_zone"],
            "additionalProperties": False,
        }
    },
    "required": ["unshelve"],
    "additionalProperties": False,
}

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
    return {
        "type": "object",
        "properties": {
            "os-migrateLive": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            }
        },
        "required": ["os-migrateLive"],
        "additionalProperties": False,
    }


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
    return {
        "type": "object",
        "properties": {
            "evacuate": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            }
        },
        "required": ["evacuate"],
        "additionalProperties": False,
    }


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

_UPDATE_FIELDS = {
    "name": _NAME,
    "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
    "accessIPv4": ACCESS_IPV4,
    "accessIPv6": ACCESS_IPV6,
}


def server_update(with_description: bool) -> dict[str, Any]:
    """``PUT /servers/{id}``: Nova's, ``description`` from 2.19."""
    fields = dict(_UPDATE_FIELDS)
    if with_description:
        fields["description"] = {
            "type": ["string", "null"],
            "maxLength": 255,
            "pattern": _NO_CONTROL,
        }
    return {
        "type": "object",
        "properties": {
            "server": {"type": "object", "properties": fields, "additionalProperties": False}
        },
        "required": ["server"],
        "additionalProperties": False,
    }


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
