"""Options of the ``[fake_driver]`` group: the fake hypervisor's behaviour.

The fake driver keeps servers in memory; these options slow it down and make
chosen operations fail on chosen hosts, for demos and failure tests.
"""

import re
from typing import Any

from oslo_config import cfg, types

#: Operations that ``fail_on`` can name: the names the compute host reports to
#: the conductor with ``operation_failed``.
OPERATIONS = (
    "spawn",
    "prep_resize",
    "resize",
    "finish_resize",
    "confirm",
    "revert",
    "stop",
    "start",
    "pre_live_migration",
    "live_migration",
    "post_live_migration",
    "rebuild",
    "shelve",
    "shelve_offload",
    "unshelve",
)


class FailurePoint(types.String):
    """One ``HOST:OPERATION`` item of ``fail_on``, checked when it is read."""

    def __init__(self) -> None:
        super().__init__(type_name="HOST:OPERATION value")

    def __call__(self, value: Any) -> str:
        text = super().__call__(value).strip()
        host, sep, operation = text.rpartition(":")
        host, operation = host.strip(), operation.strip()
        if not sep or not host or any(c.isspace() for c in host):
            raise ValueError(
                f"fail_on item {text!r} is not HOST:OPERATION (for example 'compute1:prep_resize')"
            )
        if operation not in OPERATIONS:
            raise ValueError(
                f"fail_on item {text!r} names unknown operation {operation!r}; "
                f"known operations: {', '.join(OPERATIONS)}"
            )
        return f"{host}:{operation}"

    def __repr__(self) -> str:
        return "FailurePoint"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


class ChildProvider(types.String):
    """One ``NAME:CLASS=TOTAL[,CLASS=TOTAL...][:TRAIT[,TRAIT...]]`` item of
    ``provider_tree``, checked when it is read."""

    def __init__(self) -> None:
        super().__init__(type_name="NAME:CLASS=TOTAL[,...][:TRAIT[,...]] value")

    def __call__(self, value: Any) -> str:
        text = super().__call__(value).strip()
        parse_child(text)
        return text

    def __repr__(self) -> str:
        return "ChildProvider"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_UPPER = re.compile(r"^[A-Z0-9_]+$")


def parse_child(text: str) -> tuple[str, dict[str, int], tuple[str, ...]]:
    """``pgpu0:VGPU=4:CUSTOM_VGPU_A100`` -> ``("pgpu0", {"VGPU": 4}, ("CUSTOM_VGPU_A100",))``.

    :raises ValueError: the item is malformed (the message shows an example).
    """
    example = "for example 'pgpu0:VGPU=4:CUSTOM_VGPU_A100'"
    name, _, rest = text.partition(":")
    classes, _, traits = rest.partition(":")
    if not _NAME.match(name.strip()):
        raise ValueError(f"provider_tree item {text!r}: {name!r} is no child name ({example})")
    inventory: dict[str, int] = {}
    for item in classes.split(","):
        rc, sep, total = item.strip().partition("=")
        if not sep or not _UPPER.match(rc) or not total.strip().isdigit() or int(total) < 1:
            raise ValueError(
                f"provider_tree item {text!r}: {item!r} is not CLASS=TOTAL ({example})"
            )
        inventory[rc] = int(total)
    names = tuple(t.strip() for t in traits.split(",") if t.strip())
    for trait in names:
        if not _UPPER.match(trait):
            raise ValueError(
                f"provider_tree item {text!r}: {trait!r} is no trait name ({example})"
            )
    return name.strip(), inventory, names


GROUP = cfg.OptGroup(
    "fake_driver",
    title="Fake hypervisor options",
    help="The in-memory hypervisor driver the compute service runs: how slow it is "
    "and where it fails on purpose. For demos and tests; a fake host forgets its "
    "servers when it stops.",
)

OPTS = [
    cfg.FloatOpt(
        "delay_s",
        default=0.0,
        min=0.0,
        help="Seconds every driver operation sleeps before it acts. Raise it to "
        "watch a resize step by step, or to widen race windows in tests.",
    ),
    cfg.ListOpt(
        "fail_on",
        default=[],
        item_type=FailurePoint(),
        help="Operations that fail on purpose, as HOST:OPERATION items, where HOST "
        "is a compute host's [DEFAULT] host and OPERATION one of: "
        + ", ".join(OPERATIONS)
        + ". 'resize' is the source side of a resize, 'revert' both sides of a "
        "revert. Each listed operation on that host raises an injected failure that "
        "the host reports to the conductor, e.g. 'compute2:prep_resize' to make the "
        "scheduler's choice refuse and exercise rescheduling. A malformed item stops "
        "the service at start. 'pre_live_migration' is the destination's part of "
        "a live migration, 'live_migration' the source's hand-over, "
        "'post_live_migration' the source's clean-up after it, and 'rebuild' an "
        "evacuation's rebuild on its destination. 'shelve' is a shelve's power-off, "
        "'shelve_offload' the removal of a shelved server from its host, and "
        "'unshelve' its start again (a spawn, when it was offloaded).",
    ),
    cfg.FloatOpt(
        "live_migration_s",
        default=0.0,
        min=0.0,
        help="Seconds a live migration's hand-over on the source lasts (the time "
        "memory would take to copy). While it lasts the migration is 'running' and "
        "may be aborted (DELETE /servers/{id}/migrations/{id}) or forced to "
        "complete. Raise it to try abort and force-complete by hand.",
    ),
    cfg.MultiOpt(
        "provider_tree",
        item_type=ChildProvider(),
        help="The devices the fake hypervisor has beside the host's own VCPU, "
        "MEMORY_MB and DISK_GB, each reported as a child resource provider of the "
        "host's provider, as Nova's drivers report vGPUs, PCI devices or NUMA cells. "
        "One item per child: NAME:CLASS=TOTAL[,CLASS=TOTAL...][:TRAIT[,TRAIT...]], "
        "e.g. 'pgpu0:VGPU=4:CUSTOM_VGPU_A100' or 'pci0:CUSTOM_PCI_10DE_1EB8=2'. "
        "The child is named <host>_<NAME>; the service creates, updates and removes "
        "its own children to match this list and never touches a child another "
        "service created under the host. A class a child holds is not put on the "
        "host's root: 'numa0:VCPU=8,MEMORY_MB=8192:HW_NUMA_ROOT' and "
        "'numa1:VCPU=8,MEMORY_MB=8192:HW_NUMA_ROOT' describe a host whose root holds "
        "only its disk ([compute] vcpus and memory_mb are then not used). Changing "
        "the list under running servers reshapes the host: their allocations move "
        "to the providers that now hold each class, in one Placement request. Set it "
        "to try flavors that ask for devices (resources:VGPU=1) or NUMA cells "
        "(hw:numa_nodes) without the hardware.",
    ),
]


def failing_operations(conf: cfg.ConfigOpts, host: str) -> frozenset[str]:
    """The operations ``fail_on`` makes fail on ``host``.

    :param conf: a ConfigOpts with ``[fake_driver]`` registered and parsed.
    :param host: the compute host's name.
    :returns: the operation names, a subset of :data:`OPERATIONS`.
    :raises ValueError: an item of ``fail_on`` is malformed (oslo.config's
        ``ConfigFileValueError`` names the option and the file).
    """
    points = (item.rpartition(":") for item in conf.fake_driver.fail_on)
    return frozenset(operation for name, _sep, operation in points if name == host)
