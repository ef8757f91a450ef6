"""The SQLAlchemy models of resize_sched, one module per subject, and the names they answer to.

``from resize_sched.db import models`` gives every table (``models.Server``),
the base and column types (``models.Base``, ``models.utcnow``) and, re-exported
from :mod:`resize_sched.db.states`, every state constant
(``models.STATUS_ACTIVE``). The modules:

* :mod:`~resize_sched.db.models.base`: ``Base`` (the one ``MetaData`` Alembic
  and the schema checks compare), the column types, the timestamp mixin;
* :mod:`~resize_sched.db.models.servers`: flavors, servers, request specs;
* :mod:`~resize_sched.db.models.moves`: migrations and the two Placement
  journals;
* :mod:`~resize_sched.db.models.hosts`: services, compute nodes, leases;
* :mod:`~resize_sched.db.models.actions`: instance actions and their events;
* :mod:`~resize_sched.db.models.policies`: server groups, aggregates, quotas,
  key pairs, flavor access.

NOTE: the schema is owned by the Alembic migrations under ``db/migrations/``;
a change here needs a new migration, and the functional test comparing the
two (``autogenerate`` must find no difference) fails until it has one.
"""

from resize_sched.db import states as _states
from resize_sched.db.models.actions import InstanceAction, InstanceActionEvent
from resize_sched.db.models.base import (
    NAMING_CONVENTION,
    Base,
    NullableJSON,
    TimestampMixin,
    UTCDateTime,
    owned_by,
    serial_id,
    unique_uuid,
    utcnow,
)
from resize_sched.db.models.hosts import ComputeNode, Lease, Service
from resize_sched.db.models.moves import JournalEntry, JournalMixin, Migration, ServerJournalEntry
from resize_sched.db.models.policies import (
    Aggregate,
    AggregateHost,
    AggregateMetadata,
    FlavorProject,
    KeyPair,
    Quota,
    QuotaClass,
    ServerGroup,
    ServerGroupMember,
)
from resize_sched.db.models.servers import Flavor, RequestSpec, Server

# NOTE: every state name, so that models.STATUS_ACTIVE and the like keep
# working; states.py defines nothing but those names.
from resize_sched.db.states import *  # noqa: F403

__all__ = [
    "NAMING_CONVENTION",
    "Aggregate",
    "AggregateHost",
    "AggregateMetadata",
    "Base",
    "ComputeNode",
    "Flavor",
    "FlavorProject",
    "InstanceAction",
    "InstanceActionEvent",
    "JournalEntry",
    "JournalMixin",
    "KeyPair",
    "Lease",
    "Migration",
    "NullableJSON",
    "Quota",
    "QuotaClass",
    "RequestSpec",
    "Server",
    "ServerGroup",
    "ServerGroupMember",
    "ServerJournalEntry",
    "Service",
    "TimestampMixin",
    "UTCDateTime",
    "owned_by",
    "serial_id",
    "unique_uuid",
    "utcnow",
    *(name for name in vars(_states) if not name.startswith("_")),
]
