"""The instance-action names and event results, as Nova's ``instance_actions`` spells them.

What the API records when it accepts a request (``action_api.STOP``...), what
each step names the actions it belongs to, and how an event ended. Plain
words with no database behind them, and what an event records of a failure
(:func:`failure_text`): :mod:`resize_sched.db.action_api` re-exports them all.
"""

import traceback as tb

from resize_sched import exception

#: The action names, as Nova's ``instance_actions`` module spells them.
CREATE = "create"
RESIZE = "resize"
MIGRATE = "migrate"
CONFIRM_RESIZE = "confirmResize"
REVERT_RESIZE = "revertResize"
DELETE = "delete"
STOP = "stop"
START = "start"
RESET_STATE = "resetState"
LIVE_MIGRATION = "live-migration"
EVACUATE = "evacuate"
SHELVE = "shelve"
SHELVE_OFFLOAD = "shelveOffload"
UNSHELVE = "unshelve"

#: The actions a resize's steps belong to: a cold migration (``migrate``)
#: runs the same steps, and a server has one of them in flight at a time.
RESIZE_OR_MIGRATE = (RESIZE, MIGRATE)

#: Event results.
SUCCESS = "Success"
ERROR = "Error"


#: The longest traceback kept.
_MAX_TRACEBACK = 65535


def failure_text(exc: BaseException) -> tuple[str, str]:
    """What an event records about a failure: a one-line message and a traceback.

    An error of :mod:`resize_sched.exception` is an expected outcome (no
    room, Placement refused, a host failed): its message is recorded as both,
    with no Python traceback (there is no bug to trace). A step that knows
    more says it in words itself (:mod:`resize_sched.words`): see
    :attr:`resize_sched.db.steps.StepRun.failure` and
    :meth:`~resize_sched.db.action_api.ActionApi.action_event`.
    Anything else is a bug, recorded with its traceback.

    :param exc: the exception the step raised.
    :returns: ``(message, traceback)``.
    """
    if isinstance(exc, exception.ResizeSchedException):
        return exc.message, exc.message
    message = f"{type(exc).__name__}: {exc}"
    text = "".join(tb.format_exception(type(exc), exc, exc.__traceback__))
    return message, text[-_MAX_TRACEBACK:]
