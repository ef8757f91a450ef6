"""The states each server action may start from, declared once (Nova's
``check_instance_state``): the API's early 409 and the action's
compare-and-swap both read this table.

An entry names the allowed ``status`` (what the API shows), ``vm_state`` and
``task_state`` of the server, and whether a server flagged ``needs_heal`` is
refused. :meth:`Allowed.expected` is what the compare-and-swap of the
action's first step expects, so a request that passed the early check but
lost a race to another still gets its 409 from the database.
"""

import dataclasses
from typing import Any

from resize_sched.db import states


@dataclasses.dataclass(frozen=True)
class Allowed:
    """The states one action may start from.

    :ivar action: the action's name in Nova's words (the body key).
    :ivar operation: its name in the compare-and-swap's conflict (None: ``action``).
    :ivar status: the statuses allowed (None: any).
    :ivar vm_state: the vm_states allowed (None: any).
    :ivar task_state: the task states allowed (None in it: no task).
    :ivar healthy: a server flagged ``needs_heal`` is refused.
    :ivar words: the allowed states in the words of the early refusal.
    :ivar names_first: which state Nova's words name when both are wrong
        (``task_state``: a task in flight is named before the vm_state).
    """

    action: str
    operation: str | None = None
    status: tuple[str, ...] | None = None
    vm_state: tuple[str, ...] | None = None
    task_state: tuple[str | None, ...] = (None,)
    healthy: bool = False
    words: str = ""
    names_first: str = "task_state"

    @property
    def cas_operation(self) -> str:
        """The action's name in the compare-and-swap's conflict."""
        return self.operation or self.action

    def expected(self, **more: Any) -> dict[str, Any]:
        """The ``expected=`` of the action's compare-and-swap: every state
        declared, and ``more`` (an ``updated_at`` as read)."""
        expected: dict[str, Any] = {}
        if self.status is not None:
            expected["status"] = _one_or_all(self.status)
        if self.vm_state is not None:
            expected["vm_state"] = _one_or_all(self.vm_state)
        expected["task_state"] = _one_or_all(self.task_state)
        if self.healthy:
            expected["needs_heal"] = False
        return {**expected, **more}

    def status_allows(self, server: Any) -> bool:
        """Whether the server's status is allowed (its task aside); its
        vm_state when the entry names no status.

        The early check reads the status the API shows; the compare-and-swap
        expects the vm_state that goes with it as well.
        """
        if self.status is not None:
            return server.status in self.status
        return self.vm_state is None or server.vm_state in self.vm_state

    def allows(self, server: Any) -> bool:
        """Whether the action may start from the server's states as read."""
        return self.status_allows(server) and server.task_state in self.task_state

    def refusal(self, server: Any) -> str:
        """Nova's 409 words for a server in a state this action does not
        take: ``Cannot 'x' instance <uuid> while it is in task_state y``."""
        task_wrong = server.task_state not in self.task_state
        vm_wrong = self.vm_state is not None and server.vm_state not in self.vm_state
        if self.names_first == "vm_state":
            attr = "vm_state" if vm_wrong else "task_state"
        else:
            attr = "task_state" if task_wrong else "vm_state"
        return (
            f"Cannot '{self.action}' instance {server.uuid} while it is in "
            f"{attr} {getattr(server, attr)}"
        )


def _one_or_all(values: tuple[Any, ...]) -> Any:
    """A single allowed value as itself, several as the tuple (the
    conflict's words show them as ``a|b``, as the database layer does)."""
    return values[0] if len(values) == 1 else values


_IDLE_MOVABLE = (states.STATUS_ACTIVE, states.STATUS_SHUTOFF)

#: The table: each action's allowed states, by the action's name.
#: (Shelving: Nova's also names PAUSED and SUSPENDED, which no server here
#: can be in.)
_TABLE: tuple[Allowed, ...] = (
    # NOTE: a stopped server may be resized, as in Nova; it stays powered
    # off and ends SHUTOFF (states.settled_state). A cold migration is a
    # resize to the server's own flavor and takes the same states.
    Allowed(
        "resize",
        status=_IDLE_MOVABLE,
        vm_state=(states.VM_ACTIVE, states.VM_STOPPED),
        healthy=True,
        words="ACTIVE or SHUTOFF",
    ),
    Allowed(
        "os-migrateLive",
        "live migration",
        status=(states.STATUS_ACTIVE,),
        vm_state=(states.VM_ACTIVE,),
        healthy=True,
        words="ACTIVE",
    ),
    Allowed(
        "evacuate",
        status=(states.STATUS_ACTIVE, states.STATUS_SHUTOFF, states.STATUS_ERROR),
        words="ACTIVE, SHUTOFF or ERROR on a host",
    ),
    Allowed("shelve", status=_IDLE_MOVABLE),
    Allowed("shelveOffload", status=(states.STATUS_SHELVED,)),
    Allowed(
        "unshelve",
        status=(states.STATUS_SHELVED, states.STATUS_SHELVED_OFFLOADED),
        words="SHELVED or SHELVED_OFFLOADED with no task",
    ),
    # NOTE: as Nova, an ERROR server may be stopped too, if it has a host to
    # stop it on (one whose build failed has none).
    Allowed(
        "os-stop",
        "stop",
        status=(states.STATUS_ACTIVE, states.STATUS_ERROR),
        vm_state=(states.VM_ACTIVE, states.VM_ERROR),
    ),
    Allowed("os-start", "start", status=(states.STATUS_SHUTOFF,), vm_state=(states.VM_STOPPED,)),
    Allowed(
        "confirmResize", "confirm", status=(states.STATUS_VERIFY_RESIZE,), words="VERIFY_RESIZE"
    ),
    Allowed(
        "revertResize", "revert", status=(states.STATUS_VERIFY_RESIZE,), words="VERIFY_RESIZE"
    ),
    Allowed(
        "metadata",
        "a metadata change",
        vm_state=(states.VM_ACTIVE, states.VM_STOPPED),
        words="active or stopped with no task",
    ),
    # NOTE: a live migration's task state is "migrating"; a resize never has
    # it (nor a server whose vm_state is not active: the conductor clears the
    # task with it). Force-complete names a vm_state other than active first,
    # as Nova.
    Allowed(
        "force_complete",
        vm_state=(states.VM_ACTIVE,),
        task_state=(states.TASK_MIGRATING,),
        names_first="vm_state",
    ),
    Allowed("abort live migration", task_state=(states.TASK_MIGRATING,)),
)
ALLOWED: dict[str, Allowed] = {entry.action: entry for entry in _TABLE}


def allowed(action: str) -> Allowed:
    """The entry of ``action`` (its body key or route's name)."""
    return ALLOWED[action]
