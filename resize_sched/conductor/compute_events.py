"""The instance-action events of the compute hosts' operations, and their recording.

The conductor, the only database writer, records each compute operation's
event (Nova's names): started when it casts the step, finished when the host
reports. Steps a host reports only when they fail (confirm, revert) are
recorded only then.
"""

from resize_sched.db import action_api
from resize_sched.db.api import Database

#: The event of each compute operation and the action(s) it belongs to. A
#: revert is ``compute_revert_resize`` on the destination and
#: ``compute_finish_revert_resize`` on the source.
COMPUTE_EVENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "spawn": ("compute_build_and_run_instance", (action_api.CREATE,)),
    "prep_resize": ("compute_prep_resize", action_api.RESIZE_OR_MIGRATE),
    "resize": ("compute_resize_instance", action_api.RESIZE_OR_MIGRATE),
    "finish_resize": ("compute_finish_resize", action_api.RESIZE_OR_MIGRATE),
    "confirm": ("compute_confirm_resize", (action_api.CONFIRM_RESIZE,)),
    "revert": ("compute_revert_resize", (action_api.REVERT_RESIZE,)),
    "finish_revert": ("compute_finish_revert_resize", (action_api.REVERT_RESIZE,)),
    "stop": ("compute_stop_instance", (action_api.STOP,)),
    "start": ("compute_start_instance", (action_api.START,)),
    "pre_live_migration": ("compute_pre_live_migration", (action_api.LIVE_MIGRATION,)),
    "live_migration": ("compute_live_migration", (action_api.LIVE_MIGRATION,)),
    "live_migration_abort": ("compute_live_migration", (action_api.LIVE_MIGRATION,)),
    "post_live_migration": ("compute_post_live_migration", (action_api.LIVE_MIGRATION,)),
    "rebuild": ("compute_rebuild_instance", (action_api.EVACUATE,)),
    "shelve": ("compute_shelve_instance", (action_api.SHELVE,)),
    # NOTE: with shelved_offload_time 0 the offload is part of the shelve's
    # action (Nova's compute does both in one call); else its own.
    "shelve_offload": (
        "compute_shelve_offload_instance",
        (action_api.SHELVE_OFFLOAD, action_api.SHELVE),
    ),
    "unshelve": ("compute_unshelve_instance", (action_api.UNSHELVE,)),
}


def record(
    db: Database,
    operation: str,
    server_uuid: str,
    host: str | None,
    *,
    result: str | None = None,
    reason: str | None = None,
) -> None:
    """Record a compute step's event: started (no result, no reason),
    finished with ``result``, or failed for ``reason``. Operations without
    an event (a destroy) record nothing."""
    if operation not in COMPUTE_EVENTS:
        return
    event, belongs_to = COMPUTE_EVENTS[operation]
    if reason is not None:
        db.action_event_failed(server_uuid, event, belongs_to, reason, host=host)
    elif result is not None:
        db.action_event_finish(server_uuid, event, belongs_to, result=result, host=host)
    else:
        db.action_event_start(server_uuid, event, belongs_to, host=host)


def actions_of(operation: str) -> tuple[str, ...]:
    """The action(s) ``operation``'s event belongs to."""
    return COMPUTE_EVENTS[operation][1]
