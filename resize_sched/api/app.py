"""The WSGI application: version documents, authentication, the route table.

Request flow::

    ComputeApp            the oslo.middleware filters (api/middleware.py: request
                          id, CORS, proxy headers, body size limit), then the
                          access log; a path or query that is not UTF-8 is a
                          400; / and /v2.1 and /healthcheck answered here
      -> auth middleware  (noauth2 or keystone) puts a RequestContext in environ
        -> Router         microversion, route table, handler, error responses
                          (handlers authorize with api/policy.py's rules)

The route table (:data:`ROUTES`) is the one place that says which handler
serves which method and path under ``/v2.1``.
"""

import re
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import webob
from oslo_config import cfg
from oslo_log import log as logging

from resize_sched.api import auth, faults, microversion, middleware, policy
from resize_sched.api.handlers import (
    aggregates,
    availability_zones,
    flavor_access,
    flavor_extra_specs,
    flavors,
    hosts,
    hypervisors,
    instance_actions,
    keypairs,
    migrations,
    quota_sets,
    server_actions,
    server_create,
    server_groups,
    server_metadata,
    server_migrations,
    servers,
    services,
    simple_tenant_usage,
    versions,
)
from resize_sched.api.request import (
    LINK_PREFIX_KEY,
    PREFIX,
    REQUEST_ID_KEY,
    VERSION_KEY,
    ApiRequest,
)
from resize_sched.api.state import ApiState
from resize_sched.conductor.rpcapi import ConductorAPI
from resize_sched.db.api import Database

LOG = logging.getLogger(__name__)

Handler = Callable[..., webob.Response]
StartResponse = Callable[..., Any]


@dataclass(frozen=True)
class Route:
    """One method and path template (``/servers/{server_id}``) and its handler."""

    method: str
    template: str
    handler: Handler

    @property
    def pattern(self) -> re.Pattern[str]:
        """The template as a regular expression; each ``{name}`` one path segment."""
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.template)
        return re.compile(f"^{regex}$")


#: The conventional handler names of a collection, the method each answers
#: and the path after the collection's (``{id}``: one member).
_VERBS = (
    ("index", "GET", ""),
    ("create", "POST", ""),
    ("update_all", "PUT", ""),
    ("detail", "GET", "/detail"),
    ("show", "GET", "/{id}"),
    ("update", "PUT", "/{id}"),
    ("delete", "DELETE", "/{id}"),
    ("action", "POST", "/{id}/action"),
)


def collection(path: str, id_name: str, module: Any, verbs: str) -> tuple[Route, ...]:
    """The routes of a collection whose handlers have the conventional names.

    Literal paths come before the member's template (``/detail`` before
    ``/{id}``), as the route table needs.

    :param path: the collection's path (``/servers``).
    :param id_name: the name of a member's id (``server_id``).
    :param module: the handler module.
    :param verbs: the handlers it has, of :data:`_VERBS`' names
        (``"index show"``); any order.
    :raises ValueError: a name not in :data:`_VERBS`.
    :raises AttributeError: ``module`` lacks one. Both at import: a typo
        never reaches a request.
    """
    names = verbs.split()
    unknown = set(names) - {name for name, _, _ in _VERBS}
    if unknown:
        raise ValueError(f"not a conventional handler name: {sorted(unknown)}")
    return tuple(
        Route(method, path + tail.replace("{id}", f"{{{id_name}}}"), getattr(module, name))
        for name, method, tail in _VERBS
        if name in names
    )


def named(method: str, template: str, module: Any, names: str) -> tuple[Route, ...]:
    """Routes whose last path segment names the handler (``disable-log-reason``:
    ``module.disable_log_reason``).

    :param template: the path, ``*`` standing for the last segment.
    :param names: the last segments, in the order they are matched.
    :raises AttributeError: ``module`` lacks one (at import).
    """
    return tuple(
        Route(method, template.replace("*", name), getattr(module, name.replace("-", "_")))
        for name in names.split()
    )


