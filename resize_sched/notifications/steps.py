"""What each compute step's notification shows: the server's state, host and flavor per event.

The compute manager sends a ``start``/``end`` pair around each driver step
(an ``error`` shows its step's ``start``); these tables say how the server
looks in each, and the functions build the payload from the RPC message.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from resize_sched.notifications.events import (
    CREATE,
    DELETE,
    END,
    ERROR,
    LIVE_MIGRATION_POST_DEST,
    LIVE_MIGRATION_ROLLBACK,
    LIVE_MIGRATION_ROLLBACK_DEST,
    POWER_OFF,
    POWER_ON,
    REBUILD,
    RESIZE,
    RESIZE_CONFIRM,
    RESIZE_FINISH,
    RESIZE_PREP,
    RESIZE_REVERT,
    SHELVE,
    SHELVE_OFFLOAD,
    START,
    UNSHELVE,
)
from resize_sched.notifications.payloads import instance_action_payload, instance_resize_payload


@dataclass(frozen=True)
class ResizeStep:
    """The server as a resize event shows it, as Nova's task states go.

    :ivar host: ``source`` or ``dest``: where the server is.
    :ivar flavor: ``old`` or ``new``: what it runs with.
    """

    state: str
    task_state: str | None
    host: str
    flavor: str


#: (action, phase) -> how the server looks. An ``error`` shows the ``start`` of its step.
RESIZE_STEPS: dict[tuple[str, str], ResizeStep] = {
    (RESIZE_PREP, START): ResizeStep("active", "resize_prep", "source", "old"),
    (RESIZE_PREP, END): ResizeStep("active", "resize_prep", "source", "old"),
    (RESIZE, START): ResizeStep("active", "resize_migrating", "source", "old"),
    (RESIZE, END): ResizeStep("active", "resize_migrated", "dest", "old"),
    (RESIZE_FINISH, START): ResizeStep("active", "resize_finish", "dest", "new"),
    (RESIZE_FINISH, END): ResizeStep("resized", None, "dest", "new"),
    (RESIZE_CONFIRM, START): ResizeStep("resized", "resize_confirming", "dest", "new"),
    (RESIZE_CONFIRM, END): ResizeStep("active", None, "dest", "new"),
    (RESIZE_REVERT, START): ResizeStep("resized", "resize_reverting", "dest", "new"),
    (RESIZE_REVERT, END): ResizeStep("active", None, "source", "old"),
}

#: (action, phase) -> (state, task_state) of the create, delete and power events sent
#: by a compute host; None for a delete's start state means "as the server
#: snapshot in the message says".
INSTANCE_STEPS: dict[tuple[str, str], tuple[str | None, str | None]] = {
    (CREATE, START): ("building", "spawning"),
    (CREATE, END): ("active", None),
    (CREATE, ERROR): ("building", "spawning"),
    (DELETE, START): (None, "deleting"),
    (DELETE, END): ("deleted", None),
    (POWER_OFF, START): ("active", "powering-off"),
    (POWER_OFF, END): ("stopped", None),
    (POWER_ON, START): ("stopped", "powering-on"),
    (POWER_ON, END): ("active", None),
    (REBUILD, START): (None, "rebuilding"),
    (REBUILD, END): (None, None),
    (SHELVE, START): (None, "shelving"),
    (SHELVE, END): ("shelved", None),
    (SHELVE_OFFLOAD, START): ("shelved", "shelving_offloading"),
    (SHELVE_OFFLOAD, END): ("shelved_offloaded", None),
    (UNSHELVE, START): (None, "spawning"),
    (UNSHELVE, END): ("active", None),
}


def resize_step_payload(
    action: str, phase: str, migration: Mapping[str, Any], fault: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The payload of a compute host's resize event: :data:`RESIZE_STEPS` applied
    to the ``migration`` message (an ``error`` shows its step's ``start``)."""
    step = RESIZE_STEPS[(action, START if phase == ERROR else phase)]
    return instance_resize_payload(
        migration,
        host=migration.get(f"{step.host}_host"),
        state=step.state,
        task_state=step.task_state,
        flavor=migration.get(f"{step.flavor}_flavor"),
        fault=fault,
    )


def live_migration_payload(
    action: str, phase: str, server: Mapping[str, Any], migration: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``InstanceActionPayload`` of a live migration's event, as Nova
    sends it: the server ``active`` and ``migrating`` on its source until
    the hand-over ends, on its destination and idle after."""
    arrived = action in (LIVE_MIGRATION_POST_DEST,) and phase == END
    stays = action in (LIVE_MIGRATION_ROLLBACK, LIVE_MIGRATION_ROLLBACK_DEST) and phase == END
    host = migration.get("dest_host") if arrived else migration.get("source_host")
    return instance_action_payload(
        {**dict(server), "flavor": server.get("flavor") or migration.get("old_flavor")},
        host=host,
        state="active",
        task_state=None if arrived or stays else "migrating",
    )


def instance_step_payload(
    action: str,
    phase: str,
    server: Mapping[str, Any],
    host: str,
    fault: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The payload of a compute host's create, delete or power event (:data:`INSTANCE_STEPS`)."""
    state, task_state = INSTANCE_STEPS[(action, phase)]
    if state is None:
        state = server.get("vm_state")
    return instance_action_payload(
        server, host=host, state=state, task_state=task_state, fault=fault
    )
