"""The all-in-one deployment: every part of resize_sched in one process.

A real Placement (``openstack-placement`` on SQLite, served over HTTP), the
API service, one conductor and one compute service per ``[all_in_one] hosts``
item, all on one in-memory (``fake://``) RPC transport and SQLite databases
under ``[all_in_one] state_path``. Start order: Placement, database, compute
hosts (each registers its provider), conductor (which first recovers what a
previous run left in flight), API. Stop order is the reverse.

Needs the ``placement`` extra (``pip install resize_sched[placement]``).
"""

import os
import shutil
import tempfile
import threading
import uuid
from dataclasses import dataclass
from typing import Any

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import conf as rs_conf
from resize_sched import exception, rpc

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class HostSpec:
    """One fake compute host: ``NAME:VCPUS:MEMORY_MB:DISK_GB``."""

    name: str
    vcpus: int
    memory_mb: int
    disk_gb: int

    @classmethod
    def parse(cls, item: str) -> "HostSpec":
        parts = item.split(":")
        try:
            name, vcpus, memory_mb, disk_gb = parts
            spec = cls(name.strip(), int(vcpus), int(memory_mb), int(disk_gb))
        except ValueError:
            raise exception.ConfigurationError(
                reason=f"[all_in_one] hosts item {item!r} is not NAME:VCPUS:MEMORY_MB:DISK_GB"
            ) from None
        if not spec.name or min(spec.vcpus, spec.memory_mb, spec.disk_gb) < 1:
            raise exception.ConfigurationError(
                reason=f"[all_in_one] hosts item {item!r} needs a name and positive sizes"
            )
        return spec


