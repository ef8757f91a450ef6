"""Body schemas of servers: create (with its hints), update, metadata.

Server create accepts ``imageRef`` (recorded, and checked when ``[glance]``
is configured), accepts and ignores the optional keys openstacksdk and the
CLI send that mean nothing without networks here (``networks``,
``security_groups``...), and takes block device mappings only to refuse them
clearly (no volumes here); any other key is refused.
"""

from typing import Any

from resize_sched.api.schemas.fields import (
    ACCESS_IPV4,
    ACCESS_IPV6,
    BOOLEAN,
    DISK_CONFIG,
    FLAVOR_REF,
    NAME,
    NO_CONTROL,
    UUID,
    body,
    closed,
    count,
    key_value_map,
)

#: Nova's metadata: keys of letters, digits and ``-_:. ``, values strings,
#: both at most 255 characters (the database's columns).
METADATA = key_value_map(r"^[a-zA-Z0-9-_:. ]{1,255}\Z", {"type": "string", "maxLength": 255})

#: ``POST`` / ``PUT /servers/{id}/metadata``: the pairs to merge or to set.
METADATA_SET = body("metadata", METADATA)

#: ``PUT /servers/{id}/metadata/{key}``: exactly one pair, the key's.
METADATA_ITEM = body("meta", {**METADATA, "minProperties": 1, "maxProperties": 1})

_NETWORKS = {
    "oneOf": [
        {"type": "string", "enum": ["auto", "none"]},
        {"type": "array", "items": {"type": "object"}},
    ]
}

#: ``os:scheduler_hints`` at create, as Nova checks them: ``same_host`` and
#: ``different_host`` name servers (one uuid or a list), ``group`` a server
#: group; the others Nova knows are checked for their shape, and any other
#: hint is accepted and ignored (Nova relaxed the schema so).
SCHEDULER_HINTS = {
    "type": "object",
    "properties": {
        "group": {"oneOf": [{"type": "array", "items": UUID}, UUID]},
        "different_host": {"oneOf": [UUID, {"type": "array", "items": UUID}]},
        "same_host": {"type": ["string", "array"], "items": UUID},
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

SERVER_CREATE = closed(
    {
        "server": closed(
            {
                "name": NAME,
                "flavorRef": FLAVOR_REF,
                "imageRef": {"type": "string", "maxLength": 2048, "pattern": NO_CONTROL},
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
                "OS-DCF:diskConfig": DISK_CONFIG,
                # Multiple create, as Nova's: min_count <= max_count is
                # checked by the handler.
                "min_count": count(1),
                "max_count": count(1),
                "return_reservation_id": BOOLEAN,
            },
            required=["name", "flavorRef"],
        ),
        "os:scheduler_hints": SCHEDULER_HINTS,
        "OS-SCH-HNT:scheduler_hints": SCHEDULER_HINTS,
    },
    required=["server"],
)

_UPDATE_FIELDS = {
    "name": NAME,
    "OS-DCF:diskConfig": DISK_CONFIG,
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
            "pattern": NO_CONTROL,
        }
    return body("server", closed(fields))
