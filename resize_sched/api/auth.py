"""Who is calling: the ``[api] auth_strategy`` middlewares.

Both put a :class:`~resize_sched.context.RequestContext` (user, project,
roles) in the WSGI environ for the handlers, with the application's
:class:`~resize_sched.api.policy.Policy` beside it; whether the caller is an
administrator is the policy rule ``context_is_admin`` (by default, the role
``admin``):

* ``noauth2`` (tests, the all-in-one): ``X-Auth-Token: USER:PROJECT`` (just
  ``USER`` means the project of the same name). The user ``admin`` holds the
  roles ``admin``, ``member`` and ``reader``; anyone else ``member`` and
  ``reader`` (the roles Keystone would put in their tokens). Nothing is
  checked: never expose it.
* ``keystone``: keystonemiddleware's ``auth_token`` validates the token
  (options in ``[keystone_authtoken]``) and sets ``X-User-Id``,
  ``X-Project-Id`` and ``X-Roles``, or, for a token scoped to a domain or to
  the system, ``X-Domain-Id`` or ``OpenStack-System-Scope`` instead of a
  project (it strips those headers from what the client sent first); a
  missing, invalid or expired token is refused with 401 before any of our
  code runs; a Keystone that is down or too slow, with a JSON 503
  (:mod:`resize_sched.api.keystone`, which also bounds the wait).
  keystonemiddleware (the ``keystone`` extra) is imported only for this
  strategy, and development tokens (``admin:admin``) mean nothing there.

Every resource of the Compute API belongs to a project, as in Nova, whose
rules are all project-scoped: a caller whose token names no project (scoped
to a domain or to the system, or unscoped) is refused with 403 here, before
any route, rule or lookup, so it is never given a listing and cannot tell a
server that exists from one that does not. The policy
(:meth:`Policy.check <resize_sched.api.policy.Policy.check>`) and the
database's server queries refuse such a caller too, on their own.
"""

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.api import faults
from resize_sched.api.policy import POLICY_KEY, Policy
from resize_sched.api.request import CONTEXT_KEY, REQUEST_ID_KEY
from resize_sched.context import RequestContext

LOG = logging.getLogger(__name__)

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

ADMIN_USER = "admin"
#: The roles noauth2 gives its callers.
NOAUTH_ADMIN_ROLES = ("admin", "member", "reader")
NOAUTH_USER_ROLES = ("member", "reader")


#: The answer to a token that names no project.
NO_PROJECT_MESSAGE = (
    "This API takes project-scoped tokens only: the token is scoped to {scope}, "
    "not to a project. Ask Keystone for a token scoped to a project."
)


@dataclass(frozen=True)
class Caller:
    """Who the caller is, as the authentication found out.

    :ivar user_id: the user.
    :ivar project_id: the project the token is scoped to, if any.
    :ivar roles: the token's roles.
    :ivar domain_id: the domain of a domain-scoped token.
    :ivar system_scope: ``all`` for a system-scoped token.
    """

    user_id: str | None
    project_id: str | None
    roles: Iterable[str]
    domain_id: str | None = None
    system_scope: str | None = None

    def scope(self) -> str:
        """What the token is scoped to, in words (for the 403 and the log)."""
        if self.system_scope:
            return f"the system ({self.system_scope})"
        if self.domain_id:
            return f"the domain {self.domain_id}"
        if self.project_id:
            return f"the project {self.project_id}"
        return "nothing (an unscoped token)"


class _ContextMiddleware:
    """Put the caller's context in the environ, or answer 401 without one.

    :param app: the application to call once the caller is known.
    :param policy: the application's policy.
    """

    def __init__(self, app: WSGIApp, policy: Policy) -> None:
        self.app = app
        self.policy = policy

    def _caller(self, environ: dict[str, Any]) -> Caller | None:
        raise NotImplementedError

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        caller = self._caller(environ)
        if caller is None:
            response = faults.error_response(401, "Authentication required")
            return response(environ, start_response)
        request_id = environ[REQUEST_ID_KEY]
        if not caller.project_id:
            LOG.info(
                "Request %s refused (403): user %s has a token scoped to %s",
                request_id,
                caller.user_id,
                caller.scope(),
            )
            response = faults.error_response(403, NO_PROJECT_MESSAGE.format(scope=caller.scope()))
            return response(environ, start_response)
        roles = sorted({r.strip().lower() for r in caller.roles if r.strip()})
        ctxt = RequestContext(
            user_id=caller.user_id,
            project_id=caller.project_id,
            request_id=request_id,
            roles=tuple(roles),
            domain_id=caller.domain_id,
            system_scope=caller.system_scope,
        )
        try:
            is_admin = self.policy.is_admin(ctxt)
        except Exception as exc:
            # NOTE: a policy file that does not parse fails here, outside the
            # router: answer with our 500 body and request id, not the WSGI
            # server's plain text.
            return faults.to_response(exc, request_id)(environ, start_response)
        environ[POLICY_KEY] = self.policy
        environ[CONTEXT_KEY] = dataclasses.replace(ctxt, is_admin=is_admin)
        return self.app(environ, start_response)


class NoAuthMiddleware(_ContextMiddleware):
    """``noauth2``: trust ``X-Auth-Token: USER:PROJECT``."""

    def _caller(self, environ: dict[str, Any]) -> Caller | None:
        token = environ.get("HTTP_X_AUTH_TOKEN", "").strip()
        if not token:
            return None
        user, _, project = token.partition(":")
        roles = NOAUTH_ADMIN_ROLES if user == ADMIN_USER else NOAUTH_USER_ROLES
        return Caller(user, project or user, roles)


class KeystoneContextMiddleware(_ContextMiddleware):
    """Turn the headers ``auth_token`` set into a request context."""

    def _caller(self, environ: dict[str, Any]) -> Caller | None:
        if environ.get("HTTP_X_IDENTITY_STATUS") != "Confirmed":
            return None
        return Caller(
            user_id=environ.get("HTTP_X_USER_ID") or None,
            project_id=environ.get("HTTP_X_PROJECT_ID") or None,
            roles=environ.get("HTTP_X_ROLES", "").split(","),
            domain_id=environ.get("HTTP_X_DOMAIN_ID") or None,
            system_scope=environ.get("HTTP_OPENSTACK_SYSTEM_SCOPE") or None,
        )


def wrap(conf: cfg.ConfigOpts, app: WSGIApp, policy: Policy) -> WSGIApp:
    """Put the configured authentication in front of ``app``.

    :param conf: a parsed ``ConfigOpts`` with ``[api]`` registered.
    :param app: the application needing a caller.
    :param policy: the application's policy (it decides who is an admin).
    :returns: the wrapped application.
    :raises ConfigurationError: ``keystone`` without keystonemiddleware.
    """
    strategy = conf.api.auth_strategy
    if strategy == "noauth2":
        LOG.warning(
            "[api] auth_strategy is noauth2: any caller may claim to be anyone, "
            "including admin. Use it only for tests and the all-in-one."
        )
        return NoAuthMiddleware(app, policy)
    try:
        import keystonemiddleware.auth_token  # noqa: F401
    except ImportError as exc:
        raise exception.ConfigurationError(
            reason="[api] auth_strategy = keystone needs keystonemiddleware "
            f"({exc}); install it (pip install keystonemiddleware) or set "
            "[api] auth_strategy = noauth2 for a test deployment"
        ) from exc
    from resize_sched.api import keystone

    return keystone.wrap(conf, KeystoneContextMiddleware(app, policy))
