"""The cloud Tempest runs against: the production shape, on this machine.

:class:`LocalCloud` starts a real Keystone
(:class:`tests.functional.fixtures.keystone.KeystoneServer`), then the chaos
soak's deployment (:class:`tests.chaos.stack.Stack`, with no fault ever
armed): openstack-placement in its own processes over HTTP,
``resize-sched-compute`` on two hosts, ``resize-sched-conductor`` and
``resize-sched-api`` behind keystonemiddleware, each a process, on a private
RabbitMQ virtual host and a scratch MariaDB database ``rs_tempest_<hex>``.
Beside them runs the fixed image list of :mod:`resize_sched.all_in_one.images` (the
all-in-one's Image API stand-in; no image data) in a process of its own:
Tempest reads the images it boots from it, and the API checks every
``imageRef`` against it through ``[glance]``, as it would against Glance.
It registers the compute and image endpoints in Keystone's catalog and makes
the two flavors Tempest boots and resizes with. :meth:`LocalCloud.close`
undoes it all, whatever state the start reached.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable

import requests

from resize_sched.all_in_one.images import DEFAULT_IMAGES
from resize_sched.db.host_api import COMPUTE_BINARY
from tests.chaos.stack import REPO, HarnessError, Stack, free_port
from tests.functional.fixtures.keystone import (
    ADMIN_PASSWORD,
    REGION,
    Keystone,
    KeystoneError,
    KeystoneServer,
)

PREFIX = "rs_tempest_"
#: The flavors Tempest boots (``flavor_ref``) and resizes to (``flavor_ref_alt``):
#: id, name, vCPUs, MiB, GiB.
FLAVORS = (("42", "m1.nano", 1, 128, 1), ("84", "m1.micro", 1, 192, 1))
#: keystone.conf for the harness: one waitress thread (see KeystoneServer),
#: bcrypt's fewest rounds (Tempest makes users for every test class) and
#: Keystone's cache in the process's memory (one process, so it is coherent):
#: without it every request re-reads its token's user, project, roles and
#: revocation events from SQLite, and Keystone was most of the run's time.
KEYSTONE_OPTIONS = (
    "[identity]\npassword_hash_rounds = 4\n"
    "[cache]\nenabled = true\nbackend = dogpile.cache.memory\n"
)
#: The conductor's ``[filter_scheduler] enabled_filters``: the default list and
#: the filters of the ``same_host`` and ``different_host`` hints, as a Nova
#: cloud that Tempest runs against enables them. The template's
#: ``scheduler_enabled_filters`` names the same.
ENABLED_FILTERS = (
    "ComputeFilter",
    "ComputeCapabilitiesFilter",
    "ImagePropertiesFilter",
    "ServerGroupAntiAffinityFilter",
    "ServerGroupAffinityFilter",
    "SameHostFilter",
    "DifferentHostFilter",
)

_SERVE_IMAGES = """
import os
import waitress
from resize_sched.all_in_one.images import ImageApp

