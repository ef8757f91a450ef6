"""The checks every conductor RPC message passes before its endpoint runs.

:func:`handler` makes a method dispatchable (oslo.messaging's ``expose``),
drops a malformed message with one warning before anything is read or
written (:func:`malformed`), and names the failures that end a flow on
purpose (:data:`EXPECTED`), which oslo.messaging then logs without a
traceback.
"""

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any

import oslo_messaging as messaging
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.conductor import reports
from resize_sched.context import RequestContext
from resize_sched.db import states

# NOTE: the endpoints were the manager's methods; their log lines keep the
# manager's logger name, which operators' filters and log readers match.
LOG = logging.getLogger("resize_sched.conductor.manager")

#: Failures that end a flow on purpose; logged without a traceback.
EXPECTED = (
    exception.NoValidHost,
    exception.RestoreFailed,
    exception.ClaimRefused,
    exception.Conflict,
    exception.NotFound,
)

UUID = re.compile(r"^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$")

#: Arguments that may be None in a well-formed message.
_MAY_BE_NONE = ("migration_uuid", "host", "children")


def malformed(arguments: dict[str, Any]) -> list[str]:
    """What is wrong with a message's arguments (uuids where uuids belong,
    text where text belongs), before anything is read or written."""
    problems = []
    for name, value in arguments.items():
        if value is None and name in _MAY_BE_NONE:
            continue
        if name == "inventory":
            problem = reports.malformed_inventory(value)
            problems += [problem] if problem else []
        elif name == "children":
            problem = reports.malformed_children(value)
            problems += [problem] if problem else []
        elif name == "power_state":
            if value not in (states.POWER_RUNNING, states.POWER_SHUTDOWN):
                problems.append(f"{name} is not a power state we set: {value!r:.80}")
        elif name == "provider_generation":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                problems.append(f"{name} is not an integer: {value!r:.80}")
        elif name.endswith("_uuid"):
            if not isinstance(value, str) or not UUID.match(value):
                problems.append(f"{name} is not a uuid: {value!r:.80}")
        elif not isinstance(value, str) or len(value) > 65535:
            problems.append(f"{name} is not text: {value!r:.80}")
    return problems


def handler(method: Callable[..., None]) -> Callable[..., None]:
    """Make ``method`` an RPC handler of the conductor.

    Exposed to oslo.messaging (only handlers are dispatchable), its expected
    failures logged without a traceback, and its arguments checked first: a
    malformed message is dropped with one warning and changes nothing.
    """
    signature = inspect.signature(method)

    @functools.wraps(method)
    def checked(self: Any, ctxt: RequestContext, *args: Any, **kwargs: Any) -> None:
        try:
            bound = signature.bind(self, ctxt, *args, **kwargs)
        except TypeError as exc:
            LOG.warning("Malformed %s message dropped: %s", method.__name__, exc)
            return None
        arguments = dict(bound.arguments)
        del arguments["self"], arguments["ctxt"]
        problems = malformed(arguments)
        if problems:
            LOG.warning("Malformed %s message dropped: %s", method.__name__, "; ".join(problems))
            return None
        return method(self, ctxt, *args, **kwargs)

    return messaging.expose(messaging.expected_exceptions(*EXPECTED)(checked))
