"""A development stand-in for Keystone: the Identity API v3 subset the CLIs use.

Served by the all-in-one under ``/identity`` so that ``openstack`` and
``nova`` log in with a user name and password, as against a real cloud, and
find the Compute API, Placement and the Image API stand-in in the service
catalog. It is **not** Keystone and never secure: the users, their
passwords and roles are fixed at start (:class:`User`), nothing is stored,
and a token is the ``USER:PROJECT`` string that ``noauth2`` (ours and
Placement's) trusts, so anyone who can reach the other services can forge
one. It checks the configured passwords only to keep a typo from logging in.
Never expose it.

What it serves:

* ``GET /identity`` (300) and ``GET /identity/v3``: the version documents
  keystoneauth's discovery reads.
* ``POST /identity/v3/auth/tokens``: the ``password`` method (user by name
  and domain, or by id), scoped to the user's project (by name or id) or
  unscoped; 201 with the token in ``X-Subject-Token`` and the catalog.
* ``GET``/``HEAD /identity/v3/auth/tokens``: validate ``X-Subject-Token``.
* ``GET /identity/v3/users[/{id}]``, ``/projects[/{id}]``,
  ``/domains[/{id}]``, ``/roles``, ``/auth/projects``, ``/auth/catalog``:
  the lookups openstackclient makes to turn a name into an id.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import webob

from resize_sched.api.request import json_response

StartResponse = Callable[..., Any]

DOMAIN = {"id": "default", "name": "Default"}
REGION = "RegionOne"
API_VERSION = "v3.14"
TOKEN_LIFETIME = datetime.timedelta(hours=12)


@dataclass(frozen=True)
class User:
    """A user of the stand-in; its id and its project's id are the names.

    :ivar name: the user name (and id).
    :ivar password: what ``POST /v3/auth/tokens`` must be sent.
    :ivar project: the one project it is a member of (name and id).
    :ivar roles: the roles its tokens carry.
    """

    name: str
    password: str
    project: str
    roles: tuple[str, ...] = ("member", "reader")


@dataclass(frozen=True)
class Endpoint:
    """One service in the catalog, with one URL for every interface.

    :ivar service_type: ``compute``, ``placement``, ``image``, ``identity``.
    :ivar name: the service's name (``nova``, ``placement``...).
    :ivar url: the endpoint URL; relative (``/image``) means on this server.
    """

    service_type: str
    name: str
    url: str


class IdentityError(Exception):
    """An error answer in Keystone's shape."""

    titles = {400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Not Allowed"}

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def response(self) -> webob.Response:
        body = {
            "error": {
                "code": self.status,
                "title": self.titles.get(self.status, "Error"),
                "message": self.message,
            }
        }
        return json_response(body, self.status)


def _isotime(value: datetime.datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def _stable_id(*parts: str) -> str:
    return hashlib.sha1("/".join(parts).encode()).hexdigest()


@dataclass
class IdentityApp:
    """The stand-in as a WSGI application mounted at its prefix.

    :param users: who may log in.
    :param catalog: the services tokens list.
    """

    users: Sequence[User]
    catalog: Sequence[Endpoint] = ()
    _by_name: dict[str, User] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name = {u.name: u for u in self.users}

    # -- WSGI --------------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        req = webob.Request(environ)
        path = req.path_info.rstrip("/")
        try:
            response = self._route(req, path)
        except IdentityError as exc:
            response = exc.response()
        if req.method == "HEAD":
            response.body = b""
        return response(environ, start_response)

    def _route(self, req: webob.Request, path: str) -> webob.Response:
        method = "GET" if req.method == "HEAD" else req.method
        if path == "":
            return json_response({"versions": {"values": [self._version(req)]}}, 300)
        if path == "/v3":
            return json_response({"version": self._version(req)})
        if path == "/v3/auth/tokens":
            if method == "POST":
                return self._issue(req)
            if method == "GET":
                return self._validate(req)
            if method == "DELETE":
                self._caller(req, req.headers.get("X-Subject-Token", ""))
                return webob.Response(status=204)
            raise IdentityError(405, f"{req.method} is not allowed on {req.path}")
        if method != "GET":
            raise IdentityError(405, f"{req.method} is not allowed on {req.path}")
        user = self._caller(req, req.headers.get("X-Auth-Token", ""))
        return self._read(req, path, user)

    # -- documents ---------------------------------------------------------------

    def _version(self, req: webob.Request) -> dict[str, Any]:
        return {
            "id": API_VERSION,
            "status": "stable",
            "updated": "2020-04-07T00:00:00Z",
            "links": [{"rel": "self", "href": f"{req.application_url}/v3/"}],
            "media-types": [
                {"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}
            ],
        }

    def _catalog(self, req: webob.Request) -> list[dict[str, Any]]:
        host = req.host_url
        services = []
        for entry in self.catalog:
            url = entry.url if "://" in entry.url else host + entry.url
            service_id = _stable_id("service", entry.service_type)
            services.append(
                {
                    "id": service_id,
                    "type": entry.service_type,
                    "name": entry.name,
                    "endpoints": [
                        {
                            "id": _stable_id(service_id, interface),
                            "interface": interface,
                            "region": REGION,
                            "region_id": REGION,
                            "url": url,
                        }
                        for interface in ("public", "internal", "admin")
                    ],
                }
            )
        return services

    def _user_ref(self, req: webob.Request, user: User) -> dict[str, Any]:
        return {
            "id": user.name,
            "name": user.name,
            "domain_id": DOMAIN["id"],
            "default_project_id": user.project,
            "enabled": True,
            "password_expires_at": None,
            "options": {},
            "links": {"self": f"{req.application_url}/v3/users/{user.name}"},
        }

    def _project_ref(self, req: webob.Request, project: str) -> dict[str, Any]:
        return {
            "id": project,
            "name": project,
            "domain_id": DOMAIN["id"],
            "parent_id": DOMAIN["id"],
            "is_domain": False,
            "enabled": True,
            "description": "",
            "tags": [],
            "options": {},
            "links": {"self": f"{req.application_url}/v3/projects/{project}"},
        }

    def _token(self, req: webob.Request, user: User, scoped: bool) -> dict[str, Any]:
        now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        token: dict[str, Any] = {
            "methods": ["password"],
            "user": {
                "id": user.name,
                "name": user.name,
                "domain": dict(DOMAIN),
                "password_expires_at": None,
            },
            "audit_ids": [_stable_id("audit", user.name, now.isoformat())[:22]],
            "issued_at": _isotime(now),
            "expires_at": _isotime(now + TOKEN_LIFETIME),
        }
        if scoped:
            token.update(
                {
                    "project": {"id": user.project, "name": user.project, "domain": dict(DOMAIN)},
                    "is_domain": False,
                    "roles": [{"id": _stable_id("role", r), "name": r} for r in user.roles],
                    "catalog": self._catalog(req),
                }
            )
        return {"token": token}

    # -- tokens --------------------------------------------------------------------

    def token_id(self, user: User, scoped: bool = True) -> str:
        """The token a user gets: what ``noauth2`` reads as user and project.

        :param user: the user.
        :param scoped: project-scoped (``USER:PROJECT``) or not (``USER``).
        :returns: the token id.
        """
        return f"{user.name}:{user.project}" if scoped else user.name

    def _caller(self, req: webob.Request, token: str) -> User:
        """The user a token names, or 401 (or 404 for a subject token)."""
        name, _, project = token.strip().partition(":")
        user = self._by_name.get(name)
        if user is None or project not in ("", user.project):
            raise IdentityError(401, "The request you have made requires authentication.")
        return user

    def _issue(self, req: webob.Request) -> webob.Response:
        try:
            body = json.loads(req.body or b"null")
            identity = body["auth"]["identity"]
            methods = identity["methods"]
        except (ValueError, KeyError, TypeError):
            raise IdentityError(400, "Expecting auth.identity.methods in the body") from None
        if methods != ["password"]:
            raise IdentityError(401, "Only the password method is served by this stand-in.")
        try:
            sent = identity["password"]["user"]
            name = sent.get("name") or sent.get("id")
            password = sent["password"]
        except (KeyError, TypeError, AttributeError):
            raise IdentityError(400, "Expecting a user name or id and a password") from None
        user = self._by_name.get(str(name))
        if user is None or not hmac.compare_digest(str(password).encode(), user.password.encode()):
            raise IdentityError(401, "The request you have made requires authentication.")
        scope = body["auth"].get("scope") or {}
        scoped = False
        if isinstance(scope, dict) and "project" in scope:
            project = scope["project"] or {}
            wanted = project.get("id") or project.get("name")
            if wanted != user.project:
                raise IdentityError(401, f"User {user.name} has no access to project {wanted}")
            scoped = True
        elif scope:
            raise IdentityError(401, "Only project scope is served by this stand-in.")
        response = json_response(self._token(req, user, scoped), 201)
        response.headers["X-Subject-Token"] = self.token_id(user, scoped)
        return response

    def _validate(self, req: webob.Request) -> webob.Response:
        self._caller(req, req.headers.get("X-Auth-Token", ""))
        subject = req.headers.get("X-Subject-Token", "")
        try:
            user = self._caller(req, subject)
        except IdentityError:
            raise IdentityError(404, "Could not find token.") from None
        response = json_response(self._token(req, user, ":" in subject))
        response.headers["X-Subject-Token"] = subject
        return response

    # -- reads ---------------------------------------------------------------------

    def _read(self, req: webob.Request, path: str, caller: User) -> webob.Response:
        admin = "admin" in caller.roles
        visible = [u for u in self.users if admin or u is caller]
        parts = path.split("/")[2:]  # after "", "v3"
        if parts == ["auth", "catalog"]:
            return json_response({"catalog": self._catalog(req), "links": {}})
        if parts == ["auth", "projects"]:
            return json_response(
                {"projects": [self._project_ref(req, caller.project)], "links": {}}
            )
        if parts[:1] == ["users"]:
            users = visible
            if "name" in req.GET:
                users = [u for u in users if u.name == req.GET["name"]]
            refs = [self._user_ref(req, u) for u in users]
            return self._one_or_all(req, parts, "user", "users", refs)
        if parts[:1] == ["projects"]:
            projects = sorted({u.project for u in visible})
            if "name" in req.GET:
                projects = [p for p in projects if p == req.GET["name"]]
            refs = [self._project_ref(req, p) for p in projects]
            return self._one_or_all(req, parts, "project", "projects", refs)
        if parts[:1] == ["domains"]:
            domain = dict(DOMAIN, enabled=True, description="", tags=[], options={})
            refs = [domain] if req.GET.get("name", DOMAIN["name"]) == DOMAIN["name"] else []
            return self._one_or_all(req, parts, "domain", "domains", refs)
        if parts == ["roles"]:
            names = sorted({r for u in self.users for r in u.roles})
            refs = [{"id": _stable_id("role", r), "name": r, "domain_id": None} for r in names]
            return json_response({"roles": refs, "links": {}})
        raise IdentityError(404, f"{req.path} is not served by this Keystone stand-in.")

    @staticmethod
    def _one_or_all(
        req: webob.Request, parts: list[str], one: str, many: str, refs: list[dict[str, Any]]
    ) -> webob.Response:
        if len(parts) == 1:
            return json_response(
                {many: refs, "links": {"self": req.url, "next": None, "previous": None}}
            )
        if len(parts) == 2:
            for ref in refs:
                if parts[1] == ref["id"]:
                    return json_response({one: ref})
            raise IdentityError(404, f"Could not find {one}: {parts[1]}.")
        raise IdentityError(404, f"{req.path} is not served by this Keystone stand-in.")
