"""Hypervisors: the compute nodes as ``/v2.1/os-hypervisors`` shows them.

``GET /v2.1/os-hypervisors``, ``/detail``, ``/statistics``, ``/{id}``,
``/{id}/uptime``, and up to 2.52 ``/{pattern}/search`` and ``/{pattern}/servers``.

Nova's ``os-hypervisors`` over our compute nodes (one per compute host, the
resource provider its service registered). ``state`` and ``status`` are the
node's service's (see :mod:`.services`). From 2.53 ids are uuids (the
provider's, as Nova's compute node uuid is) and ``hypervisor_hostname_pattern``
and ``with_servers`` are accepted; from 2.33 ``limit`` and ``marker``.

Details (``/detail`` and show): ``hypervisor_type``, ``hypervisor_version``,
``host_ip`` (null: the fake driver has no address) and ``service``; below
2.88 also the sizes. Totals are the inventory the node last reported (so no
Placement request per total); usage is read from Placement's usages of the
node's provider, and only of providers still ours (with our owner trait):
``vcpus_used`` is what servers hold, ``memory_mb_used`` and ``local_gb_used``
add the reserved amounts as Nova counts them; ``free_*`` and
``disk_available_least`` are what is left of the totals; ``running_vms`` the
number of our servers on the host and ``current_workload`` those of them
with a task in progress.

On a host that is a tree of providers (vGPUs, PCI devices, NUMA cells on
child providers) the sizes count the children the host's compute service
owns and reported (``compute_nodes.children``) beside the root: their
``VCPU``, ``MEMORY_MB`` and ``DISK_GB`` totals, reserved amounts and usages
are added to the root's, so a host whose CPUs and memory sit on two NUMA
cells shows them. Device classes (``VGPU``, ``CUSTOM_PCI_*``) are not sizes
Nova shows, so a vGPU child changes no figure; a child of another service
under the root, a sharing pool's disk and a reported child that no longer
carries this deployment's child trait in Placement are not counted. A flat
host is read exactly as before; a tree host whose children hold any of those
classes costs one listing of our children, and one usage read per such child.

``GET /os-hypervisors/statistics`` (up to 2.87, 404 from 2.88 as in Nova)
sums the pre-2.88 sizes over the hypervisors whose compute service is
enabled (Nova leaves disabled ones out, and counts down ones in), with
``count`` the number summed.

``GET /os-hypervisors/{id}/uptime`` answers 501 (the fake driver has no
uptime), which ``openstack hypervisor show`` accepts (it also reads
``os-aggregates``, :mod:`resize_sched.api.handlers.aggregates`).
Administrators only by default.
"""

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import webob
from oslo_log import log as logging
from oslo_utils import uuidutils

from resize_sched import exception
from resize_sched.api import faults, policy
from resize_sched.api.request import ApiRequest, json_response, paginate, parse_bool
from resize_sched.db import models
from resize_sched.db.host_api import COMPUTE_BINARY, service_is_up
from resize_sched.placement.client import child_trait, owner_trait
from resize_sched.policies import hypervisors as rules
from resize_sched.resources import DISK_GB, MEMORY_MB, VCPU
from resize_sched.scheduler import hosts

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

#: What the fake driver calls its version (as Nova's fake driver does).
HYPERVISOR_VERSION = 1000


class NotImplementedFault(faults.Fault):
    """501: the driver cannot tell."""

    status = 501


class PlacementUnavailable(faults.Fault):
    """503: Placement could not be read."""

    status = 503


#: The classes the sizes show (``vcpus``, ``memory_mb``, ``local_gb``); a
#: child counts only for these.
HOST_CLASSES = (VCPU, MEMORY_MB, DISK_GB)

#: One provider's part in the sizes: its inventory records and its usages.
Part = tuple[Mapping[str, Mapping[str, Any]], Mapping[str, int]]


