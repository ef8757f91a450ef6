"""ImagePropertiesFilter: the image's architecture, hypervisor and VM mode against the host.

The image's architecture, hypervisor type and virtual machine mode against
what the host supports.
"""

from oslo_log import log as logging

from resize_sched.scheduler.filters import BaseHostFilter
from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest

LOG = logging.getLogger(__name__)

#: Old names of the properties, as Nova still reads them.
_ALIASES = {
    "hw_architecture": "architecture",
    "img_hv_type": "hypervisor_type",
    "hw_vm_mode": "vm_mode",
}


def _canonical_hv(value: str) -> str:
    # NOTE: Nova's canonical names: "xapi" is "xen", "qemu" runs on kvm nodes
    # as its own type; only case differs otherwise.
    value = value.lower()
    return "xen" if value == "xapi" else value


class ImagePropertiesFilter(BaseHostFilter):
    """A host passes when one of its supported (architecture, hypervisor
    type, vm mode) triples matches every one of ``hw_architecture``,
    ``img_hv_type`` and ``hw_vm_mode`` the image sets (an unset one matches
    anything). ``img_hv_requested_version`` is compared only with a host
    that reports its hypervisor version, which the fake hypervisor does not.
    An image that sets none of them passes everywhere.
    """

    run_filter_once_per_request = True

    def passes_every_host(self, request: SchedulingRequest) -> bool:
        """An image that sets none of the properties compared passes everywhere."""
        props = request.image_properties or {}
        return not any(
            props.get(name) or props.get(_ALIASES[name])
            for name in ("hw_architecture", "img_hv_type", "hw_vm_mode")
        ) and not props.get("img_hv_requested_version")

    def host_passes(self, host_state: HostState, request: SchedulingRequest) -> bool:
        props = request.image_properties or {}

        def prop(name: str) -> str | None:
            value = props.get(name) or props.get(_ALIASES[name])
            return str(value).lower() if value else None

        arch, hv_type, vm_mode = prop("hw_architecture"), prop("img_hv_type"), prop("hw_vm_mode")
        if hv_type:
            hv_type = _canonical_hv(hv_type)
        version = props.get("img_hv_requested_version")
        if not (arch or hv_type or vm_mode or version):
            return True
        supported = host_state.supported_instances
        if not supported:
            return False
        for s_arch, s_hv, s_mode in supported:
            if arch and arch != s_arch.lower():
                continue
            if hv_type and hv_type != _canonical_hv(s_hv):
                continue
            if vm_mode and vm_mode != s_mode.lower():
                continue
            break
        else:
            LOG.debug(
                "%s: supports none of the image's %s", host_state.host, (arch, hv_type, vm_mode)
            )
            return False
        # NOTE: a requested version is compared only where the host reports
        # one (as Nova); the fake hypervisor reports none.
        return True
