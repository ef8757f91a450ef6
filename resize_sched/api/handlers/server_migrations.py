"""A server's migrations: ``/v2.1/servers/{server_id}/migrations``.

List (2.23+) and show (2.23+) a server's migrations in progress, with
Nova's fields: ``uuid`` from 2.59, ``user_id``/``project_id`` from 2.80;
the live-migration counters (``memory_*_bytes``, ``disk_*_bytes``) are
null, as Nova shows them for a migration that is not live. Without
``os_compute_api:servers:migrations:index:host`` the host and node fields
of the list are null.

Nova lists and shows only live migrations here; we list and show those
(``accepted``, ``preparing``, ``running``) and a server's resize in
progress too (``pre-migrating`` to ``reverting``), which is what
``openstack server migration show`` needs.

Force-complete (2.22+, ``POST .../migrations/{id}/action`` with
``force_complete``) and abort (2.24+, ``DELETE``) apply to a live migration
that is ``running`` (its hand-over under way): both answer 202 and the
conductor asks the source host. For a server being resized Nova refuses
both with 409 (its state is not ``migrating``), and so do we, after the same
lookups and policy checks; a live migration not yet ``running`` is a 400,
as Nova answers before 2.65.
"""

from typing import TYPE_CHECKING, Any

import webob

from resize_sched import actions
from resize_sched.api import faults, policy
from resize_sched.api.request import ApiRequest, empty_response, json_response, nova_timestamp
from resize_sched.db import models
from resize_sched.policies import server_migrations as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

#: The body of force-complete.
FORCE_COMPLETE = {
    "type": "object",
    "properties": {"force_complete": {"type": "null"}},
    "required": ["force_complete"],
    "additionalProperties": False,
}

_HOST_FIELDS = ("source_compute", "source_node", "dest_compute", "dest_node", "dest_host")


def _require(req: ApiRequest, version: str) -> None:
    # NOTE: as Nova: a route below its microversion does not exist.
    if not req.version.at_least(version):
        raise faults.NotFound("The resource could not be found.")


def view(req: ApiRequest, migration: models.Migration, *, hosts: bool = True) -> dict[str, Any]:
    """A migration as ``/servers/{id}/migrations`` shows it at this microversion.

    :param hosts: show where it runs; the host and node fields are null if not.
    """
    body: dict[str, Any] = {
        "id": migration.id,
        "server_uuid": migration.server_uuid,
        "status": migration.status,
        "source_compute": migration.source_host,
        "source_node": migration.source_node,
        "dest_compute": migration.dest_host,
        "dest_node": migration.dest_node,
        "dest_host": migration.dest_host,
        "memory_total_bytes": None,
        "memory_processed_bytes": None,
        "memory_remaining_bytes": None,
        "disk_total_bytes": None,
        "disk_processed_bytes": None,
        "disk_remaining_bytes": None,
        "created_at": nova_timestamp(migration.created_at),
        "updated_at": nova_timestamp(migration.updated_at),
    }
    if not hosts:
        for key in _HOST_FIELDS:
            body[key] = None
    if req.version.at_least("2.59"):
        body["uuid"] = migration.uuid
    if req.version.at_least("2.80"):
        body["user_id"] = migration.user_id
        body["project_id"] = migration.project_id
    return body


def _server(state: "ApiState", req: ApiRequest, rule: str, server_id: str) -> models.Server:
    server = state.db.server_get(server_id, project_id=req.project_scope())
    policy.authorize(req, rule, policy.server_target(server))
    return server


def _in_progress(state: "ApiState", server_uuid: str) -> list[models.Migration]:
    return state.db.migration_list(server_uuid=server_uuid, statuses=models.IN_FLIGHT_STATUSES)


