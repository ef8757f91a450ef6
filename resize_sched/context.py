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
    """

    user_id: str | None = None
    project_id: str | None = None
    is_admin: bool = False
    request_id: str = field(default_factory=lambda: f"req-{uuid.uuid4()}")
    roles: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["roles"] = list(self.roles)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RequestContext":
        known = {
            k: data[k] for k in ("user_id", "project_id", "is_admin", "request_id") if k in data
        }
        return cls(**known, roles=tuple(data.get("roles") or ()))

    def to_policy_values(self) -> dict[str, Any]:
        """The credentials oslo.policy checks rules against.

        :returns: ``user_id``, ``project_id``, ``roles`` and ``is_admin``.
        """
        return {
            "user_id": self.user_id,
            "project_id": self.project_id,
            "roles": list(self.roles),
            "is_admin": self.is_admin,
        }


def admin_context() -> RequestContext:
    """A context for a service's own work (recovery, periodic tasks)."""
    return RequestContext(user_id="resize_sched", project_id=None, is_admin=True)
