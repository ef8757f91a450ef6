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
  ``X-Project-Id`` and ``X-Roles``; a missing, invalid or expired token is
  refused with 401 before any of our code runs. keystonemiddleware (the
  ``keystone`` extra) is imported only for this strategy.
"""

from collections.abc import Callable, Iterable
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


#: Who the caller is: user id, project id and roles.
Caller = tuple[str | None, str | None, Iterable[str]]


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
        user_id, project_id, roles = caller
        roles = sorted({r.strip().lower() for r in roles if r.strip()})
        environ[POLICY_KEY] = self.policy
        environ[CONTEXT_KEY] = RequestContext(
            user_id=user_id,
            project_id=project_id,
            is_admin=self.policy.is_admin(user_id, project_id, roles),
            request_id=environ[REQUEST_ID_KEY],
            roles=tuple(roles),
        )
        return self.app(environ, start_response)


class NoAuthMiddleware(_ContextMiddleware):
    """``noauth2``: trust ``X-Auth-Token: USER:PROJECT``."""

    def _caller(self, environ: dict[str, Any]) -> Caller | None:
        token = environ.get("HTTP_X_AUTH_TOKEN", "").strip()
        if not token:
            return None
        user, _, project = token.partition(":")
        roles = NOAUTH_ADMIN_ROLES if user == ADMIN_USER else NOAUTH_USER_ROLES
        return user, project or user, roles


class KeystoneContextMiddleware(_ContextMiddleware):
    """Turn the headers ``auth_token`` set into a request context."""

    def _caller(self, environ: dict[str, Any]) -> Caller | None:
        if environ.get("HTTP_X_IDENTITY_STATUS") != "Confirmed":
            return None
        return (
            environ.get("HTTP_X_USER_ID"),
            environ.get("HTTP_X_PROJECT_ID"),
            environ.get("HTTP_X_ROLES", "").split(","),
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
        from keystonemiddleware import auth_token
    except ImportError as exc:
        raise exception.ConfigurationError(
            reason="[api] auth_strategy = keystone needs keystonemiddleware "
            f"({exc}); install it (pip install keystonemiddleware) or set "
            "[api] auth_strategy = noauth2 for a test deployment"
        ) from exc
    # NOTE: handing our ConfigOpts over makes auth_token register and read its
    # [keystone_authtoken] options there instead of on the global cfg.CONF.
    return auth_token.AuthProtocol(
        KeystoneContextMiddleware(app, policy), {"oslo_config_config": conf}
    )
