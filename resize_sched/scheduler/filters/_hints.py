"""Reading the ``same_host`` / ``different_host`` hints."""

from resize_sched.scheduler.request import SchedulingRequest


def hinted_servers(request: SchedulingRequest, name: str) -> frozenset[str]:
    """The server uuids a hint names (one uuid or a list of them)."""
    value = (request.hints or {}).get(name)
    if not value:
        return frozenset()
    if isinstance(value, str):
        return frozenset({value})
    return frozenset(str(v) for v in value)
