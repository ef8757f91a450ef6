"""Whether a move may go to the host its caller named, and whether a server's
own host is down (what an evacuation needs).

One function decides for every move that takes a host: a cold migration, a
live migration and an evacuation. Where their rules really differ (a cold
migration does not ask whether the host is up or has reported its node; an
evacuation says 404 for a host it does not know) the difference is a rule of
the move's own entry, with the words each has always answered.
"""

import dataclasses
from typing import Any

from resize_sched import exception
from resize_sched.db import host_api, states


@dataclasses.dataclass(frozen=True)
class _Rules:
    """What one kind of move asks of the host named, and the words of each refusal.

    :ivar unknown_not_found: a host we do not know is a 404
        (ComputeHostNotFound), asked before anything else; else it is
        refused as the other checks are (400).
    :ivar up_and_reported: the host's compute service must be up and have
        reported its compute node (a live move needs someone to answer).
    :ivar same: the refusal of the server's own host.
    :ivar unknown: the refusal of a host we do not know.
    :ivar disabled: the refusal of a disabled host (``{why}``: the reason
        given when disabling, in brackets, if any).
    :ivar prefixed: the words are the ``reason`` of an Invalid (its message
        then begins ``Invalid input:``), else its whole message.
    """

    unknown_not_found: bool
    up_and_reported: bool
    same: str
    unknown: str
    disabled: str
    prefixed: bool

    def refuse(self, words: str, **values: str) -> exception.Invalid:
        """The refusal (400) in these words."""
        text = words.format(**values)
        return exception.Invalid(reason=text) if self.prefixed else exception.Invalid(text)


_LIVE = _Rules(
    unknown_not_found=False,
    up_and_reported=True,
    same="server {server} already runs on host {host}: a live migration needs another host",
    unknown="compute host {host} could not be found",
    disabled="compute host {host} is disabled{why}",
    prefixed=True,
)

#: Each move's rules, by migration type.
RULES: dict[str, _Rules] = {
    states.MIGRATION_TYPE_LIVE: _LIVE,
    # NOTE: Nova's evacuate looks the host up first (404), then checks it as
    # a live migration does.
    states.MIGRATION_TYPE_EVACUATION: dataclasses.replace(_LIVE, unknown_not_found=True),
    states.MIGRATION_TYPE_MIGRATION: _Rules(
        unknown_not_found=False,
        up_and_reported=False,
        same="The target host can't be the same one: server {server} is on host {host}.",
        unknown="Compute host {host} could not be found.",
        disabled=(
            "Compute host {host} is disabled{why}: enable it "
            "(openstack compute service set --enable {host} nova-compute) or name another."
        ),
        prefixed=False,
    ),
}


def check_destination(db: Any, conf: Any, server: Any, host: str, *, move: str) -> Any:
    """Refuse sending ``server`` to ``host`` by name, by the rules of ``move``.

    Every move refuses the server's own host, a host we do not know and a
    disabled one; a live migration and an evacuation also refuse a host
    whose compute service is down or has reported no compute node.

    :param move: the migration type (``migration``, ``live-migration``,
        ``evacuation``).
    :returns: the host's compute node (a live migration or an evacuation),
        else None.
    :raises Invalid: the host may not take the server (the API answers 400).
    :raises ComputeHostNotFound: an evacuation's host is unknown (404).
    """
    rules = RULES[move]
    try:
        service = db.service_get_by_host(host)
    except exception.NotFound:
        service = None
    if service is None and rules.unknown_not_found:
        raise exception.ComputeHostNotFound(host=host)
    if host == server.host:
        raise rules.refuse(rules.same, server=server.uuid, host=host)
    if service is None:
        raise rules.refuse(rules.unknown, host=host)
    if service.disabled:
        why = f" ({service.disabled_reason})" if service.disabled_reason else ""
        raise rules.refuse(rules.disabled, host=host, why=why)
    if not rules.up_and_reported:
        return None
    if not host_api.service_is_up(service, conf.service_down_time):
        raise exception.Invalid(reason=f"compute service on host {host} is down")
    nodes = db.compute_nodes_by_host(host)
    if not nodes:
        raise exception.Invalid(reason=f"compute host {host} has reported no compute node yet")
    return nodes[0]


def source_is_down(db: Any, conf: Any, server: Any) -> bool:
    """Whether the compute service of ``server``'s host is down or forced down
    (an evacuation needs it to be: the server must not run twice)."""
    try:
        service = db.service_get_by_host(server.host)
    except exception.NotFound:
        return True
    return not host_api.service_is_up(service, conf.service_down_time)