#: Every route under /v2.1. Literal paths come before templates that would
#: also match them (``/flavors/detail`` before ``/flavors/{flavor_id}``).
ROUTES = (
    *collection("/flavors", "flavor_id", flavors, "index create detail show delete"),
    Route("POST", "/flavors/{flavor_id}/action", flavor_access.action),
    Route("GET", "/flavors/{flavor_id}/os-flavor-access", flavor_access.index),
    *collection(
        "/flavors/{flavor_id}/os-extra_specs",
        "key",
        flavor_extra_specs,
        "index create show update delete",
    ),
    *collection("/servers", "server_id", servers, "index detail show update delete"),
    Route("POST", "/servers", server_create.create),
    Route("POST", "/servers/{server_id}/action", server_actions.action),
    *collection(
        "/servers/{server_id}/metadata",
        "key",
        server_metadata,
        "index create update_all show update delete",
    ),
    *collection(
        "/servers/{server_id}/os-instance-actions", "request_id", instance_actions, "index show"
    ),
    *collection(
        "/servers/{server_id}/migrations",
        "migration_id",
        server_migrations,
        "index show delete action",
    ),
    Route("GET", "/os-migrations", migrations.index),
    *named("PUT", "/os-services/*", services, "disable disable-log-reason enable force-down"),
    *collection("/os-services", "service_id", services, "index update"),
    Route("GET", "/os-hypervisors/statistics", hypervisors.statistics),
    *collection("/os-hypervisors", "hypervisor_id", hypervisors, "index detail show"),
    Route("GET", "/os-hypervisors/{hypervisor_id}/uptime", hypervisors.uptime),
    Route("GET", "/os-hypervisors/{hypervisor_hostname_pattern}/search", hypervisors.search),
    Route(
        "GET", "/os-hypervisors/{hypervisor_hostname_pattern}/servers", hypervisors.search_servers
    ),
    *collection(
        "/os-aggregates", "aggregate_id", aggregates, "index create show update delete action"
    ),
    *collection("/os-availability-zone", "zone", availability_zones, "index detail"),
    *collection("/os-hosts", "host_name", hosts, "index show update"),
    *named("GET", "/os-hosts/{host_name}/*", hosts, "startup shutdown reboot"),
    *collection("/os-server-groups", "server_group_id", server_groups, "index create show delete"),
    *collection("/os-simple-tenant-usage", "tenant_id", simple_tenant_usage, "index show"),
    *collection("/os-quota-sets", "tenant_id", quota_sets, "show update delete"),
    *named("GET", "/os-quota-sets/{tenant_id}/*", quota_sets, "defaults detail"),
    Route("GET", "/os-quota-class-sets/{id}", quota_sets.class_show),
    Route("PUT", "/os-quota-class-sets/{id}", quota_sets.class_update),
    Route("GET", "/limits", quota_sets.limits),
    *collection("/os-keypairs", "keypair_name", keypairs, "index create show delete"),
)


#: Nova's ``/v2.1/{project_id}/...`` form: a first segment of hex digits and
#: dashes (no route of ours starts with one), then a route.
_PROJECT_PREFIX = re.compile(r"^/(?P<project_id>[0-9a-f-]+)(?P<rest>/.*)$")


class Router:
    """Dispatch an authenticated ``/v2.1/...`` request to its handler.

    Each route is also served under ``/v2.1/{project_id}/``, as Nova does;
    a project id there that is not the caller's is a 400.

    :param state: what the handlers use.
    :param routes: the route table.
    """

    def __init__(self, state: ApiState, routes: Iterable[Route] = ROUTES) -> None:
        self.state = state
        self.routes = [(route, route.pattern) for route in routes]

    def _names_an_empty_id(self, path: str) -> bool:
        """Whether ``path`` + ``/`` is a route's ``.../{id}`` with the id empty."""
        probe = f"{path}/-"
        return any(
            route.template.endswith("}") and pattern.match(probe) for route, pattern in self.routes
        )

    def _match_any(self, req: ApiRequest, path: str) -> tuple[Handler, dict[str, str]]:
        prefixed = _PROJECT_PREFIX.match(path)
        if prefixed is None:
            return self._match(req.method, path)
        try:
            found = self._match(req.method, prefixed["rest"])
        except faults.NotFound:
            return self._match(req.method, path)
        project_id = req.context.project_id
        if project_id and prefixed["project_id"] != project_id:
            raise faults.BadRequest(
                f"Malformed request URL: URL's project_id '{prefixed['project_id']}' "
                f"doesn't match Context's project_id '{project_id}'"
            )
        return found

    def _match(self, method: str, path: str) -> tuple[Handler, dict[str, str]]:
        allowed = []
        for route, pattern in self.routes:
            found = pattern.match(path)
            if found is None:
                continue
            if route.method == method:
                return route.handler, found.groupdict()
            allowed.append(route.method)
        if allowed:
            raise faults.MethodNotAllowed(
                f"Method {method} is not allowed on {PREFIX}{path}.",
                headers=[("Allow", ", ".join(sorted(set(allowed))))],
            )
        raise faults.NotFound("The resource could not be found.")

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        req = ApiRequest(environ)
        raw_path = req.path_info[len(PREFIX) :]
        path = raw_path.rstrip("/") or "/"
        version = None
        try:
            version = microversion.from_headers(req.headers)
            environ[VERSION_KEY] = version
            if path != raw_path and self._names_an_empty_id(path):
                # NOTE: as Nova: /os-simple-tenant-usage/ asks for the tenant "".
                raise faults.NotFound("The resource could not be found.")
            handler, params = self._match_any(req, path)
            response = handler(self.state, req, **params)
        except Exception as exc:
            response = faults.to_response(exc, req.request_id)
        if version is not None:
            for name, value in microversion.response_headers(version):
                response.headers[name] = value
        return response(environ, start_response)


