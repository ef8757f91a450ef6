"""keystonemiddleware's ``auth_token`` as the API runs it: bounded waits, and a JSON 503.

Imported only for ``[api] auth_strategy = keystone`` (keystonemiddleware is
the ``keystone`` extra).

Every request whose token is not in the token cache asks Keystone, in the
worker thread that serves it. keystonemiddleware's own default waits for
Keystone without a time limit, so a Keystone that accepts connections and
never answers lets anyone holding made-up tokens take every worker thread
for good. :data:`DEFAULTS` bounds that wait: each call to Keystone gives up
after ``http_connect_timeout`` seconds (a token validation that cannot
connect is tried again ``http_request_max_retries`` times). Against a
Keystone that accepts and never answers, measured with these defaults: the
first request waits 10 s (version discovery, then the service user's log-in),
each later one 5 s, then gets the 503; with the service user's token already
held, a validation is tried twice, about 10 s.

While Keystone does not answer, tokens not in the cache are refused at once
and one request at a time asks again (:class:`_Unreachable`), so a hanging
Keystone holds one worker thread, not all of them.

When Keystone cannot be reached, or does not answer in time, the caller
gets a Compute-style JSON 503 with the request id (keystonemiddleware's
own answers are a plain-text 503 for the first and, for a timeout, an
exception that reached the WSGI server as a bare 500).
"""

import threading
import time
from typing import Any

import webob
import webob.exc
from keystoneauth1 import exceptions as ksa_exceptions
from keystonemiddleware import auth_token
from oslo_config import cfg
from oslo_log import log as logging

from resize_sched.api import faults
from resize_sched.api.request import REQUEST_ID_KEY

LOG = logging.getLogger(__name__)

GROUP = "keystone_authtoken"

#: Our defaults for keystonemiddleware's options (its own: no timeout, 3 retries).
DEFAULTS = {
    "http_connect_timeout": 5,
    "http_request_max_retries": 1,
}

#: What keystoneauth raises when Keystone is unreachable or too slow, and
#: keystonemiddleware does not turn into an answer itself.
UNAVAILABLE = (
    ksa_exceptions.ConnectionError,  # ConnectFailure, ConnectTimeout, SSLError...
    ksa_exceptions.RequestTimeout,
    ksa_exceptions.DiscoveryFailure,
    auth_token.ServiceError,
)

MESSAGE = (
    "The identity service (Keystone) did not answer, so the token could not be "
    "validated. Try again later; the resize-sched-api log has the details under "
    "request {request_id}."
)


def _opts() -> list[cfg.Opt]:
    return [opt for _group, opts in auth_token.list_opts() for opt in opts]


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register ``[keystone_authtoken]`` on ``conf`` with :data:`DEFAULTS`.

    Set on ``conf`` only; safe to call more than once, and after parsing.
    """
    conf.register_opts(_opts(), group=GROUP)
    for name, value in DEFAULTS.items():
        conf.set_default(name, value, group=GROUP)


def set_defaults() -> None:
    """Show :data:`DEFAULTS` in the sample config (oslo-config-generator's hook).

    NOTE: this changes keystonemiddleware's option objects for the whole
    process; only the generator calls it, never a service.
    """
    cfg.set_defaults(auth_token._opts._OPTS, **DEFAULTS)


class _Unreachable:
    """Whether Keystone is known not to answer, and whose turn it is to ask again.

    After a call to Keystone failed (unreachable, or no answer in time), a
    token that is not in the cache is refused at once instead of being sent
    to Keystone; once ``pause`` seconds have passed, one request at a time
    asks Keystone again, and the first answer ends the outage. So a hanging
    Keystone holds at most one worker thread at a time, not every one.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._down = False
        self._retry_at = 0.0
        self._probing = False

    def turn(self) -> str:
        """``ask`` (Keystone is up), ``probe`` (down, and this request asks
        again) or ``wait`` (down: do not ask)."""
        with self._lock:
            if not self._down:
                return "ask"
            if self._probing or time.monotonic() < self._retry_at:
                return "wait"
            self._probing = True
            return "probe"

    def release(self, turn: str) -> None:
        """A request given ``turn`` did not ask Keystone after all (its token was cached)."""
        if turn == "probe":
            with self._lock:
                self._probing = False

    def answered(self) -> None:
        with self._lock:
            if self._down:
                LOG.info("Keystone answers again")
            self._down = self._probing = False

    def failed(self, pause: float) -> None:
        with self._lock:
            if not self._down:
                LOG.warning(
                    "Keystone does not answer: tokens not in the cache are refused (503) "
                    "without asking it; asking again every %s s, one request at a time",
                    pause,
                )
            self._down = True
            self._probing = False
            self._retry_at = time.monotonic() + pause


class AuthToken(auth_token.AuthProtocol):
    """``auth_token``, answering an unreachable or slow Keystone with our JSON 503,
    and not asking it again for every request while it does not answer."""

    def __init__(self, app: Any, conf: dict[str, Any]) -> None:
        super().__init__(app, conf)
        self._keystone = _Unreachable()

    def fetch_token(self, token: str, **kwargs: Any) -> Any:
        turn = self._keystone.turn()
        if turn != "ask" and self._cached(token):
            self._keystone.release(turn)
            return super().fetch_token(token, **kwargs)
        if turn == "wait":
            raise webob.exc.HTTPServiceUnavailable()
        try:
            data = super().fetch_token(token, **kwargs)
        except (webob.exc.HTTPServiceUnavailable, *UNAVAILABLE):
            self._keystone.failed(float(self._conf.get("http_connect_timeout") or 5))
            raise
        except BaseException:
            # NOTE: Keystone answered (it refused the token, say), or a bug.
            self._keystone.answered()
            raise
        self._keystone.answered()
        return data

    def _cached(self, token: str) -> bool:
        """Whether ``token`` is in the token cache (valid or refused), so no call is needed."""
        try:
            return self._token_cache.get(token) is not None
        except auth_token.InvalidToken:
            return True

    def process_request(self, request: webob.Request) -> Any:
        try:
            return super().process_request(request)
        except webob.exc.HTTPServiceUnavailable:
            # NOTE: keystonemiddleware logged why (unreachable) already.
            return self._unavailable(request)
        except UNAVAILABLE as exc:
            LOG.error(
                "Keystone did not answer within [%s] http_connect_timeout (%s s): %s",
                GROUP,
                self._conf.get("http_connect_timeout"),
                exc,
            )
            return self._unavailable(request)

    def _unavailable(self, request: webob.Request) -> webob.Response:
        request_id = request.environ.get(REQUEST_ID_KEY, "-")
        LOG.warning("Request %s refused (503): Keystone unavailable", request_id)
        return faults.error_response(503, MESSAGE.format(request_id=request_id))


def wrap(conf: cfg.ConfigOpts, app: Any) -> AuthToken:
    """Put ``auth_token``, configured in ``conf``'s ``[keystone_authtoken]``, before ``app``."""
    register_opts(conf)
    # NOTE: handing our ConfigOpts over makes auth_token register and read its
    # options there instead of on the global cfg.CONF.
    return AuthToken(app, {"oslo_config_config": conf})
