"""``os-migrateLive``: ``POST /v2.1/servers/{id}/action`` moving a running server.

As Nova's: the body's shape follows the microversion
(:func:`resize_sched.api.schemas.migrate_live`); a manager of the server's
project or an administrator may ask with ``host`` null
(``os_compute_api:os-migrate-server:migrate_live``), only an administrator
may name the host (``migrate_live:host``); the server must be
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

from oslo_log import log as logging

from resize_sched import actions
from resize_sched.api import schemas
from resize_sched.api.action_runner import Begun, ServerAction
from resize_sched.api.request import ApiRequest
from resize_sched.db import states
from resize_sched.policies import live_migrate as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

_TRUE = {True, "True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes"}


def _live_migrate(
    state: "ApiState", req: ApiRequest, server_id: str, server: Any, args: Any
) -> Begun:
    """``{"os-migrateLive": {"host": ..., "block_migration": ...}}``, its
    states checked.

    :raises Invalid: the host is unknown, disabled, down, or the server's own: 400.
    :raises ServerStateConflict: not ACTIVE with nothing to heal: 409.
    """
    host = args.get("host")
    if host is not None:
        actions.check_destination(
            state.db, state.conf, server, host, move=states.MIGRATION_TYPE_LIVE
        )
    block = args.get("block_migration")
    migration = actions.begin_live_migration(
        state.db,
        server.uuid,
        host=host,
        block_migration=None if block == "auto" else block in _TRUE,
        project_id=req.project_scope(),
        context=req.context,
    )
    return Begun(
        migration.uuid,
        (
            "Live migration of server %s requested (migration %s, host %s, force %s)",
            server.uuid,
            migration.uuid,
            host or "chosen by the scheduler",
            args.get("force", False) in _TRUE,
        ),
    )


#: ``os-migrateLive``: the server's states (409), the named host (400);
#: then the live migration is recorded and cast. 202, no body.
live_migrate = ServerAction(
    "os-migrateLive",
    lambda req: schemas.migrate_live(req.version),
    lambda args: rules.rule_for(args.get("host")),
    _live_migrate,
    "live_migrate_server",
    LOG,
    states_first=True,
)
