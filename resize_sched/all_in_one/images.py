"""A development stand-in for Glance: the Image API v2 reads servers need.

Served by the all-in-one under ``/image`` so that ``openstack server create
--image NAME`` and ``nova boot --image NAME`` can turn a name into an image
id, and the API's ``[glance]`` check (:mod:`resize_sched.api.glance`) can read
an image's ``min_ram``, ``min_disk`` and size. It holds a fixed list of
public, active images (:data:`DEFAULT_IMAGES`) and no image data; any
non-empty ``X-Auth-Token`` may read them. Not Glance; never expose it.

What it serves: ``GET /image`` and ``/image/versions`` (the version list),
``GET /image/v2/images`` (filters ``name``, ``id``, ``status``,
``visibility``; ``limit`` and ``marker``), ``GET /image/v2/images/{id}``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import webob

from resize_sched.api.request import json_response

StartResponse = Callable[..., Any]

API_VERSION = "v2.16"
_NAMESPACE = uuid.UUID("0b8e4a52-3f33-4c39-9d43-6c1c5d0c2a11")
_CREATED = "2026-01-01T00:00:00Z"
_MIB = 1024 * 1024


@dataclass(frozen=True)
class Image:
    """One image; its id is derived from its name, so it is the same at every start.

    :ivar name: the image name.
    :ivar min_disk: the smallest root disk it boots from, in GiB.
    :ivar min_ram: the least memory it boots with, in MiB.
    :ivar size: its size in bytes (a flavor's disk must hold it).
    """

    name: str
    min_disk: int = 0
    min_ram: int = 0
    size: int = 0

    @property
    def id(self) -> str:
        """The image's UUID."""
        return str(uuid.uuid5(_NAMESPACE, self.name))

    def view(self) -> dict[str, Any]:
        """The image as Glance's API v2 shows it."""
        path = f"/v2/images/{self.id}"
        return {
            "id": self.id,
            "name": self.name,
            "status": "active",
            "visibility": "public",
            "protected": False,
            "os_hidden": False,
            "tags": [],
            "container_format": "bare",
            "disk_format": "qcow2",
            "min_disk": self.min_disk,
            "min_ram": self.min_ram,
            "size": self.size,
            "virtual_size": None,
            "checksum": None,
            "os_hash_algo": None,
            "os_hash_value": None,
            "owner": None,
            "created_at": _CREATED,
            "updated_at": _CREATED,
            "self": path,
            "file": f"{path}/file",
            "schema": "/v2/schemas/image",
        }


#: The images the all-in-one offers.
DEFAULT_IMAGES = (
    Image("cirros", min_disk=1, min_ram=64, size=21 * _MIB),
    Image("ubuntu-24.04", min_disk=10, min_ram=1024, size=600 * _MIB),
    Image("tiny", size=1 * _MIB),
)


def _error(status: int, title: str, message: str) -> webob.Response:
    # Glance answers errors as plain text in an HTML-ish body; clients read the status.
    return webob.Response(
        status=status, text=f"{status} {title}\n\n{message}\n", content_type="text/plain"
    )


class ImageApp:
    """The stand-in as a WSGI application mounted at its prefix.

    :param images: the images it serves.
    """

    def __init__(self, images: Sequence[Image] = DEFAULT_IMAGES) -> None:
        self.images = list(images)
        self._by_id = {image.id: image for image in self.images}

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        req = webob.Request(environ)
        response = self._route(req, req.path_info.rstrip("/"))
        if req.method == "HEAD":
            response.body = b""
        return response(environ, start_response)

    def _versions(self, req: webob.Request, status: int) -> webob.Response:
        version = {
            "id": API_VERSION,
            "status": "CURRENT",
            "links": [{"rel": "self", "href": f"{req.application_url}/v2/"}],
        }
        return json_response({"versions": [version]}, status)

    def _route(self, req: webob.Request, path: str) -> webob.Response:
        if req.method not in ("GET", "HEAD"):
            return _error(405, "Method Not Allowed", "This image stand-in is read-only.")
        if path == "":
            return self._versions(req, 300)
        if path in ("/versions", "/v2"):
            return self._versions(req, 200)
        if not req.headers.get("X-Auth-Token", "").strip():
            return _error(401, "Unauthorized", "This server could not verify your identity.")
        if path == "/v2/images":
            return self._list(req)
        parts = path.split("/")
        if len(parts) == 4 and parts[:3] == ["", "v2", "images"]:
            image = self._by_id.get(parts[3])
            if image is None:
                return _error(404, "Not Found", f"No image found with ID {parts[3]}")
            return json_response(image.view())
        return _error(404, "Not Found", "The resource could not be found.")

    def _list(self, req: webob.Request) -> webob.Response:
        views = [image.view() for image in self.images]
        for key in ("name", "id", "status", "visibility"):
            if key in req.GET:
                wanted = req.GET[key]
                if key == "id" and wanted.startswith("in:"):
                    ids = set(wanted[3:].split(","))
                    views = [v for v in views if v["id"] in ids]
                else:
                    views = [v for v in views if str(v[key]) == wanted]
        marker = req.GET.get("marker")
        if marker is not None:
            ids = [v["id"] for v in views]
            if marker not in ids:
                return _error(400, "Bad Request", f"marker {marker} could not be found.")
            views = views[ids.index(marker) + 1 :]
        body: dict[str, Any] = {"first": "/v2/images", "schema": "/v2/schemas/images"}
        limit = req.GET.get("limit")
        if limit is not None:
            try:
                count = int(limit)
            except ValueError:
                return _error(400, "Bad Request", "limit must be an integer")
            if count < len(views):
                views = views[:count]
                query = dict(req.GET, marker=views[-1]["id"]) if views else dict(req.GET)
                body["next"] = "/v2/images?" + "&".join(f"{k}={v}" for k, v in query.items())
        body["images"] = views
        return json_response(body)