class Usage(NamedTuple):
    """What Placement says a node uses: the root's usages, and the inventory
    and usages of each child of ours counted with it."""

    root: dict[str, int]
    children: list[Part]


def _field(parts: list[Part], rc: str, name: str) -> int:
    return sum(int((inventory.get(rc) or {}).get(name, 0)) for inventory, _ in parts)


def sizes(
    node: models.ComputeNode,
    usage: dict[str, int],
    servers: list[models.Server],
    children: Iterable[Part] = (),
) -> dict[str, Any]:
    """The pre-2.88 size fields of one hypervisor.

    :param node: the compute node (its root's totals).
    :param usage: its provider's usages in Placement (class -> amount).
    :param servers: our servers on its host.
    :param children: the inventory and usages of each child counted with it.
    :returns: ``vcpus`` ... ``disk_available_least``.
    """
    parts: list[Part] = [(node.inventory, usage), *children]
    vcpus, memory_mb, local_gb = (_field(parts, rc, "total") for rc in HOST_CLASSES)
    used = {rc: sum(u.get(rc, 0) for _, u in parts) for rc in HOST_CLASSES}
    memory_used = used[MEMORY_MB] + _field(parts, MEMORY_MB, "reserved")
    disk_used = used[DISK_GB] + _field(parts, DISK_GB, "reserved")
    return {
        "vcpus": vcpus,
        "memory_mb": memory_mb,
        "local_gb": local_gb,
        "vcpus_used": used[VCPU],
        "memory_mb_used": memory_used,
        "local_gb_used": disk_used,
        "free_ram_mb": memory_mb - memory_used,
        "free_disk_gb": local_gb - disk_used,
        "current_workload": sum(1 for s in servers if s.task_state is not None),
        "running_vms": len(servers),
        "disk_available_least": local_gb - disk_used,
    }


def view(
    req: ApiRequest,
    node: models.ComputeNode,
    service: models.Service,
    down_time: float,
    *,
    detail: bool,
    usage: Usage | None = None,
    servers: list[models.Server] | None = None,
    with_servers: bool = False,
) -> dict[str, Any]:
    """A hypervisor as os-hypervisors shows it at this microversion.

    :param node: the compute node.
    :param service: its host's compute service.
    :param down_time: ``[DEFAULT] service_down_time``.
    :param detail: the detail fields too.
    :param usage: its providers' usages (detail below 2.88).
    :param servers: our servers on its host.
    :param with_servers: list them (``servers``: name and uuid).
    :returns: the body of one hypervisor.
    """
    uuids = req.version.at_least("2.53")
    body: dict[str, Any] = {
        "id": node.uuid if uuids else node.id,
        "hypervisor_hostname": node.hypervisor_hostname,
        "state": "up" if service_is_up(service, down_time) else "down",
        "status": "disabled" if service.disabled else "enabled",
    }
    if detail:
        body.update(
            {
                "hypervisor_type": node.hypervisor_type,
                "hypervisor_version": HYPERVISOR_VERSION,
                "host_ip": None,
                "service": {
                    "id": service.uuid if uuids else service.id,
                    "host": node.host,
                    "disabled_reason": service.disabled_reason,
                },
            }
        )
        if req.version.at_least("2.88"):
            body["uptime"] = None
        else:
            usage = usage or Usage({}, [])
            body.update(sizes(node, usage.root, servers or [], usage.children))
            body["cpu_info"] = {} if req.version.at_least("2.28") else "{}"
    if with_servers:
        if servers:
            body["servers"] = [{"name": s.name, "uuid": s.uuid} for s in servers]
        elif req.version.at_least("2.75"):
            body["servers"] = []
    return body


def _sized_children(node: models.ComputeNode) -> dict[str, Mapping[str, Any]]:
    """The children the node's service reported that hold a class the sizes show."""
    return {
        uuid: child
        for uuid, child in (node.children or {}).items()
        if any(rc in (child.get("inventory") or {}) for rc in HOST_CLASSES)
    }