def index(state: "ApiState", req: ApiRequest, server_id: str) -> webob.Response:
    """``GET /servers/{server_id}/migrations`` (2.23+): its migrations in progress.

    :returns: ``{"migrations": [...]}``, 200.
    :raises ServerNotFound: unknown, or another project's: 404.
    :raises faults.Forbidden: ``os_compute_api:servers:migrations:index`` refuses.
    """
    _require(req, "2.23")
    server = _server(state, req, rules.INDEX, server_id)
    hosts = policy.allowed(req, rules.INDEX_HOST, policy.server_target(server))
    migrations = _in_progress(state, server.uuid)
    return json_response({"migrations": [view(req, m, hosts=hosts) for m in migrations]})


def show(state: "ApiState", req: ApiRequest, server_id: str, migration_id: str) -> webob.Response:
    """``GET /servers/{server_id}/migrations/{migration_id}`` (2.23+).

    :returns: ``{"migration": {...}}``, 200.
    :raises ServerNotFound: unknown, or another project's: 404.
    :raises faults.NotFound: no migration of this server in progress has that id.
    :raises faults.Forbidden: ``os_compute_api:servers:migrations:show`` refuses.
    """
    _require(req, "2.23")
    server = _server(state, req, rules.SHOW, server_id)
    for migration in _in_progress(state, server.uuid):
        if str(migration.id) == migration_id:
            return json_response({"migration": view(req, migration)})
    raise faults.NotFound(
        f"In-progress migration {migration_id} is not found for server {server.uuid}."
    )


def action(
    state: "ApiState", req: ApiRequest, server_id: str, migration_id: str
) -> webob.Response:
    """``POST /servers/{server_id}/migrations/{migration_id}/action`` (2.22+): ``force_complete``.

    :raises ServerNotFound: unknown, or another project's: 404.
    :raises faults.BadRequest: a body other than ``{"force_complete": null}``.
    :raises faults.Forbidden: ``os_compute_api:servers:migrations:force_complete`` refuses.
    :raises faults.Conflict: always for a resize, as Nova answers.
    """
    _require(req, "2.22")
    req.validated_body(FORCE_COMPLETE)
    server = _server(state, req, rules.FORCE_COMPLETE, server_id)
    migration = _running_live(state, server, migration_id, "force_complete")
    state.conductor.live_migration_force_complete(req.context, migration.uuid)
    return empty_response(202)


def delete(
    state: "ApiState", req: ApiRequest, server_id: str, migration_id: str
) -> webob.Response:
    """``DELETE /servers/{server_id}/migrations/{migration_id}`` (2.24+): abort.

    :raises ServerNotFound: unknown, or another project's: 404.
    :raises faults.Forbidden: ``os_compute_api:servers:migrations:delete`` refuses.
    :raises faults.Conflict: always for a resize, as Nova answers.
    """
    _require(req, "2.24")
    server = _server(state, req, rules.DELETE, server_id)
    migration = _running_live(state, server, migration_id, "abort live migration")
    state.conductor.live_migration_abort(req.context, migration.uuid)
    return empty_response(202)


def _running_live(
    state: "ApiState",
    server: models.Server,
    migration_id: str,
    operation: str,
) -> models.Migration:
    """The server's live migration ``migration_id``, which must be running.

    :param operation: the action's entry in the table of allowed states
        (a live migration's task is ``migrating``; a resize never has it).
    :raises faults.Conflict: the server is not live-migrating (as Nova).
    :raises faults.NotFound: no migration of the server has that id.
    :raises faults.BadRequest: that live migration is not ``running``.
    """
    allowed = actions.ALLOWED[operation]
    if not allowed.allows(server):
        raise faults.Conflict(allowed.refusal(server))
    for migration in state.db.migration_list(server_uuid=server.uuid):
        if str(migration.id) == migration_id:
            break
    else:
        raise faults.NotFound(
            f"Migration {migration_id} for instance {server.uuid} could not be found."
        )
    if (
        migration.migration_type != models.MIGRATION_TYPE_LIVE
        or migration.status != models.MIGRATION_RUNNING
    ):
        raise faults.BadRequest(
            f"Migration {migration_id} state of instance {server.uuid} is {migration.status}. "
            f"Cannot {operation} while the migration is in this state."
        )
    return migration
