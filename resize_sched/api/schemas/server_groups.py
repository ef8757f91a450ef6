"""Body schema of server groups: create, per microversion."""

from typing import Any

from resize_sched.api.schemas.fields import MAX_INT, NAME, body, closed

_GROUP_POLICIES = ["anti-affinity", "affinity"]
_SOFT_GROUP_POLICIES = ["soft-anti-affinity", "soft-affinity"]


def server_group_create(version: Any) -> dict[str, Any]:
    """The body of ``POST /os-server-groups`` at a microversion: a
    ``policies`` list of one (``affinity``, ``anti-affinity``; their soft
    forms from 2.15) up to 2.63, then ``policy`` and ``rules``
    (``max_server_per_host``, a positive integer) from 2.64, as Nova."""
    names = _GROUP_POLICIES + (_SOFT_GROUP_POLICIES if version.at_least("2.15") else [])
    properties: dict[str, Any] = {"name": NAME}
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
    return body("server_group", closed(properties, required=required))
