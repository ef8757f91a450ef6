"""``os-migrateLive``: ``POST /v2.1/servers/{id}/action`` moving a running server.

As Nova's: the body's shape follows the microversion
(:func:`resize_sched.api.schemas.migrate_live`), only an administrator may
ask (``os_compute_api:os-migrate-server:migrate_live``), the server must be
ACTIVE with no task (409), and a named host must be another compute host,
known, enabled and up (400). ``block_migration`` and ``disk_over_commit``
are accepted and recorded only: the fake hypervisor has no disks to copy.
``force`` (2.30 to 2.67) is accepted too; the named host is asked of
Placement either way, so a forced migration can never overcommit a host.

Every check comes before the first write, so a refused request changes
nothing. The accepted migration is recorded (``accepted``, of type
``live-migration``) and cast to the conductor; the answer is 202.
"""

from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched import actions, exception
from resize_sched.api import faults, policy, schemas
from resize_sched.api.request import ApiRequest, empty_response
from resize_sched.db import models
from resize_sched.policies import live_migrate as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

_TRUE = {True, "True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes"}


def live_migrate(
    state: "ApiState", req: ApiRequest, server_id: str, body: dict[str, Any]
) -> webob.Response:
    """``{"os-migrateLive": {"host": ..., "block_migration": ...}}``.

    :returns: 202, no body.
    :raises faults.BadRequest: a bad body; the host is unknown, disabled,
        down, or the server's own.
    :raises ServerNotFound: unknown, or another project's: 404.
    :raises faults.Forbidden: the policy refuses (non-administrators).
    :raises ServerStateConflict: not ACTIVE with no task: 409.
    """
    schemas.validate(body, schemas.migrate_live(req.version))
    server = policy.authorized_server(req, state.db, rules.MIGRATE_LIVE, server_id)
    args = body["os-migrateLive"]
    if not state.conductor.can_live_migrate:
        raise faults.Conflict(
            "Live migration needs conductor RPC 1.5; [upgrade_levels] conductor caps it "
            "lower (an upgrade in progress)."
        )
    if server.status != models.STATUS_ACTIVE or server.task_state is not None:
        raise faults.Conflict(
            f"Cannot 'os-migrateLive' instance {server.uuid} while it is in "
            + (
                f"task_state {server.task_state}"
                if server.task_state
                else f"vm_state {server.vm_state}"
            )
        )
    host = args.get("host")
    if host is not None:
        try:
            actions.check_live_destination(state.db, state.conf, server, host)
        except exception.Invalid as exc:
            raise faults.BadRequest(exc.message) from None
    block = args.get("block_migration")
    migration = actions.begin_live_migration(
        state.db,
        server.uuid,
        host=host,
        block_migration=None if block == "auto" else block in _TRUE,
        project_id=req.project_scope(),
        context=req.context,
    )
    state.conductor.live_migrate_server(req.context, migration.uuid)
    LOG.info(
        "Live migration of server %s requested (migration %s, host %s, force %s)",
        server.uuid,
        migration.uuid,
        host or "chosen by the scheduler",
        args.get("force", False) in _TRUE,
    )
    return empty_response(202)
