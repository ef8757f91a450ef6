"""Version documents: ``GET /`` and ``GET /v2.1``, served without a token.

Clients (keystoneauth's discovery, so openstacksdk) read them to learn the
microversion range before their first authenticated call.
"""

from typing import TYPE_CHECKING, Any

import webob

from resize_sched.api import microversion
from resize_sched.api.request import PREFIX, ApiRequest, json_response

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

#: When the v2.1 API first appeared (as Nova reports it).
UPDATED = "2013-07-23T11:33:21Z"


def _version(req: ApiRequest) -> dict[str, Any]:
    return {
        "id": "v2.1",
        "status": "CURRENT",
        "version": str(microversion.MAX_VERSION),
        "min_version": str(microversion.MIN_VERSION),
        "updated": UPDATED,
        "links": [
            {"rel": "self", "href": f"{req.base_url}{PREFIX}/"},
            {
                "rel": "describedby",
                "type": "text/html",
                "href": "https://docs.openstack.org/api-ref/compute/",
            },
        ],
        "media-types": [
            {
                "base": "application/json",
                "type": "application/vnd.openstack.compute+json;version=2.1",
            }
        ],
    }


def root(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /``: every API version served here (only v2.1).

    :returns: ``{"versions": [...]}``, 200.
    """
    version = _version(req)
    del version["media-types"]
    return json_response({"versions": [version]})


def show(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /v2.1``: the v2.1 document with its microversion range.

    :returns: ``{"version": {...}}``, 200.
    """
    return json_response({"version": _version(req)})
