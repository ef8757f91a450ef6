"""The one way the API serves a server action: validate the body, authorize,
check the conductor can take it, run the action's first step, cast, answer.

Each action served through ``POST /servers/{id}/action`` declares itself as a
:class:`ServerAction`: its body key, schema, policy rule, its own checks and
first step (:mod:`resize_sched.actions`), and the conductor method cast. The
order is Nova's and the same for all: the body (400), the server (404), the
rule (403), checks that come before the conductor's version (a zone, 400),
the conductor's version (409), the states the action may start from (409,
from the table of :mod:`resize_sched.actions.allowed`), then the action's
own checks and its first step, which records the intent by compare-and-swap.
Every check comes before the first write: a refused request changes nothing.
"""

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import webob

from resize_sched import actions
from resize_sched.api import faults, policy, schemas
from resize_sched.api.request import ApiRequest, empty_response

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState


@dataclasses.dataclass(frozen=True)
class Gate:
    """The conductor RPC version an action needs beyond the first.

    :ivar flag: the conductor client's attribute that says it may be sent.
    :ivar version: the version, for the refusal's words.
    :ivar what: the action, for the refusal's words.
    """

    flag: str
    version: str
    what: str

    def check(self, conductor: Any) -> None:
        """Refuse (409) while ``[upgrade_levels] conductor`` caps the
        conductor below the version: an older conductor would drop the cast.
        Checked before anything is recorded."""
        if not getattr(conductor, self.flag):
            raise faults.Conflict(
                f"{self.what} needs conductor RPC {self.version}; [upgrade_levels] conductor "
                "caps it lower (an upgrade in progress)."
            )


_POWER = Gate("can_power", "1.4", "Stopping and starting servers")
_SHELVE = Gate("can_shelve", "1.6", "Shelving servers")

#: The conductor version each action needs, by body key (not named: 1.0).
GATES: dict[str, Gate] = {
    "os-stop": _POWER,
    "os-start": _POWER,
    "os-migrateLive": Gate("can_live_migrate", "1.5", "Live migration"),
    "evacuate": Gate("can_live_migrate", "1.5", "Evacuation"),
    "shelve": _SHELVE,
    "shelveOffload": _SHELVE,
    "unshelve": _SHELVE,
}


@dataclasses.dataclass(frozen=True)
class Begun:
    """What an action's first step leaves for the runner.

    :ivar cast_id: what the conductor is cast (the migration's or the
        server's uuid).
    :ivar log: the INFO line logged once cast (a format and its arguments).
    :ivar response: the answer, when it is not the action's empty one.
    """

    cast_id: str
    log: tuple[Any, ...]
    response: webob.Response | None = None


#: ``(state, req, server_id, server, args) -> Begun``: an action's own checks
#: and first step (``server_id`` as the path gave it, ``server`` as read).
Step = Callable[["ApiState", ApiRequest, str, Any, Any], Begun]
#: ``(state, req, server, args) -> None``: checks that come before the gate.
Check = Callable[["ApiState", ApiRequest, Any, Any], None]
#: ``args -> rule``: the one rule a request is checked against, when the body
#: decides it (a named host: the ``:host`` rule).
RuleOf = Callable[[Any], str]


@dataclasses.dataclass(frozen=True)
class ServerAction:
    """One server action as the API serves it; call it as a handler.

    :ivar name: the body key (``shelve``), also its entry in
        :data:`GATES` and in the table of allowed states.
    :ivar schema: the body's schema, or a function of the request giving it
        (the microversion decides).
    :ivar rule: the policy rule the caller must pass, or a function of the
        action's arguments giving it (``migrate`` naming a host is checked
        against ``migrate:host`` only, as Nova does).
    :ivar step: the action's own checks and its first step.
    :ivar cast: the conductor client's method cast with ``cast_id``.
    :ivar logger: the handler module's logger, for the line once cast.
    :ivar status: the answer's status when the step gives none.
    :ivar before_gate: checks Nova makes before the conductor's version.
    :ivar states_first: refuse (409, Nova's words) a server whose states
        the table does not allow, before the step.
    """

    name: str
    schema: dict[str, Any] | Callable[[ApiRequest], dict[str, Any]]
    rule: str | RuleOf
    step: Step
    cast: str
    logger: Any
    status: int = 202
    before_gate: Check | None = None
    states_first: bool = False

    def __call__(
        self, state: "ApiState", req: ApiRequest, server_id: str, body: dict[str, Any]
    ) -> webob.Response:
        """Serve the action for ``server_id`` with ``body`` (already one key)."""
        schema = self.schema(req) if callable(self.schema) else self.schema
        schemas.validate(body, schema)
        args = body[self.name]
        rule = self.rule(args) if callable(self.rule) else self.rule
        server = policy.authorized_server(req, state.db, rule, server_id)
        if self.before_gate is not None:
            self.before_gate(state, req, server, args)
        gate = GATES.get(self.name)
        if gate is not None:
            gate.check(state.conductor)
        if self.states_first:
            allowed = actions.ALLOWED[self.name]
            if not allowed.allows(server):
                raise faults.Conflict(allowed.refusal(server))
        begun = self.step(state, req, server_id, server, args)
        getattr(state.conductor, self.cast)(req.context, begun.cast_id)
        self.logger.info(*begun.log)
        if begun.response is not None:
            return begun.response
        return empty_response(self.status)
