"""The request context: who asked, carried from the API through RPC."""

import uuid
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class RequestContext:
    """Identity and request id of one API request (or of a service's own work).

    :ivar user_id: the user acting.
    :ivar project_id: the project the user acts in.
    :ivar is_admin: whether the user may see and do everything.
    :ivar request_id: ties the logs of one request together across services.
    """

    user_id: str | None = None
    project_id: str | None = None
    is_admin: bool = False
    request_id: str = field(default_factory=lambda: f"req-{uuid.uuid4()}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RequestContext":
        known = {
            k: data[k] for k in ("user_id", "project_id", "is_admin", "request_id") if k in data
        }
        return cls(**known)


def admin_context() -> RequestContext:
    """A context for a service's own work (recovery, periodic tasks)."""
    return RequestContext(user_id="resize_sched", project_id=None, is_admin=True)
