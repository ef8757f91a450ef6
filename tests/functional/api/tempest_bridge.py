"""Tempest's own compute service clients, talking in-process to our API.

Each call goes through Tempest's client code as in a Tempest run: the
request it builds, the microversion header, and the validation of our
answer against Tempest's copy of Nova's response schema for that
microversion (``Additional properties are not allowed`` and the like raise
``InvalidHTTPResponseBody``). Only the HTTP connection is replaced: the
request goes to the WSGI application instead of a socket.
"""

import contextlib
import urllib.parse
from collections.abc import Iterator
from typing import Any

import webob

try:
    from tempest.lib.services.compute import (
        base_compute_client,
        flavors_client,
        hypervisor_client,
        migrations_client,
        servers_client,
        services_client,
        tenant_usages_client,
    )
except ImportError:  # pragma: no cover - tempest is a test dependency
    base_compute_client = None

#: Where the clients think the API is.
ENDPOINT = "http://localhost/v2.1"


class _Response(dict):
    """What Tempest's HTTP layer returns: lower-cased headers and ``status``."""

    def __init__(self, response: webob.Response, url: str) -> None:
        super().__init__((k.lower(), v) for k, v in response.headerlist)
        self.status = response.status_int
        self["status"] = str(self.status)
        self.reason = response.status.split(" ", 1)[-1]
        self["content-location"] = url


class _InProcessHttp:
    def __init__(self, app: Any) -> None:
        self.app = app

    def request(
        self, url: str, method: str, headers: Any = None, body: Any = None, **_: Any
    ) -> tuple[_Response, bytes]:
        parts = urllib.parse.urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        req = webob.Request.blank(path, method=method)
        for key, value in (headers or {}).items():
            req.headers[key] = value
        if body is not None:
            req.body = body.encode() if isinstance(body, str) else body
        response = req.get_response(self.app)
        return _Response(response, url), response.body


class _Auth:
    """An auth provider that sends our noauth2 token."""

    def __init__(self, token: str) -> None:
        self.token = token

    def auth_request(
        self, method: str, url: str, headers: Any = None, body: Any = None, filters: Any = None
    ) -> tuple[str, Any, Any]:
        headers = dict(headers or {})
        headers["X-Auth-Token"] = self.token
        return f"{ENDPOINT}/{url}" if not url.startswith("http") else url, headers, body

    def base_url(self, filters: Any, auth_data: Any = None) -> str:
        return ENDPOINT

    def get_token(self) -> str:
        return self.token


class Clients:
    """Tempest's compute clients for one caller (a noauth2 token)."""

    def __init__(self, app: Any, token: str) -> None:
        auth = _Auth(token)
        made = {
            "servers": servers_client.ServersClient,
            "migrations": migrations_client.MigrationsClient,
            "hypervisors": hypervisor_client.HypervisorClient,
            "services": services_client.ServicesClient,
            "flavors": flavors_client.FlavorsClient,
            "usages": tenant_usages_client.TenantUsagesClient,
        }
        for name, cls in made.items():
            client = cls(auth, "compute", "RegionOne")
            client.http_obj = _InProcessHttp(app)
            setattr(self, name, client)


@contextlib.contextmanager
def microversion(version: str | None) -> Iterator[None]:
    """Tempest's clients ask for (and validate against) ``version`` meanwhile."""
    saved = base_compute_client.COMPUTE_MICROVERSION
    base_compute_client.COMPUTE_MICROVERSION = version
    try:
        yield
    finally:
        base_compute_client.COMPUTE_MICROVERSION = saved
