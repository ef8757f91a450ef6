"""The all-in-one deployment: every part of resize_sched in one process.

A real Placement (``openstack-placement`` on SQLite, served over HTTP), the
API service, one conductor and one compute service per ``[all_in_one] hosts``
item, all on one in-memory (``fake://``) RPC transport and SQLite databases
under ``[all_in_one] state_path``. Start order: Placement, database, compute
hosts (each registers its provider), conductor (which first recovers what a
previous run left in flight), API. Stop order is the reverse.

The API's server also serves two development stand-ins, never to be exposed
(so the all-in-one refuses ``[api] auth_strategy = keystone``):
a Keystone subset under ``/identity`` (:mod:`resize_sched.all_in_one.identity`: password
log-in for an ``admin`` and a ``demo`` member user, with passwords made up
at every start, and a service catalog) and a Glance subset under ``/image``
(:mod:`resize_sched.all_in_one.images`), which ``[glance]`` is pointed at so that server
creates' ``imageRef`` is checked. ``clouds.yaml`` in the state path lets the
unchanged ``openstack`` and ``nova`` CLIs log in (:meth:`AllInOne.export_lines`).

It also writes ``resize_sched.conf`` into the state path, pointing
``[database]`` and ``[placement]`` at the embedded parts, so that
``resize-sched-status`` and ``resize-sched-manage`` can be run against it
(:meth:`AllInOne.tool_config_args`).

Needs the ``all-in-one`` extra (``pip install 'resize_sched[all-in-one]'``);
:func:`missing_modules` says what is absent before anything starts.
"""

import importlib
import os
import secrets
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import conf as rs_conf
from resize_sched import exception, rpc
from resize_sched.all_in_one.hosts import HostSpec
from resize_sched.all_in_one.identity import Endpoint, IdentityApp, User
from resize_sched.all_in_one.images import ImageApp

LOG = logging.getLogger(__name__)

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

#: Where the stand-ins are mounted on the API's server.
IDENTITY_PREFIX = "/identity"
IMAGE_PREFIX = "/image"

#: The extra that installs what the all-in-one needs beyond the base install.
EXTRA = "all-in-one"

#: The modules the all-in-one imports beyond the base install, each with the
#: distribution that provides it (all in the ``all-in-one`` extra).
REQUIRED_MODULES = {
    "placement": "openstack-placement",
    "oslo_db": "oslo.db",
    "waitress": "waitress",
}

#: The API server's name in its answers.
SERVER_IDENT = "resize-sched-all-in-one"

#: File names in the state path.
TOOL_CONFIG = "resize_sched.conf"
LOG_FILE = "all-in-one.log"


def missing_modules() -> dict[str, str]:
    """The modules of :data:`REQUIRED_MODULES` that cannot be imported.

    :returns: module name to the distribution that provides it; empty when
        everything is installed.
    """
    missing = {}
    for module, dist in REQUIRED_MODULES.items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing[module] = dist
    return missing


def install_hint(missing: dict[str, str]) -> str:
    """The message telling an operator what to install.

    :param missing: as returned by :func:`missing_modules`.
    """
    dists = ", ".join(sorted(set(missing.values())))
    modules = ", ".join(sorted(missing))
    return (
        f"the all-in-one needs {dists} (module(s) {modules} not found): install the "
        f"'{EXTRA}' extra, e.g. pip install 'resize_sched[{EXTRA}]' (or, from a "
        f"checkout, pip install -e '.[{EXTRA}]')"
    )


