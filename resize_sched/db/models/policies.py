"""The tables of policy: server groups, aggregates, quotas, key pairs, flavor access."""

from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from resize_sched.db.models.base import Base, TimestampMixin, owned_by, serial_id, unique_uuid


class ServerGroup(TimestampMixin, Base):
    """A server group (Nova's ``instance_groups`` with its one policy).

    ``policy`` is one of ``affinity``, ``anti-affinity``, ``soft-affinity``,
    ``soft-anti-affinity``; ``rules`` holds ``max_server_per_host`` (2.64)
    for ``anti-affinity``. Deleted rows are removed, as in Nova's API
    database.
    """

    __tablename__ = "server_groups"
    __table_args__ = (sa.Index(None, "project_id"),)

    id: Mapped[int] = serial_id()
    uuid: Mapped[str] = unique_uuid()
    name: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    project_id: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    user_id: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    policy: Mapped[str] = mapped_column(sa.String(32), nullable=False)
    rules: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False, default=dict)

    def __repr__(self) -> str:
        return f"<ServerGroup {self.uuid} {self.policy}>"


class ServerGroupMember(TimestampMixin, Base):
    """One server in a group; a server is in one group at most."""

    __tablename__ = "server_group_members"
    __table_args__ = (sa.Index(None, "group_id"),)

    id: Mapped[int] = serial_id()
    group_id: Mapped[int] = owned_by("server_groups.id")
    server_uuid: Mapped[str] = unique_uuid()


class Aggregate(TimestampMixin, Base):
    """A host aggregate (Nova's ``aggregates``); its availability zone is
    the metadata key ``availability_zone``, as in Nova. ``uuid`` is the
    Placement aggregate its hosts' root providers are members of."""

    __tablename__ = "aggregates"

    id: Mapped[int] = serial_id()
    uuid: Mapped[str] = unique_uuid()
    name: Mapped[str] = mapped_column(sa.String(255), nullable=False, unique=True)

    def __repr__(self) -> str:
        return f"<Aggregate {self.id} {self.name!r}>"


class AggregateHost(TimestampMixin, Base):
    """A host (a compute service's host name) in an aggregate."""

    __tablename__ = "aggregate_hosts"
    __table_args__ = (sa.UniqueConstraint("host", "aggregate_id"), sa.Index(None, "host"))

    id: Mapped[int] = serial_id()
    aggregate_id: Mapped[int] = owned_by("aggregates.id")
    host: Mapped[str] = mapped_column(sa.String(255), nullable=False)


class AggregateMetadata(TimestampMixin, Base):
    """One key/value pair of an aggregate's metadata."""

    __tablename__ = "aggregate_metadata"
    __table_args__ = (sa.UniqueConstraint("aggregate_id", "key"), sa.Index(None, "key"))

    id: Mapped[int] = serial_id()
    aggregate_id: Mapped[int] = owned_by("aggregates.id")
    key: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    value: Mapped[str] = mapped_column(sa.String(255), nullable=False)


class Quota(TimestampMixin, Base):
    """A project's (or, with ``user_id``, a user's in a project) limit on
    one resource (``instances``, ``cores``, ``ram``, ``server_groups``...);
    -1 is unlimited."""

    __tablename__ = "quotas"
    __table_args__ = (sa.UniqueConstraint("project_id", "user_id", "resource"),)

    id: Mapped[int] = serial_id()
    project_id: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    #: None: the project's own limit; else a user's within the project.
    user_id: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    resource: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    hard_limit: Mapped[int] = mapped_column(sa.Integer, nullable=False)


class QuotaClass(TimestampMixin, Base):
    """A quota class's limit on one resource; the class ``default`` gives
    every project's default (Nova's ``os-quota-class-sets``)."""

    __tablename__ = "quota_classes"
    __table_args__ = (sa.UniqueConstraint("class_name", "resource"),)

    id: Mapped[int] = serial_id()
    class_name: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    resource: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    hard_limit: Mapped[int] = mapped_column(sa.Integer, nullable=False)


class KeyPair(TimestampMixin, Base):
    """A user's SSH (or x509) public key, by name (``os-keypairs``)."""

    __tablename__ = "key_pairs"
    __table_args__ = (sa.UniqueConstraint("user_id", "name"),)

    id: Mapped[int] = serial_id()
    name: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    user_id: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    fingerprint: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    public_key: Mapped[str] = mapped_column(sa.Text, nullable=False)
    type: Mapped[str] = mapped_column(sa.String(16), nullable=False, default="ssh")


class FlavorProject(TimestampMixin, Base):
    """A project given access to a private flavor (``os-flavor-access``)."""

    __tablename__ = "flavor_projects"
    __table_args__ = (sa.UniqueConstraint("flavor_id", "project_id"),)

    id: Mapped[int] = serial_id()
    flavor_id: Mapped[int] = owned_by("flavors.id")
    project_id: Mapped[str] = mapped_column(sa.String(255), nullable=False)