waitress.serve(ImageApp(), host="127.0.0.1", port=int(os.environ["IMAGES_PORT"]), threads=2)
"""


class Images:
    """The image stand-in served over HTTP in its own process."""

    def __init__(self, workdir: pathlib.Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "images.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, env: dict[str, str], timeout: float = 60.0) -> None:
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _SERVE_IMAGES],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**env, "IMAGES_PORT": str(self.port)},
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise HarnessError(f"the image stand-in exited: {self.log_path.read_text()}")
            try:
                if requests.get(f"{self.url}/versions", timeout=2).status_code == 200:
                    return
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise HarnessError(f"the image stand-in did not answer; see {self.log_path}")
            time.sleep(0.2)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class LocalCloud:
    """Keystone, Placement and resize_sched's daemons; the values for tempest.conf.

    :param workdir: every configuration file and log goes under it.
    :param transport_url: a RabbitMQ URL (a virtual host is made on it).
    :param db_url: a MariaDB/MySQL URL (the scratch databases are made there).
    """

    def __init__(self, workdir: pathlib.Path, transport_url: str, db_url: str) -> None:
        self.workdir = workdir
        self.transport_url = transport_url
        self.db_url = db_url
        self.keystone_server: KeystoneServer | None = None
        self.keystone: Keystone | None = None
        self.images: Images | None = None
        self.stack: Stack | None = None

    def start(self, progress: Callable[[str], None]) -> dict[str, str]:
        """Bring it all up; the tempest.conf placeholders for it.

        :raises HarnessError: something did not come up.
        """
        (self.workdir / "keystone").mkdir(parents=True, exist_ok=True)
        self.keystone_server = KeystoneServer(
            self.workdir / "keystone", threads=1, options=KEYSTONE_OPTIONS
        )
        try:
            self.keystone = self.keystone_server.start()
        except KeystoneError as exc:
            raise HarnessError(str(exc)) from exc
        progress(f"Keystone up at {self.keystone.url}")
        identity = f"{self.keystone.url}/v3"
        credentials = textwrap.dedent(
            f"""\
            auth_url = {identity}
            auth_type = password
            username = admin
            password = {ADMIN_PASSWORD}
            project_name = admin
            user_domain_id = default
            project_domain_id = default
            region_name = {REGION}
            """
        )
        options = (
            "[api]\nauth_strategy = keystone\n"
            f"[keystone_authtoken]\nwww_authenticate_uri = {identity}\ninterface = public\n"
            + credentials
            + "[glance]\nvalid_interfaces = public\n"
            + credentials
            + f"[filter_scheduler]\nenabled_filters = {','.join(ENABLED_FILTERS)}\n"
        )
        (self.workdir / "stack").mkdir(exist_ok=True)
        self.images = Images(self.workdir)
        path = os.environ.get("PYTHONPATH", "")
        self.images.start(
            {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), path) if p)}
        )
        try:
            self.keystone.register("image", "glance", self.images.url)
        except KeystoneError as exc:
            raise HarnessError(str(exc)) from exc
        progress(f"image stand-in at {self.images.url} in the catalog")
        self.stack = Stack(
            self.workdir / "stack",
            self.transport_url,
            self.db_url,
            strategy="max_flavor",
            computes=2,
            seed=0,
            fault_rate=0.0,
            placement_timeout=30.0,
            options=options,
            prefix=PREFIX,
            # NOTE: Nova's default quotas, as Tempest expects of a cloud (its
            # over-quota resize tests skip on an unlimited project).
            lift_quotas=False,
        )
        self.stack.start(progress)
        self._wait_for_hypervisors(progress)
        try:
            self.keystone.register("compute", "nova", self.stack.endpoint)
        except KeystoneError as exc:
            raise HarnessError(str(exc)) from exc
        self._flavors()
        progress(f"compute endpoint {self.stack.endpoint} in the catalog; flavors made")
        return {
            "auth_url": identity,
            "admin_username": "admin",
            "admin_password": ADMIN_PASSWORD,
            "admin_project_name": "admin",
            "admin_domain_name": "Default",
            "region": REGION,
            "image_ref": DEFAULT_IMAGES[0].id,
            "image_ref_alt": DEFAULT_IMAGES[2].id,
            "flavor_ref": FLAVORS[0][0],
            "flavor_ref_alt": FLAVORS[1][0],
        }

    def _wait_for_hypervisors(self, progress: Callable[[str], None]) -> None:
        """Wait until os-hypervisors lists both computes: a node is listed once
        its compute's first report reached the conductor, which can come after
        the providers are registered (Tempest's hypervisor tests found none)."""
        assert self.stack is not None and self.stack.db is not None
        db, computes = self.stack.db, self.stack.computes

        def listed() -> bool:
            services = {s.host for s in db.service_list(binary=COMPUTE_BINARY)}
            return len([n for n in db.compute_node_list() if n.host in services]) == computes

        self.stack._wait(listed, "the computes' first reports to reach the conductor")
        progress(f"{computes} hypervisors listed")

    def _flavors(self) -> None:
        assert self.keystone is not None and self.stack is not None
        for flavorid, name, vcpus, ram, disk in FLAVORS:
            body = {"flavor": {"id": flavorid, "name": name, "vcpus": vcpus, "ram": ram}}
            body["flavor"]["disk"] = disk
            response = requests.post(
                f"{self.stack.endpoint}/flavors",
                json=body,
                headers={"X-Auth-Token": self.keystone.admin_token},
                timeout=60,
            )
            if response.status_code != 200:
                raise HarnessError(f"flavor {name}: {response.status_code} {response.text}")

    def logs(self) -> list[pathlib.Path]:
        """Every daemon's log, Keystone's first."""
        found = []
        if self.keystone_server is not None:
            found.append(self.keystone_server.log_path)
        if self.images is not None:
            found.append(self.images.log_path)
        if self.stack is not None:
            found += [d.log_path for d in self.stack.daemons.values()]
        return found

    def close(self) -> None:
        """Stop every process and drop the databases and virtual host; safe twice."""
        stack, self.stack = self.stack, None
        server, self.keystone_server = self.keystone_server, None
        images, self.images = self.images, None
        try:
            if stack is not None:
                stack.close()
        finally:
            try:
                if images is not None:
                    images.stop()
            finally:
                if server is not None:
                    server.stop()