def owned_usages(state: "ApiState", nodes: list[models.ComputeNode]) -> dict[str, Usage]:
    """Placement's usages of each node's provider, for the providers that are
    ours, with those of the children counted with it (see the module doc).

    :raises PlacementUnavailable: Placement could not be read.
    """
    if not nodes:
        return {}
    client = state.placement()
    owner = owner_trait(state.conf.placement.deployment_name)
    sized = {node.uuid: _sized_children(node) for node in nodes}
    try:
        owned = {rp["uuid"] for rp in hosts.list_owned(client, owner)}
        # NOTE: only when some node has a child to count (never on flat
        # hosts): which children still carry our child trait, and under
        # which root. A child re-parented, deleted or taken over since the
        # report is not ours to count.
        ours: dict[str, str | None] = {}
        if any(sized.values()):
            mark = child_trait(owner)
            ours = {
                rp["uuid"]: rp.get("root_provider_uuid")
                for rp in hosts.unless_unknown(
                    client, mark, lambda: client.list_resource_providers(required=[mark]), []
                )
            }
        usages = {}
        for node in nodes:
            if node.uuid not in owned:
                LOG.info("Provider %s of %s is not ours in Placement", node.uuid, node.host)
                continue
            try:
                root = dict(client.get_usages(node.uuid))
            except exception.PlacementNotFound:
                continue
            children: list[Part] = []
            for uuid, child in sorted(sized[node.uuid].items()):
                if ours.get(uuid) != node.uuid:
                    LOG.info("Child %s of %s is not ours in Placement", uuid, node.host)
                    continue
                try:
                    children.append((child["inventory"], client.get_usages(uuid)))
                except exception.PlacementNotFound:
                    continue
            usages[node.uuid] = Usage(root, children)
    except exception.PlacementError as exc:
        raise PlacementUnavailable(f"Could not read usages from Placement: {exc}") from None
    return usages


def _servers_by_host(state: "ApiState") -> dict[str, list[models.Server]]:
    found: dict[str, list[models.Server]] = {}
    for server in state.db.server_list():
        if server.host:
            found.setdefault(server.host, []).append(server)
    return found


def _with_services(state: "ApiState") -> list[tuple[models.ComputeNode, models.Service]]:
    """Every compute node with its host's compute service (a node without one is left out)."""
    services = {s.host: s for s in state.db.service_list(binary=COMPUTE_BINARY)}
    return [(n, services[n.host]) for n in state.db.compute_node_list() if n.host in services]


def _list(state: "ApiState", req: ApiRequest, *, detail: bool) -> webob.Response:
    pattern = with_servers = None
    if req.version.at_least("2.53"):
        pattern = req.GET.get("hypervisor_hostname_pattern")
        raw = req.GET.get("with_servers")
        with_servers = parse_bool(raw, "with_servers") if raw is not None else False
    paged = req.version.at_least("2.33")
    if pattern is not None and ("limit" in req.GET or "marker" in req.GET):
        raise faults.BadRequest(
            "Paging over a list of hypervisors using the hypervisor_hostname_pattern "
            "query parameter is not supported."
        )
    pairs = _with_services(state)
    if pattern is not None:
        pairs = [(n, s) for n, s in pairs if pattern in n.hypervisor_hostname]
        if not pairs:
            raise faults.NotFound(f"No hypervisor matching '{pattern}' could be found.")
    links: list[dict[str, str]] = []
    if paged:
        key = "uuid" if req.version.at_least("2.53") else "id"
        page, links = paginate(req, [n for n, _ in pairs], key, "os-hypervisors")
        kept = {n.id for n in page}
        pairs = [(n, s) for n, s in pairs if n.id in kept]
    old_sizes = detail and not req.version.at_least("2.88")
    usages = owned_usages(state, [n for n, _ in pairs]) if old_sizes else {}
    servers = _servers_by_host(state) if (old_sizes or with_servers) else {}
    down_time = state.conf.service_down_time
    body: dict[str, Any] = {
        "hypervisors": [
            view(
                req,
                n,
                s,
                down_time,
                detail=detail,
                usage=usages.get(n.uuid),
                servers=servers.get(n.host, []),
                with_servers=bool(with_servers),
            )
            for n, s in pairs
        ]
    }
    if links:
        body["hypervisors_links"] = links
    return json_response(body)


