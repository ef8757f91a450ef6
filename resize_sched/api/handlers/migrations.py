"""Migrations: ``GET /v2.1/os-migrations``.

By default (Nova's policy rules) an administrator lists every project's
migrations, a project manager only its own project's, asked for with
``project_id`` (else 403), with the host and node fields null.

Filters: ``instance_uuid``, ``status``, ``migration_type``,
``source_compute``, ``host`` (source or destination); from 2.59
``changes-since``, ``limit`` and ``marker`` (a migration uuid, newest
first); from 2.66 ``changes-before``; from 2.80 ``user_id`` and
``project_id``. Fields follow the microversion: ``migration_type`` from
2.23, ``uuid`` from 2.59, ``user_id``/``project_id`` from 2.80.

``old_instance_type_id`` and ``new_instance_type_id`` are the flavors'
database ids, integers, as in Nova (null for a flavor no longer in the
database). ``dest_host`` is the destination host's name (Nova: its IP).

The fields are exactly Nova's at each microversion (Tempest checks them
against Nova's schema). What is ours alone (the claim strategy a resize
runs with, why a migration failed) is not here: ``resize-sched-manage
migration list`` and ``migration show``, the resize notifications and the
instance action's events say it.
"""

import datetime
from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.api import policy
from resize_sched.api.request import (
    ApiRequest,
    changed_between,
    json_response,
    nova_timestamp,
    paginate,
)
from resize_sched.db import models
from resize_sched.db.project_scope import ALL_PROJECTS, ProjectScope
from resize_sched.policies import migrations as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)


class FlavorIds:
    """The database id of each flavor id, read once per request."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.known: dict[str, int | None] = {}

    def __call__(self, flavor: dict[str, Any]) -> int | None:
        flavorid = str(flavor.get("id"))
        if flavorid not in self.known:
            try:
                self.known[flavorid] = self.db.flavor_get(flavorid, read_deleted=True).id
            except exception.FlavorNotFound:
                self.known[flavorid] = None
        return self.known[flavorid]


def host_fields(migration: models.Migration, hosts: bool) -> dict[str, str | None]:
    """Where a migration runs, as both migration lists show it (Nova's
    names; ``dest_host`` is the destination's name, Nova's its IP).

    :param hosts: the caller may see them; every field is null if not.
    """
    fields = {
        "source_compute": migration.source_host,
        "source_node": migration.source_node,
        "dest_compute": migration.dest_host,
        "dest_node": migration.dest_node,
        "dest_host": migration.dest_host,
    }
    return fields if hosts else dict.fromkeys(fields)


def later_fields(req: ApiRequest, migration: models.Migration) -> dict[str, Any]:
    """The fields both migration lists add in later microversions: ``uuid``
    from 2.59, ``user_id`` and ``project_id`` from 2.80."""
    fields: dict[str, Any] = {}
    if req.version.at_least("2.59"):
        fields["uuid"] = migration.uuid
    if req.version.at_least("2.80"):
        fields["user_id"] = migration.user_id
        fields["project_id"] = migration.project_id
    return fields


def view(
    req: ApiRequest, migration: models.Migration, flavor_ids: FlavorIds, *, hosts: bool = True
) -> dict[str, Any]:
    """A migration as os-migrations shows it at this microversion.

    :param req: the request (for the microversion).
    :param migration: the migration.
    :param flavor_ids: the flavors' database ids.
    :param hosts: show where it runs; the host and node fields are null if not.
    :returns: the body of one migration.
    """
    body: dict[str, Any] = {
        "id": migration.id,
        "instance_uuid": migration.server_uuid,
        "status": migration.status,
        **host_fields(migration, hosts),
        "old_instance_type_id": flavor_ids(migration.old_flavor),
        "new_instance_type_id": flavor_ids(migration.new_flavor),
        "created_at": nova_timestamp(migration.created_at),
        "updated_at": nova_timestamp(migration.updated_at),
    }
    if req.version.at_least("2.23"):
        body["migration_type"] = migration.migration_type
    body.update(later_fields(req, migration))
    return body


def _changed(migration: models.Migration) -> datetime.datetime:
    return migration.updated_at or migration.created_at


def _filtered(req: ApiRequest, migrations: list[models.Migration]) -> list[models.Migration]:
    params = req.GET
    equal = {
        "migration_type": "migration_type",
        "source_compute": "source_host",
    }
    if req.version.at_least("2.80"):
        equal.update({"user_id": "user_id", "project_id": "project_id"})
    for param, attribute in equal.items():
        if param in params:
            migrations = [m for m in migrations if getattr(m, attribute) == params[param]]
    if "host" in params:
        host = params["host"]
        migrations = [m for m in migrations if host in (m.source_host, m.dest_host)]
    return changed_between(
        req,
        migrations,
        _changed,
        since_from="2.59",
        reversed_message="changes-since must not be later than changes-before.",
    )


def index(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /os-migrations``: migrations of every project, or of the caller's.

    :returns: ``{"migrations": [...]}``, 200 (with ``migrations_links`` when
        a ``limit`` cut the list).
    :raises faults.Forbidden: ``os_compute_api:os-migrations:index`` refuses,
        or ``:index:all_projects`` does and ``project_id`` is not the caller's.
    :raises faults.BadRequest: a bad filter, limit or marker.
    """
    policy.authorize(req, rules.INDEX)
    own_project = req.context.project_id
    asked_project = req.GET.get("project_id")
    scope: ProjectScope | None = ALL_PROJECTS
    if asked_project is None or asked_project != own_project:
        policy.authorize(req, rules.INDEX_ALL_PROJECTS)
    elif not policy.allowed(req, rules.INDEX_ALL_PROJECTS):
        # NOTE: whatever the microversion (project_id filters only from 2.80),
        # a caller limited to its own project sees nothing else.
        scope = own_project
    hosts = policy.allowed(req, rules.INDEX_HOST)
    status = req.GET.get("status")
    migrations = state.db.migration_list(
        server_uuid=req.GET.get("instance_uuid"),
        statuses=None if status is None else [status],
    )
    if scope is not ALL_PROJECTS:
        if not scope:
            # NOTE: a missing project never means every project.
            raise exception.ProjectRequired(what="migration listing")
        migrations = [m for m in migrations if m.project_id == scope]
    migrations = _filtered(req, migrations)
    links: list[dict[str, str]] = []
    if req.version.at_least("2.59"):
        migrations.sort(key=lambda m: (m.created_at, m.id), reverse=True)
        migrations, links = paginate(req, migrations, "uuid", "os-migrations")
    flavor_ids = FlavorIds(state.db)
    body: dict[str, Any] = {
        "migrations": [view(req, m, flavor_ids, hosts=hosts) for m in migrations]
    }
    if links:
        body["migrations_links"] = links
    return json_response(body)
