"""A quota check of one resource whose refusal is the API's 403.

Server groups, their members, key pairs and server metadata each count one
resource against its limit before writing; what differs is only the
resource, the counts and Nova's words for the refusal.
"""

from typing import TYPE_CHECKING

from resize_sched import exception, quota
from resize_sched.api import faults

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState


def enforce_one(
    state: "ApiState",
    project_id: str,
    user_id: str | None,
    resource: str,
    adding: int,
    used: int,
    message: str,
) -> None:
    """Refuse adding ``adding`` of ``resource`` to ``used`` past the limit.

    :param message: the 403's words; a field in braces (``{limit}``) is
        filled in from the refusal (:class:`~resize_sched.exception.OverQuota`'s
        ``resource``, ``used``, ``limit``).
    :raises faults.Forbidden: over the limit.
    :raises LimitsUnavailable: ``unified_limits``, and Keystone did not answer.
    """
    try:
        quota.enforce(
            state.db, state.conf, project_id, user_id, {resource: adding}, {resource: used}
        )
    except exception.OverQuota as exc:
        raise faults.Forbidden(message.format_map(exc.kwargs)) from None