class ComputeApp:
    """The whole API service as one WSGI application.

    :param conf: the parsed configuration (``[api] auth_strategy``,
        ``[oslo_policy]``).
    :param state: what the handlers use.
    :raises ConfigurationError: the auth strategy cannot be set up.
    """

    def __init__(self, conf: cfg.ConfigOpts, state: ApiState) -> None:
        self.state = state
        self.policy = policy.Policy(conf)
        self.versioned = auth.wrap(conf, Router(state), self.policy)
        self.healthcheck = middleware.HealthcheckApp(
            conf, lambda app: auth.wrap(conf, app, self.policy)
        )
        self.pipeline = middleware.pipeline(conf, self._dispatch)
        self.link_prefix = (conf.api.compute_link_prefix or "").rstrip("/")

    def _unversioned(
        self, handler: Handler, environ: dict[str, Any], start_response: StartResponse
    ) -> Iterable[bytes]:
        req = ApiRequest(environ)
        if req.method not in ("GET", "HEAD"):
            response = faults.error_response(
                405, f"Method {req.method} is not allowed here.", [("Allow", "GET, HEAD")]
            )
        else:
            try:
                response = handler(self.state, req)
            except Exception as exc:
                response = faults.to_response(exc, req.request_id)
        return response(environ, start_response)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        return self.pipeline(environ, start_response)

    def _dispatch(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        # NOTE: set by the RequestId filter; made here only if called without it.
        request_id = environ.setdefault(REQUEST_ID_KEY, f"req-{uuid.uuid4()}")
        if self.link_prefix:
            environ[LINK_PREFIX_KEY] = self.link_prefix
        started = time.monotonic()
        status_seen: list[str] = []

        def _start_response(status: str, headers: list[tuple[str, str]], *args: Any) -> Any:
            status_seen.append(status)
            return start_response(status, headers, *args)

        path = environ.get("PATH_INFO") or "/"
        try:
            problem = _undecodable(environ)
            if problem is not None:
                return faults.error_response(400, problem)(environ, _start_response)
            if path == "/":
                return self._unversioned(versions.root, environ, _start_response)
            if path in (PREFIX, f"{PREFIX}/"):
                return self._unversioned(versions.show, environ, _start_response)
            if path.startswith(f"{PREFIX}/"):
                return self.versioned(environ, _start_response)
            if path == middleware.HEALTHCHECK_PATH:
                return self.healthcheck(environ, _start_response)
            return faults.error_response(404, "The resource could not be found.")(
                environ, _start_response
            )
        finally:
            LOG.info(
                "%s %r status: %s time: %.3f (%s)",
                environ.get("REQUEST_METHOD"),
                path,
                status_seen[0].split(" ", 1)[0] if status_seen else "-",
                time.monotonic() - started,
                request_id,
            )


def _undecodable(environ: dict[str, Any]) -> str | None:
    """Why the path or query cannot be read as UTF-8, if it cannot.

    PEP 3333 hands both over as bytes decoded as latin-1; WebOb decodes them
    as UTF-8 only when a handler reads them, too late to answer cleanly.

    :param environ: the WSGI environ.
    :returns: the message of a 400, or None when both decode.
    """
    try:
        (environ.get("PATH_INFO") or "").encode("latin-1").decode("utf-8")
    except UnicodeError:
        return "The request path is not valid UTF-8."
    query = environ.get("QUERY_STRING") or ""
    try:
        urllib.parse.unquote_to_bytes(query.encode("latin-1")).decode("utf-8")
    except UnicodeError:
        return "The query string is not valid UTF-8."
    return None


def build_app(conf: cfg.ConfigOpts, db: Database, conductor: ConductorAPI) -> ComputeApp:
    """The API application over a database and a conductor client.

    :param conf: a parsed ``ConfigOpts`` with our options registered.
    :param db: the :class:`resize_sched.db.api.Database`.
    :param conductor: the conductor RPC client the API casts with.
    :returns: the WSGI application.
    :raises ConfigurationError: the auth strategy cannot be set up.
    """
    return ComputeApp(conf, ApiState(conf=conf, db=db, conductor=conductor))
