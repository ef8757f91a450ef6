"""Checking a server create's ``imageRef`` against the Image service.

When ``[glance]`` names an auth plugin (see :mod:`resize_sched.conf.glance`)
the API reads ``GET /v2/images/{id}`` for every create with an image and
refuses, with a 400 as Nova does, an image that does not exist, is not
active, or that the flavor cannot boot: less memory than its ``min_ram``, a
root disk smaller than its ``min_disk`` or than the image itself (a flavor
with a 0 GiB root disk is not checked for disk, as in Nova). Without
``[glance]`` the reference is stored as given.

A request the Image service cannot answer (unreachable, or our credentials
refused) is a 503: we never create a server we could not check.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_log import log as logging

from resize_sched.api import faults
from resize_sched.conf import glance as glance_conf

LOG = logging.getLogger(__name__)

_GIB = 1024**3
#: The longest image id we record (``servers.image_ref``).
MAX_IMAGE_ID_LENGTH = 255

# NOTE: ConfigOpts is unhashable: keyed by id, with a weak reference to tell
# a live configuration from a new one at a reused address, and the group's
# values to tell a changed group (an all-in-one restarted on new ports).
_clients: dict[int, tuple[weakref.ref[cfg.ConfigOpts], tuple[Any, ...], ImageClient]] = {}
_clients_lock = threading.Lock()


class ImageServiceUnavailable(faults.Fault):
    """503: the Image service could not be asked."""

    status = 503


def image_id(image_ref: str) -> str:
    """The image id in an ``imageRef``: an id, or a URL ending in one.

    :param image_ref: the ``imageRef`` as sent.
    :returns: the id.
    """
    return image_ref.strip().rstrip("/").rsplit("/", 1)[-1]


class ImageClient:
    """Reads images through a keystoneauth adapter.

    :param adapter: an adapter for the ``image`` service.
    """

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> ImageClient | None:
        """The client ``[glance]`` describes, or None when it names no auth plugin.

        One client per configuration object and ``[glance]`` values, so its
        token is reused.

        :param conf: a ConfigOpts with resize_sched's options registered.
        :returns: the client, or None.
        """
        if not conf.glance.auth_type:
            return None
        values = tuple(sorted((name, repr(conf.glance[name])) for name in conf.glance))
        with _clients_lock:
            ref, seen, client = _clients.get(id(conf), (None, None, None))
            if client is None or ref is None or ref() is not conf or seen != values:
                group = glance_conf.GROUP_NAME
                auth = ks_loading.load_auth_from_conf_options(conf, group)
                session = ks_loading.load_session_from_conf_options(conf, group, auth=auth)
                adapter = ks_loading.load_adapter_from_conf_options(
                    conf, group, session=session, auth=auth, raise_exc=False
                )
                client = cls(adapter)
                _clients[id(conf)] = (weakref.ref(conf), values, client)
            return client

    def get(self, ident: str) -> dict[str, Any] | None:
        """``GET /v2/images/{id}``.

        :param ident: the image id.
        :returns: the image, or None when there is no such image.
        :raises ImageServiceUnavailable: no answer, or one we cannot use.
        """
        try:
            response = self.adapter.get(
                f"/v2/images/{ident}", headers={"Accept": "application/json"}
            )
        except ks_exc.ClientException as exc:
            LOG.warning("Image service unavailable reading image %s: %s", ident, exc)
            raise ImageServiceUnavailable(
                "The Image service could not be reached to check the image."
            ) from None
        if response.status_code in (400, 404):
            return None
        if response.status_code != 200:
            LOG.warning(
                "Image service answered %s reading image %s: %s",
                response.status_code,
                ident,
                response.text[:200],
            )
            raise ImageServiceUnavailable(
                f"The Image service answered {response.status_code} to the image check."
            )
        try:
            return dict(response.json())
        except ValueError:
            raise ImageServiceUnavailable("The Image service answered with no JSON.") from None


def check_image(image: dict[str, Any], ident: str, memory_mb: int, root_gb: int) -> None:
    """Refuse an image a flavor cannot boot, as Nova does at create.

    :param image: the image as the Image API shows it.
    :param ident: its id, for the messages.
    :param memory_mb: the flavor's memory.
    :param root_gb: the flavor's root disk (0: not checked).
    :raises faults.BadRequest: inactive image, or too little memory or disk.
    """
    if image.get("status") != "active":
        raise faults.BadRequest(f"Image {ident} is not active.")
    min_ram = int(image.get("min_ram") or 0)
    if memory_mb < min_ram:
        raise faults.BadRequest(
            f"Flavor's memory is too small for requested image: the flavor has "
            f"{memory_mb} MiB, image {ident} needs at least {min_ram} MiB."
        )
    if root_gb == 0:
        return
    min_disk = int(image.get("min_disk") or 0)
    if root_gb < min_disk:
        raise faults.BadRequest(
            f"Flavor's disk is too small for requested image: the flavor's root disk is "
            f"{root_gb} GiB, image {ident} needs at least {min_disk} GiB."
        )
    size = int(image.get("size") or 0)
    if size > root_gb * _GIB:
        raise faults.BadRequest(
            f"Flavor's disk is too small for requested image: the flavor's root disk is "
            f"{root_gb * _GIB} bytes, image {ident} is {size} bytes."
        )


def image_ref_of(body: dict[str, Any]) -> str | None:
    """The image a server create boots from: ``imageRef``, or a local image root mapping.

    openstackclient sends, beside ``imageRef``, the one block device mapping
    that means the same (``source_type`` ``image``, ``destination_type``
    ``local``, ``boot_index`` 0); that is accepted. Every other mapping needs
    a volume, which this deployment does not have: a 400 that says so.

    :param body: the validated ``server`` object of the request.
    :returns: the ``imageRef`` (or the mapping's image), or None for neither.
    :raises faults.BadRequest: a mapping that needs volumes, or one naming
        another image than ``imageRef``.
    """
    image_ref = body.get("imageRef") or None
    if body.get("block_device_mapping"):
        raise faults.BadRequest(_NO_VOLUMES)
    for mapping in body.get("block_device_mapping_v2") or ():
        local_image_root = (
            isinstance(mapping, dict)
            and mapping.get("source_type") == "image"
            and mapping.get("destination_type", "local") == "local"
            and str(mapping.get("boot_index")) == "0"
            and isinstance(mapping.get("uuid"), str)
        )
        if not local_image_root:
            raise faults.BadRequest(_NO_VOLUMES)
        if image_ref is not None and image_id(image_ref) != mapping["uuid"]:
            raise faults.BadRequest(
                "The image of the root block device mapping is not the imageRef."
            )
        image_ref = image_ref or mapping["uuid"]
    return image_ref


_NO_VOLUMES = (
    "Block device mappings other than the image as the local root disk are not "
    "supported: this deployment has no volumes (no boot from volume, no attached "
    "volumes). Boot from an image (imageRef) instead."
)


def validated_image(conf: cfg.ConfigOpts, image_ref: str, memory_mb: int, root_gb: int) -> str:
    """The image id to record for a create's ``imageRef``, checked if ``[glance]`` is set.

    :param conf: the API's configuration.
    :param image_ref: the ``imageRef`` as sent (an id or a URL).
    :param memory_mb: the flavor's memory.
    :param root_gb: the flavor's root disk.
    :returns: the image id.
    :raises faults.BadRequest: unknown image, or one the flavor cannot boot.
    :raises ImageServiceUnavailable: the Image service could not be asked.
    """
    ident = image_id(image_ref)
    if not ident or len(ident) > MAX_IMAGE_ID_LENGTH or not ident.isprintable():
        raise faults.BadRequest("Invalid imageRef provided.")
    client = ImageClient.from_conf(conf)
    if client is None:
        return ident
    image = client.get(ident)
    if image is None:
        raise faults.BadRequest(f"Can not find requested image: {ident}.")
    check_image(image, ident, memory_mb, root_gb)
    return ident
