"""Availability zones: ``/v2.1/os-availability-zone`` and ``/detail``.

A compute host's zone is the ``availability_zone`` of the aggregates it is
in (:mod:`resize_sched.db.aggregate_api`), or ``[DEFAULT]
default_availability_zone`` when none has one; other services (conductors)
are in the ``internal`` zone, as in Nova. As Nova, a zone is listed when a
service is in it: available while one of its services is enabled,
unavailable when all are disabled (a zone made by an aggregate with no host
is not listed). ``/detail`` (administrators) adds each available zone's
hosts and, per host, its services: ``available`` (it reports), ``active``
(enabled) and ``updated_at``; the index leaves out the internal zone.

:class:`HostZones` is what the server views read a host's zone from.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import webob

from resize_sched.api import policy
from resize_sched.api.handlers.services import INTERNAL_ZONE, shown_binary
from resize_sched.api.request import ApiRequest, json_response, nova_timestamp
from resize_sched.db.host_api import COMPUTE_BINARY, service_is_up
from resize_sched.policies import aggregates as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState


@dataclass(frozen=True)
class HostZones:
    """Every compute host's zone, read once per request."""

    zones: Mapping[str, str]
    default: str

    @classmethod
    def read(cls, state: "ApiState") -> "HostZones":
        """The zones now (one query)."""
        return cls(state.db.host_zones(), state.conf.default_availability_zone)

    def of(self, host: str) -> str:
        """``host``'s zone."""
        return self.zones.get(host, self.default)


def available_zones(state: "ApiState") -> set[str]:
    """The zones a server may be asked into: those with an enabled compute service."""
    zones = HostZones.read(state)
    return {
        zones.of(s.host) for s in state.db.service_list(binary=COMPUTE_BINARY) if not s.disabled
    }


def _zones(state: "ApiState") -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """zone -> its enabled services, and zone -> its disabled ones."""
    zones = HostZones.read(state)
    enabled: dict[str, list[Any]] = {}
    disabled: dict[str, list[Any]] = {}
    for service in state.db.service_list():
        zone = zones.of(service.host) if service.binary == COMPUTE_BINARY else INTERNAL_ZONE
        (disabled if service.disabled else enabled).setdefault(zone, []).append(service)
    return enabled, disabled


def index(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /os-availability-zone``: each zone and whether it is available.

    :returns: ``{"availabilityZoneInfo": [...]}``, 200.
    """
    policy.authorize(req, rules.ZONE_LIST)
    enabled, disabled = _zones(state)
    info = [
        {"zoneName": zone, "zoneState": {"available": True}, "hosts": None}
        for zone in sorted(enabled)
        if zone != INTERNAL_ZONE
    ]
    info += [
        {"zoneName": zone, "zoneState": {"available": False}, "hosts": None}
        for zone in sorted(set(disabled) - set(enabled))
        if zone != INTERNAL_ZONE
    ]
    return json_response({"availabilityZoneInfo": info})


def detail(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /os-availability-zone/detail``: the zones with their hosts and services.

    :returns: ``{"availabilityZoneInfo": [...]}``, 200.
    """
    policy.authorize(req, rules.ZONE_DETAIL)
    enabled, disabled = _zones(state)
    down_time = state.conf.service_down_time
    info = []
    for zone in sorted(enabled):
        hosts: dict[str, dict[str, Any]] = {}
        for service in enabled[zone]:
            hosts.setdefault(service.host, {})[shown_binary(service.binary)] = {
                "available": service_is_up(service, down_time),
                "active": not service.disabled,
                "updated_at": nova_timestamp(service.updated_at),
            }
        info.append({"zoneName": zone, "zoneState": {"available": True}, "hosts": hosts})
    info += [
        {"zoneName": zone, "zoneState": {"available": False}, "hosts": None}
        for zone in sorted(set(disabled) - set(enabled))
    ]
    return json_response({"availabilityZoneInfo": info})
