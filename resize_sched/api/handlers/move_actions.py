"""The actions that move a server between hosts: ``migrate`` (cold migration).

Who may ask is :mod:`resize_sched.policies.migrate_server`'s: by default a
manager of the server's project (or an administrator) when the scheduler
chooses the host, only an administrator when the request names it.

Served through ``POST /servers/{id}/action`` (:mod:`.server_actions` routes
them). As every action, all checks come before the first write, in Nova's
order: the server (404), the policy (403), its state (409), then the named
host (400); a refused request changes nothing. The database-only first step
(:func:`resize_sched.actions.begin_migrate`) then records the migration and
the conductor is cast ``resize_server``: a cold migration runs the resize's
steps, so an older conductor serves it too.
"""

from typing import TYPE_CHECKING, Any

from oslo_log import log as logging

from resize_sched import actions
from resize_sched.api import schemas
from resize_sched.api.action_runner import Begun, ServerAction
from resize_sched.api.request import ApiRequest
from resize_sched.db import states
from resize_sched.policies import migrate_server as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)


def _migrate(state: "ApiState", req: ApiRequest, server_id: str, server: Any, args: Any) -> Begun:
    """``migrate``: cold migrate the server (to ``host`` from 2.56)."""
    host = (args or {}).get("host")
    actions.check_movable(server, "migrate")
    if host is not None:
        actions.check_destination(
            state.db, state.conf, server, host, move=states.MIGRATION_TYPE_MIGRATION
        )
    migration = actions.begin_migrate(
        state.db,
        state.claim_strategy(),
        server_id,
        host,
        project_id=req.project_scope(),
        context=req.context,
    )
    return Begun(
        migration.uuid,
        (
            "Cold migration of server %s%s requested (migration %s)",
            server_id,
            f" to host {host}" if host else "",
            migration.uuid,
        ),
    )


def _schema(req: ApiRequest) -> dict[str, Any]:
    return schemas.MIGRATE_V256 if req.version.at_least("2.56") else schemas.MIGRATE


#: ``migrate``: 202, no body. Checked against one rule: ``migrate:host`` when a
#: host is named (an administrator's by default), ``migrate`` otherwise (the
#: server's project manager's, or an administrator's).
migrate = ServerAction(
    "migrate",
    _schema,
    lambda args: rules.rule_for((args or {}).get("host")),
    _migrate,
    "resize_server",
    LOG,
)

#: The actions served here, by body key.
ACTIONS = {"migrate": migrate}