class AllInOne:
    """Placement, API, conductor and compute hosts in one process.

    :param conf: parsed configuration; its ``[placement]``, ``[database]``
        and ``transport_url`` are overridden to point at the embedded parts.
    """

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self.hosts = [HostSpec.parse(item) for item in conf.all_in_one.hosts]
        if len({h.name for h in self.hosts}) != len(self.hosts):
            raise exception.ConfigurationError(reason="[all_in_one] hosts names must be unique")
        self._own_state = conf.all_in_one.state_path is None
        self.state_path = conf.all_in_one.state_path or tempfile.mkdtemp(prefix="resize-sched-")
        self.placement: Any = None
        self.db: Any = None
        self.transport: Any = None
        self.computes: list[Any] = []
        self.conductor: Any = None
        self.api_server: Any = None
        self._api_thread: threading.Thread | None = None
        self.api_endpoint = ""
        self.clouds_yaml = ""

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        """Start every part; on any failure stop what already started."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        from resize_sched.placement.embedded import PlacementHTTP

        conf = self.conf
        self.placement = PlacementHTTP(
            f"{self.state_path}/placement",
            host=conf.api.bind_host if conf.api.bind_host != "0.0.0.0" else "127.0.0.1",
            port=conf.all_in_one.placement_port,
        ).start()
        self.placement.configure(conf, connect_retry_delay=0.5, status_code_retry_delay=0.5)
        conf.set_override(
            "connection", f"sqlite:///{self.state_path}/resize_sched.sqlite", group="database"
        )
        from resize_sched.db.api import Database

        self.db = Database.from_conf(conf)
        self.db.sync()
        self.transport = rpc.get_transport(
            conf, url="fake://", exchange=f"all_in_one_{uuid.uuid4().hex[:8]}"
        )
        self._start_computes()
        from resize_sched.conductor.service import ConductorService

        self.conductor = ConductorService(conf, self.transport)
        self.conductor.start()
        self._start_api()
        self.clouds_yaml = self._write_clouds_yaml()
        LOG.info(
            "All-in-one ready: Compute API %s, Placement %s, hosts %s, state in %s, "
            "claim strategy %s",
            self.api_endpoint,
            self.placement.endpoint,
            ", ".join(h.name for h in self.hosts),
            self.state_path,
            conf.resize.claim_strategy,
        )

    #: The clouds written to ``clouds.yaml``: the Compute API, and Placement
    #: for osc-placement (``openstack resource provider ...``). Each is an
    #: ``admin_token`` cloud, whose one endpoint serves every command.
    COMPUTE_CLOUD = "resize-sched"
    PLACEMENT_CLOUD = "resize-sched-placement"

    def _write_clouds_yaml(self) -> str:
        """Write ``clouds.yaml`` into the state path for openstackclient; return its path."""
        path = os.path.join(self.state_path, "clouds.yaml")
        clouds = {
            self.COMPUTE_CLOUD: (self.api_endpoint, "admin:admin"),
            self.PLACEMENT_CLOUD: (self.placement.endpoint, "admin:admin"),
        }
        lines = ["# Written by resize-sched-all-in-one; rewritten at every start.", "clouds:"]
        for name, (endpoint, token) in clouds.items():
            lines += [
                f"  {name}:",
                "    auth_type: admin_token",
                "    auth:",
                f"      endpoint: {endpoint}",
                f"      token: '{token}'",
            ]
        with open(path, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
        return path

    def export_lines(self) -> list[str]:
        """The shell lines that point openstackclient at this all-in-one."""
        return [
            f"export OS_CLIENT_CONFIG_FILE={self.clouds_yaml}",
            f"export OS_CLOUD={self.PLACEMENT_CLOUD}",
        ]

    def _host_conf(self, spec: HostSpec) -> cfg.ConfigOpts:
        """A compute host's own configuration: the same files, its own name and size."""
        host_conf = rs_conf.new_conf()
        files: list[str] = []
        for path in self.conf.config_file or ():
            files += ["--config-file", path]
        rs_conf.parse_args(host_conf, files, default_config_files=[])
        self.placement.configure(host_conf, connect_retry_delay=0.5, status_code_retry_delay=0.5)
        host_conf.set_override("host", spec.name)
        host_conf.set_override("vcpus", spec.vcpus, group="compute")
        host_conf.set_override("memory_mb", spec.memory_mb, group="compute")
        host_conf.set_override("disk_gb", spec.disk_gb, group="compute")
        # NOTE: the sizes given are what the demo means; no hidden reservation.
        host_conf.set_override("reserved_host_memory_mb", 0, group="compute")
        return host_conf

    def _start_computes(self) -> None:
        from resize_sched.compute.service import ComputeService

        for spec in self.hosts:
            service = ComputeService(self._host_conf(spec), transport=self.transport)
            service.start()
            self.computes.append(service)

    def _start_api(self) -> None:
        import waitress

        from resize_sched.api.app import build_app
        from resize_sched.conductor.rpcapi import ConductorAPI

        app = build_app(self.conf, self.db, ConductorAPI(self.conf, self.transport))
        self.api_server = waitress.create_server(
            app, host=self.conf.api.bind_host, port=self.conf.api.bind_port, threads=4
        )
        host = self.api_server.effective_host
        if host == "0.0.0.0":
            host = "127.0.0.1"
        self.api_endpoint = f"http://{host}:{self.api_server.effective_port}/v2.1"
        self._api_thread = threading.Thread(
            target=self.api_server.run, name="all-in-one-api", daemon=True
        )
        self._api_thread.start()

    def stop(self) -> None:
        """Stop every part, newest first. Safe to call more than once."""
        if self.api_server is not None:
            self.api_server.close()
            # NOTE: waitress's loop runs until its socket map is empty, and a
            # client's keep-alive connection would hold it for its time-out:
            # close every open channel too.
            for channel in list(getattr(self.api_server, "_map", {}).values()):
                channel.close()
            if self._api_thread is not None:
                self._api_thread.join(timeout=10)
            self.api_server = None
        # NOTE: each RPC server takes about a second to stop; side by side.
        services = ([self.conductor] if self.conductor is not None else []) + self.computes
        stoppers = [threading.Thread(target=service.stop) for service in services]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join()
        self.conductor = None
        self.computes = []
        if self.transport is not None:
            self.transport.cleanup()
            self.transport = None
        if self.db is not None:
            self.db.dispose()
            self.db = None
        if self.placement is not None:
            self.placement.stop()
            self.placement = None
        if self._own_state:
            shutil.rmtree(self.state_path, ignore_errors=True)

    def __enter__(self) -> "AllInOne":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
