"""JSON schemas of request bodies, and the validator the handlers call.

One module per subject.

``from resize_sched.api import schemas; schemas.RESIZE`` reaches every
schema and helper: this package re-exports them. The shared field types and
the closed-object shape are in :mod:`.fields`, the validator in
:mod:`.validation`; the schemas follow Nova's
(``nova/api/openstack/compute/schemas``) where we serve the same thing.
"""

from resize_sched.api.schemas.fields import (
    ACCESS_IPV4,
    ACCESS_IPV6,
    BOOLEAN,
    BOOLEAN_VALUES,
    DISK_CONFIG,
    FLAVOR_REF,
    MAX_INT,
    NAME,
    NO_CONTROL,
    UUID_PATTERN,
    as_bool,
    body,
    closed,
    count,
    key_value_map,
)
from resize_sched.api.schemas.flavors import EXTRA_SPEC_UPDATE, EXTRA_SPECS_CREATE, FLAVOR_CREATE
from resize_sched.api.schemas.server_actions import (
    CONFIRM_RESIZE,
    MIGRATE,
    MIGRATE_V256,
    RESET_STATE,
    RESIZE,
    REVERT_RESIZE,
    SHELVE,
    SHELVE_OFFLOAD,
    START,
    STOP,
    UNSHELVE,
    UNSHELVE_V277,
    evacuate,
    migrate_live,
)
from resize_sched.api.schemas.server_groups import server_group_create
from resize_sched.api.schemas.servers import (
    METADATA,
    METADATA_ITEM,
    METADATA_SET,
    SCHEDULER_HINTS,
    SERVER_CREATE,
    server_update,
)
from resize_sched.api.schemas.validation import as_int, validate

__all__ = [
    "ACCESS_IPV4",
    "ACCESS_IPV6",
    "BOOLEAN",
    "BOOLEAN_VALUES",
    "CONFIRM_RESIZE",
    "DISK_CONFIG",
    "EXTRA_SPECS_CREATE",
    "EXTRA_SPEC_UPDATE",
    "FLAVOR_CREATE",
    "FLAVOR_REF",
    "MAX_INT",
    "METADATA",
    "METADATA_ITEM",
    "METADATA_SET",
    "MIGRATE",
    "MIGRATE_V256",
    "NAME",
    "NO_CONTROL",
    "RESET_STATE",
    "RESIZE",
    "REVERT_RESIZE",
    "SCHEDULER_HINTS",
    "SERVER_CREATE",
    "SHELVE",
    "SHELVE_OFFLOAD",
    "START",
    "STOP",
    "UNSHELVE",
    "UNSHELVE_V277",
    "UUID_PATTERN",
    "as_bool",
    "as_int",
    "body",
    "closed",
    "count",
    "evacuate",
    "key_value_map",
    "migrate_live",
    "server_group_create",
    "server_update",
    "validate",
]