def index(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /os-hypervisors``: id, name, state and status of every hypervisor.

    :returns: ``{"hypervisors": [...]}``, 200 (``hypervisors_links`` when a
        ``limit`` cut the list).
    :raises faults.Forbidden: ``os_compute_api:os-hypervisors:list`` refuses.
    :raises faults.BadRequest: a bad limit, marker or with_servers.
    :raises faults.NotFound: no hypervisor matches the pattern.
    """
    policy.authorize(req, rules.LIST)
    return _list(state, req, detail=False)


def detail(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /os-hypervisors/detail``: every hypervisor with its details.

    :returns: ``{"hypervisors": [...]}``, 200.
    :raises faults.Forbidden: ``os_compute_api:os-hypervisors:list-detail`` refuses.
    :raises PlacementUnavailable: the usages could not be read.
    """
    policy.authorize(req, rules.LIST_DETAIL)
    return _list(state, req, detail=True)


#: The fields of ``hypervisor_statistics``, summed over the hypervisors.
STATISTICS_FIELDS = (
    "vcpus",
    "memory_mb",
    "local_gb",
    "vcpus_used",
    "memory_mb_used",
    "local_gb_used",
    "free_ram_mb",
    "free_disk_gb",
    "current_workload",
    "running_vms",
    "disk_available_least",
)


def statistics(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /os-hypervisors/statistics`` (2.1 to 2.87): sizes summed over enabled hypervisors.

    :returns: ``{"hypervisor_statistics": {"count", "vcpus", ...}}``, 200.
    :raises faults.NotFound: from 2.88 (Nova removed it).
    :raises faults.Forbidden: ``os_compute_api:os-hypervisors:statistics`` refuses.
    :raises PlacementUnavailable: the usages could not be read.
    """
    if req.version.at_least("2.88"):
        raise faults.NotFound("The resource could not be found.")
    policy.authorize(req, rules.STATISTICS)
    nodes = [n for n, s in _with_services(state) if not s.disabled]
    usages = owned_usages(state, nodes)
    servers = _servers_by_host(state) if nodes else {}
    totals = dict.fromkeys(STATISTICS_FIELDS, 0)
    for node in nodes:
        usage = usages.get(node.uuid) or Usage({}, [])
        for name, value in sizes(
            node, usage.root, servers.get(node.host, []), usage.children
        ).items():
            totals[name] += value
    return json_response({"hypervisor_statistics": {"count": len(nodes), **totals}})


def _find(
    state: "ApiState", req: ApiRequest, hypervisor_id: str
) -> tuple[models.ComputeNode, models.Service]:
    if req.version.at_least("2.53"):
        if not uuidutils.is_uuid_like(hypervisor_id):
            raise faults.BadRequest(f"Invalid uuid {hypervisor_id}")
        match = lambda n: n.uuid == hypervisor_id.lower()  # noqa: E731
    else:
        if not hypervisor_id.isdigit():
            raise faults.NotFound(f"Hypervisor with ID {hypervisor_id} could not be found.")
        match = lambda n: n.id == int(hypervisor_id)  # noqa: E731
    for node, service in _with_services(state):
        if match(node):
            return node, service
    raise faults.NotFound(f"Hypervisor with ID {hypervisor_id} could not be found.")


def show(state: "ApiState", req: ApiRequest, hypervisor_id: str) -> webob.Response:
    """``GET /os-hypervisors/{id}``: one hypervisor with its details.

    :returns: ``{"hypervisor": {...}}``, 200.
    :raises faults.Forbidden: ``os_compute_api:os-hypervisors:show`` refuses.
    :raises faults.BadRequest: from 2.53, an id that is not a uuid.
    :raises faults.NotFound: no such hypervisor.
    """
    policy.authorize(req, rules.SHOW)
    with_servers = False
    if req.version.at_least("2.53") and "with_servers" in req.GET:
        with_servers = parse_bool(req.GET["with_servers"], "with_servers")
    node, service = _find(state, req, hypervisor_id)
    old_sizes = not req.version.at_least("2.88")
    usage = owned_usages(state, [node]).get(node.uuid) if old_sizes else None
    servers = state.db.server_list(host=node.host) if (old_sizes or with_servers) else []
    body = view(
        req,
        node,
        service,
        state.conf.service_down_time,
        detail=True,
        usage=usage,
        servers=servers,
        with_servers=with_servers,
    )
    return json_response({"hypervisor": body})


def uptime(state: "ApiState", req: ApiRequest, hypervisor_id: str) -> webob.Response:
    """``GET /os-hypervisors/{id}/uptime``: 501 for a known hypervisor (no uptime here).

    :raises faults.NotFound: no such hypervisor, or from 2.88 (Nova removed it).
    :raises NotImplementedFault: always otherwise.
    """
    policy.authorize(req, rules.UPTIME)
    if req.version.at_least("2.88"):
        raise faults.NotFound("The resource could not be found.")
    _find(state, req, hypervisor_id)
    raise NotImplementedFault("Virt driver does not implement host uptime function.")


def _matching(
    state: "ApiState", req: ApiRequest, pattern: str, rule: str
) -> list[tuple[models.ComputeNode, models.Service]]:
    """The hypervisors whose name contains ``pattern``: Nova's pre-2.53 routes.

    :raises faults.NotFound: from 2.53 (Nova replaced them by the list's
        ``hypervisor_hostname_pattern``), or nothing matches.
    """
    if req.version.at_least("2.53"):
        raise faults.NotFound("The resource could not be found.")
    policy.authorize(req, rule)
    pairs = [(n, s) for n, s in _with_services(state) if pattern in n.hypervisor_hostname]
    if not pairs:
        raise faults.NotFound(f"No hypervisor matching '{pattern}' could be found.")
    return pairs


def search(state: "ApiState", req: ApiRequest, hypervisor_hostname_pattern: str) -> webob.Response:
    """``GET /os-hypervisors/{pattern}/search`` (2.1 to 2.52): the list's fields
    of each hypervisor whose name contains the pattern.

    :returns: ``{"hypervisors": [...]}``, 200.
    :raises faults.Forbidden: ``os_compute_api:os-hypervisors:search`` refuses.
    :raises faults.NotFound: none matches, or from 2.53.
    """
    pairs = _matching(state, req, hypervisor_hostname_pattern, rules.SEARCH)
    down_time = state.conf.service_down_time
    found = [view(req, n, s, down_time, detail=False) for n, s in pairs]
    return json_response({"hypervisors": found})


def search_servers(
    state: "ApiState", req: ApiRequest, hypervisor_hostname_pattern: str
) -> webob.Response:
    """``GET /os-hypervisors/{pattern}/servers`` (2.1 to 2.52): as ``search``,
    with each hypervisor's servers (``servers`` left out when it has none, as Nova).

    :returns: ``{"hypervisors": [...]}``, 200.
    :raises faults.Forbidden: ``os_compute_api:os-hypervisors:servers`` refuses.
    :raises faults.NotFound: none matches, or from 2.53.
    """
    pairs = _matching(state, req, hypervisor_hostname_pattern, rules.SERVERS)
    on_host = _servers_by_host(state)
    down_time = state.conf.service_down_time
    found = [
        view(
            req,
            n,
            s,
            down_time,
            detail=False,
            servers=on_host.get(n.host, []),
            with_servers=True,
        )
        for n, s in pairs
    ]
    return json_response({"hypervisors": found})