def _write_private(path: str, lines: list[str]) -> None:
    """Write ``lines`` to a file only its owner may read (it holds passwords)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    os.chmod(path, 0o600)


class PrefixDispatcher:
    """Hand requests under a mount prefix to its app, everything else to ``default``.

    :param default: the application for unmatched paths (the Compute API).
    :param mounts: prefix (``/identity``) to application; the app sees the
        prefix moved from ``PATH_INFO`` to ``SCRIPT_NAME``.
    """

    def __init__(self, default: WSGIApp, mounts: dict[str, WSGIApp]) -> None:
        self.default = default
        self.mounts = mounts

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO") or "/"
        for prefix, app in self.mounts.items():
            if path == prefix or path.startswith(prefix + "/"):
                environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + prefix
                environ["PATH_INFO"] = path[len(prefix) :]
                return app(environ, start_response)
        return self.default(environ, start_response)


class AllInOne:
    """Placement, API, conductor and compute hosts in one process.

    :param conf: parsed configuration; its ``[placement]``, ``[database]``
        and ``transport_url`` are overridden to point at the embedded parts.
    """

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        if conf.api.auth_strategy != "noauth2":
            # NOTE: its identity stand-in hands out noauth2 tokens (admin:admin)
            # anyone can forge; it must never sit beside a real Keystone.
            raise exception.ConfigurationError(
                reason=f"[api] auth_strategy = {conf.api.auth_strategy} is for a real "
                "deployment: the all-in-one runs only with noauth2 and a development "
                "identity stand-in. Behind Keystone, run resize-sched-api (and the "
                "conductor and compute services) instead."
            )
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
        self.identity_endpoint = ""
        self.image_endpoint = ""
        self.clouds_yaml = ""
        #: The config file for resize-sched-status and -manage (see tool_config_args).
        self.tool_config = ""
        #: Cloud name to its openrc file, for ``nova`` (which reads no clouds.yaml).
        self.openrc: dict[str, str] = {}
        #: The stand-in Keystone's users; passwords new at every start.
        self.users = (
            User(
                self.ADMIN_USER,
                secrets.token_urlsafe(12),
                self.ADMIN_USER,
                roles=("admin", "member", "reader"),
            ),
            User(self.MEMBER_USER, secrets.token_urlsafe(12), self.MEMBER_USER),
        )
        self.identity = IdentityApp(self.users)
        self.images = ImageApp()

    # -- lifecycle --------------------------------------------------------------------

    def start(self, remove_state: bool = True) -> None:
        """Start every part; on any failure stop what already started.

        :param remove_state: as for :meth:`stop`, on a failure.
        :raises ListenError: a port is taken (the message names its option).
        """
        try:
            self._start()
        except BaseException:
            self.stop(remove_state=remove_state)
            raise

    def _start(self) -> None:
        from resize_sched.api.server import ListenError
        from resize_sched.placement.embedded import PlacementHTTP

        conf = self.conf
        host = conf.api.bind_host if conf.api.bind_host != "0.0.0.0" else "127.0.0.1"
        try:
            self.placement = PlacementHTTP(
                f"{self.state_path}/placement", host=host, port=conf.all_in_one.placement_port
            ).start()
        except OSError as exc:
            raise ListenError(
                host, conf.all_in_one.placement_port, "[all_in_one] placement_port", exc
            ) from exc
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
        self.openrc = self._write_openrc()
        self.tool_config = self._write_tool_config()
        LOG.info(
            "All-in-one ready: Compute API %s, Placement %s, Identity (stand-in) %s, "
            "Image (stand-in) %s, hosts %s, state in %s, claim strategy %s",
            self.api_endpoint,
            self.placement.endpoint,
            self.identity_endpoint,
            self.image_endpoint,
            ", ".join(h.name for h in self.hosts),
            self.state_path,
            conf.resize.claim_strategy,
        )

    #: The clouds written to ``clouds.yaml``, both password log-ins to the
    #: stand-in Keystone, whose catalog leads to the Compute API, Placement
    #: (osc-placement's ``openstack resource provider ...``) and the images.
    ADMIN_CLOUD = "resize-sched"
    MEMBER_CLOUD = "resize-sched-member"
    ADMIN_USER = "admin"
    MEMBER_USER = "demo"

    def _write_clouds_yaml(self) -> str:
        """Write ``clouds.yaml`` into the state path for the CLIs; return its path.

        Readable by its owner only: it holds this run's passwords.
        """
        path = os.path.join(self.state_path, "clouds.yaml")
        lines = ["# Written by resize-sched-all-in-one; rewritten at every start.", "clouds:"]
        for cloud, user in ((self.ADMIN_CLOUD, self.users[0]), (self.MEMBER_CLOUD, self.users[1])):
            lines += [
                f"  {cloud}:",
                "    auth_type: password",
                "    auth:",
                f"      auth_url: {self.identity_endpoint}",
                f"      username: {user.name}",
                f"      password: '{user.password}'",
                f"      project_name: {user.project}",
                "      user_domain_name: Default",
                "      project_domain_name: Default",
                "    identity_api_version: 3",
                "    region_name: RegionOne",
                "    interface: public",
            ]
        _write_private(path, lines)
        return path

    def _write_openrc(self) -> dict[str, str]:
        """Write an openrc per cloud for python-novaclient, which reads no clouds.yaml.

        :returns: the cloud name to the path of its file (``source`` it).
        """
        written = {}
        for cloud, user in ((self.ADMIN_CLOUD, self.users[0]), (self.MEMBER_CLOUD, self.users[1])):
            path = os.path.join(self.state_path, f"{cloud}-openrc.sh")
            _write_private(
                path,
                [
                    f"# Written by resize-sched-all-in-one: cloud {cloud} for the nova CLI.",
                    f"export OS_AUTH_URL={self.identity_endpoint}",
                    "export OS_IDENTITY_API_VERSION=3",
                    f"export OS_USERNAME={user.name}",
                    f"export OS_PASSWORD='{user.password}'",
                    f"export OS_PROJECT_NAME={user.project}",
                    "export OS_USER_DOMAIN_NAME=Default",
                    "export OS_PROJECT_DOMAIN_NAME=Default",
                    "export OS_REGION_NAME=RegionOne",
                ],
            )
            written[cloud] = path
        return written

    def _write_tool_config(self) -> str:
        """Write the config file the operator tools need to reach this all-in-one.

        It holds what the all-in-one sets for itself (the database, Placement);
        the operator's own config files, if any, are given before it
        (:meth:`tool_config_args`), so everything else keeps their values.

        :returns: its path.
        """
        path = os.path.join(self.state_path, TOOL_CONFIG)
        conf = self.conf
        lines = [
            "# Written by resize-sched-all-in-one; rewritten at every start.",
            "# For resize-sched-status and resize-sched-manage, e.g.:",
            f"#   resize-sched-status {' '.join(self.tool_config_args(path))} upgrade check",
            "[database]",
            f"connection = {conf.database.connection}",
            "",
            "[placement]",
            "auth_type = admin_token",
            f"endpoint = {self.placement.endpoint}",
            "token = admin",
            f"deployment_name = {conf.placement.deployment_name}",
        ]
        _write_private(path, lines)
        return path

    def tool_config_args(self, path: str | None = None) -> list[str]:
        """The ``--config-file`` arguments that point an operator tool at this all-in-one.

        :param path: the written config file; :attr:`tool_config` when None.
        :returns: the operator's own config files, then ours (later files win).
        """
        args: list[str] = []
        for given in self.conf.config_file or ():
            args += ["--config-file", os.path.abspath(given)]
        return args + ["--config-file", path or self.tool_config]

    def export_lines(self) -> list[str]:
        """The shell lines that point ``openstack`` and ``nova`` at this all-in-one."""
        return [
            f"export OS_CLIENT_CONFIG_FILE={self.clouds_yaml}",
            f"export OS_CLOUD={self.ADMIN_CLOUD}",
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
        for name, value in spec.compute_options().items():
            host_conf.set_override(name, value, group="compute")
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
        from resize_sched.api.app import build_app
        from resize_sched.api.server import create_server
        from resize_sched.conductor.rpcapi import ConductorAPI

        app = build_app(self.conf, self.db, ConductorAPI(self.conf, self.transport))
        root = PrefixDispatcher(app, {IDENTITY_PREFIX: self.identity, IMAGE_PREFIX: self.images})
        # NOTE: resize-sched-api's own server, with the [wsgi] options. A
        # create's image check calls the stand-ins on this same server: its
        # threads ([wsgi] threads, 8 by default) leave room for that second
        # request (and its log-in) beside others.
        self.api_server = create_server(self.conf, root, ident=SERVER_IDENT)
        host = self.api_server.effective_host
        if host == "0.0.0.0":
            host = "127.0.0.1"
        base = f"http://{host}:{self.api_server.effective_port}"
        self.api_endpoint = f"{base}/v2.1"
        self.identity_endpoint = f"{base}{IDENTITY_PREFIX}"
        self.image_endpoint = f"{base}{IMAGE_PREFIX}"
        self.identity.catalog = (
            Endpoint("compute", "nova", self.api_endpoint),
            Endpoint("placement", "placement", self.placement.endpoint),
            Endpoint("image", "glance", self.image_endpoint),
            Endpoint("identity", "keystone", self.identity_endpoint),
        )
        self._configure_glance()
        self._api_thread = threading.Thread(
            target=self.api_server.run, name="all-in-one-api", daemon=True
        )
        self._api_thread.start()

    def _configure_glance(self) -> None:
        """Point ``[glance]`` at the image stand-in, through the identity's catalog.

        The API reads it at its first create with an image, after the
        server below serves.
        """
        group = "glance"
        self.conf.register_opts(ks_loading.get_auth_plugin_conf_options("password"), group=group)
        admin = self.users[0]
        for name, value in {
            "auth_type": "password",
            "auth_url": self.identity_endpoint,
            "username": admin.name,
            "password": admin.password,
            "project_name": admin.project,
            "user_domain_name": "Default",
            "project_domain_name": "Default",
            "region_name": "RegionOne",
        }.items():
            self.conf.set_override(name, value, group=group)

    def stop(self, remove_state: bool = True) -> None:
        """Stop every part, newest first. Safe to call more than once.

        :param remove_state: also remove the state path when it is a
            temporary directory of ours (:meth:`remove_state`); a caller
            whose log file is in it passes False, closes its log, then
            calls :meth:`remove_state`.
        """
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
        if remove_state:
            self.remove_state()

    def remove_state(self) -> None:
        """Remove the state path if it is a temporary directory made at start."""
        if self._own_state:
            shutil.rmtree(self.state_path, ignore_errors=True)

    def __enter__(self) -> "AllInOne":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
