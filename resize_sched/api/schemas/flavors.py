"""Body schemas of flavors: create, and their extra specs."""

from resize_sched.api.schemas.fields import (
    BOOLEAN,
    MAX_INT,
    NAME,
    NO_CONTROL,
    body,
    closed,
    count,
    key_value_map,
)

FLAVOR_CREATE = body(
    "flavor",
    closed(
        {
            "name": NAME,
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
            "ram": count(1),
            "vcpus": count(1),
            "disk": count(0),
            "OS-FLV-EXT-DATA:ephemeral": count(0),
            # NOTE: Nova takes "" for no swap.
            "swap": {"anyOf": [count(0), {"type": "string", "enum": [""]}]},
            # NOTE: only nova-network ever used it; accepted and ignored.
            "rxtx_factor": {"type": "number", "exclusiveMinimum": 0},
            "os-flavor-access:is_public": BOOLEAN,
            "description": {"type": "null"},
        },
        required=["name", "ram", "vcpus", "disk"],
    ),
)

_SPEC_KEY = r"^[a-zA-Z0-9-_:. ]{1,255}\Z"
_SPEC_VALUE = {
    "type": ["string", "number", "boolean"],
    "minLength": 0,
    "maxLength": 255,
    "pattern": NO_CONTROL,
}

EXTRA_SPECS_CREATE = body("extra_specs", key_value_map(_SPEC_KEY, _SPEC_VALUE))

# NOTE: written out: the bounds come before additionalProperties, the order
# in which jsonschema reports (and a 400 names) the first error.
EXTRA_SPEC_UPDATE = {
    "type": "object",
    "patternProperties": {_SPEC_KEY: _SPEC_VALUE},
    "minProperties": 1,
    "maxProperties": 1,
    "additionalProperties": False,
}
