"""Who is calling: the ``[api] auth_strategy`` middlewares.

Both put a :class:`~resize_sched.context.RequestContext` in the WSGI environ
for the handlers:

* ``noauth2`` (tests, the all-in-one): ``X-Auth-Token: USER:PROJECT`` (just
  ``USER`` means the project of the same name); the user ``admin`` is an
  administrator. Nothing is checked: never expose it.
* ``keystone``: keystonemiddleware's ``auth_token`` validates the token
  (options in ``[keystone_authtoken]``) and sets ``X-User-Id``,
  ``X-Project-Id`` and ``X-Roles``; the role ``admin`` makes an
  administrator. keystonemiddleware is imported only for this strategy.
"""

from collections.abc import Callable, Iterable
from typing import Any

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.api import faults
from resize_sched.api.request import CONTEXT_KEY, REQUEST_ID_KEY
from resize_sched.context import RequestContext

LOG = logging.getLogger(__name__)

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

ADMIN_USER = "admin"
ADMIN_ROLE = "admin"


def _unauthorized(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    response = faults.error_response(401, "Authentication required")
    return response(environ, start_response)


class NoAuthMiddleware:
    """``noauth2``: trust ``X-Auth-Token: USER:PROJECT``.

    :param app: the application to call once the caller is known.
    """

    def __init__(self, app: WSGIApp) -> None:
        self.app = app

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        token = environ.get("HTTP_X_AUTH_TOKEN", "").strip()
        if not token:
            return _unauthorized(environ, start_response)
        user, _, project = token.partition(":")
        environ[CONTEXT_KEY] = RequestContext(
            user_id=user,
            project_id=project or user,
            is_admin=user == ADMIN_USER,
            request_id=environ[REQUEST_ID_KEY],
        )
        return self.app(environ, start_response)


class KeystoneContextMiddleware:
    """Turn the headers ``auth_token`` set into a request context.

    :param app: the application to call once the caller is known.
    """

    def __init__(self, app: WSGIApp) -> None:
        self.app = app

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if environ.get("HTTP_X_IDENTITY_STATUS") != "Confirmed":
            return _unauthorized(environ, start_response)
        roles = {r.strip().lower() for r in environ.get("HTTP_X_ROLES", "").split(",")}
        environ[CONTEXT_KEY] = RequestContext(
            user_id=environ.get("HTTP_X_USER_ID"),
            project_id=environ.get("HTTP_X_PROJECT_ID"),
            is_admin=ADMIN_ROLE in roles,
            request_id=environ[REQUEST_ID_KEY],
        )
        return self.app(environ, start_response)


def wrap(conf: cfg.ConfigOpts, app: WSGIApp) -> WSGIApp:
    """Put the configured authentication in front of ``app``.

    :param conf: a parsed ``ConfigOpts`` with ``[api]`` registered.
    :param app: the application needing a caller.
    :returns: the wrapped application.
    :raises ConfigurationError: ``keystone`` without keystonemiddleware.
    """
    strategy = conf.api.auth_strategy
    if strategy == "noauth2":
        LOG.warning(
            "[api] auth_strategy is noauth2: any caller may claim to be anyone, "
            "including admin. Use it only for tests and the all-in-one."
        )
        return NoAuthMiddleware(app)
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
    return auth_token.AuthProtocol(KeystoneContextMiddleware(app), {"oslo_config_config": conf})
