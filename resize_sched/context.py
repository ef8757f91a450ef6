"""The request context: who asked, carried from the API through RPC."""

import uuid
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class RequestContext:
    """Identity and request id of one API request (or of a service's own work).

    :ivar user_id: the user acting.
    :ivar project_id: the project the user acts in.
    :ivar is_admin: whether the user may see and do everything (in the API:
        what the ``context_is_admin`` policy rule says of the caller).
    :ivar request_id: ties the logs of one request together across services.
    :ivar roles: the caller's roles, lower case, as the policy rules see them.
    :ivar domain_id: the domain a domain-scoped token is scoped to (such a
        token has no project).
    :ivar system_scope: ``all`` for a system-scoped token (no project either).
    """

    user_id: str | None = None
    project_id: str | None = None
    is_admin: bool = False
    request_id: str = field(default_factory=lambda: f"req-{uuid.uuid4()}")
    roles: tuple[str, ...] = ()
    domain_id: str | None = None
    system_scope: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["roles"] = list(self.roles)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RequestContext":
        names = ("user_id", "project_id", "is_admin", "request_id", "domain_id", "system_scope")
        known = {k: data[k] for k in names if k in data}
        return cls(**known, roles=tuple(data.get("roles") or ()))

    def to_policy_values(self) -> dict[str, Any]:
        """The credentials oslo.policy checks rules against.

        Only the values the caller has: a token without a project carries no
        ``project_id`` key at all, so no check ``project_id:%(project_id)s``
        can compare a missing project with a missing project (oslo.policy
        compares them as the strings ``"None"`` and passes). ``domain_id``
        and ``system`` tell oslo.policy the token's scope.

        :returns: ``user_id``, ``project_id``, ``roles``, ``is_admin``, and
            ``domain_id`` or ``system`` for a token scoped so.
        """
        values: dict[str, Any] = {
            "user_id": self.user_id,
            "project_id": self.project_id,
            "domain_id": self.domain_id,
            "system": self.system_scope,
            "roles": list(self.roles),
            "is_admin": self.is_admin,
        }
        return {k: v for k, v in values.items() if v is not None}

    @property
    def has_project(self) -> bool:
        """Whether the caller acts in a project (a project-scoped token)."""
        return bool(self.project_id)


def admin_context() -> RequestContext:
    """A context for a service's own work (recovery, periodic tasks)."""
    return RequestContext(user_id="resize_sched", project_id=None, is_admin=True)
