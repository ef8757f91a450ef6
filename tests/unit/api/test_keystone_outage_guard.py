"""Guards for the Keystone outage: detected once, then shared until it ends.

While Keystone does not answer, a token not in the cache is refused (503)
without asking it; once the pause is over exactly one request asks again, and
its answer ends the outage for everyone. A cached token is served all along.
Keystone itself is stood in for by patching keystonemiddleware's
``AuthProtocol.fetch_token`` (the call that would go to Keystone), and the
clock by ``time.monotonic``, so the tests run in milliseconds.
"""

from typing import Any
from unittest import mock

import pytest
import webob.exc
from keystoneauth1 import exceptions as ksa_exceptions
from keystonemiddleware import auth_token
from oslo_config import cfg

from resize_sched.api import keystone

PAUSE = 5.0  # our default http_connect_timeout: the pause between probes


class _Cache:
    """keystonemiddleware's token cache, holding the tokens named."""

    def __init__(self, *tokens: str) -> None:
        self.tokens = set(tokens)

    def get(self, token: str) -> Any:
        return {"token": token} if token in self.tokens else None


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _Keystone:
    """Stands in for the call to Keystone: down until ``up`` is set."""

    def __init__(self) -> None:
        self.up = False
        self.calls: list[str] = []
        self.during: Any = None  # run while a call is in flight

    def __call__(self, _mw: Any, token: str, **_kw: Any) -> Any:
        self.calls.append(token)
        if self.during is not None:
            during, self.during = self.during, None
            during()
        if token.startswith("cached"):
            return {"token": token}
        if not self.up:
            raise ksa_exceptions.ConnectFailure("no route to Keystone")
        if token == "refused":
            raise auth_token.InvalidToken("refused")
        return {"token": token}


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Any:
    conf = cfg.ConfigOpts()
    conf([])
    mw = keystone.wrap(conf, lambda environ, start: None)
    mw._token_cache = _Cache("cached-1")
    clock = _Clock()
    monkeypatch.setattr("time.monotonic", clock)
    fake = _Keystone()
    fetch = mock.patch.object(
        auth_token.AuthProtocol, "fetch_token", autospec=True, side_effect=fake
    )
    with fetch:
        yield mw, fake, clock


def _refused_at_once(mw: Any, keystone_: _Keystone, token: str) -> bool:
    before = len(keystone_.calls)
    try:
        mw.fetch_token(token)
    except webob.exc.HTTPServiceUnavailable:
        return len(keystone_.calls) == before
    return False


def test_after_one_failure_the_next_requests_do_not_ask_keystone(rig) -> None:
    mw, fake, clock = rig
    with pytest.raises(ksa_exceptions.ConnectFailure):
        mw.fetch_token("t1")
    assert fake.calls == ["t1"]
    for token in ("t2", "t3", "t4"):
        assert _refused_at_once(mw, fake, token)
    clock.now += PAUSE - 0.5
    assert _refused_at_once(mw, fake, "t5")
    assert fake.calls == ["t1"]


def test_after_the_pause_one_request_asks_and_the_others_still_wait(rig) -> None:
    mw, fake, clock = rig
    with pytest.raises(ksa_exceptions.ConnectFailure):
        mw.fetch_token("t1")
    clock.now += PAUSE + 0.1
    seen: list[bool] = []
    # While the probe is in flight, another request comes in: it must not ask.
    fake.during = lambda: seen.append(_refused_at_once(mw, fake, "t3"))
    with pytest.raises(ksa_exceptions.ConnectFailure):
        mw.fetch_token("t2")
    assert seen == [True]
    assert fake.calls == ["t1", "t2"]
    # The probe failed: a new pause starts from now.
    assert _refused_at_once(mw, fake, "t4")
    clock.now += PAUSE - 0.5
    assert _refused_at_once(mw, fake, "t5")
    # Once that pause is over, the next request probes again.
    clock.now += 1.0
    with pytest.raises(ksa_exceptions.ConnectFailure):
        mw.fetch_token("t6")
    assert fake.calls == ["t1", "t2", "t6"]


def test_the_probes_answer_ends_the_outage_for_everyone(rig) -> None:
    mw, fake, clock = rig
    with pytest.raises(ksa_exceptions.ConnectFailure):
        mw.fetch_token("t1")
    clock.now += PAUSE + 0.1
    fake.up = True
    assert mw.fetch_token("t2") == {"token": "t2"}
    # Up again: two requests at once both ask, neither waits for the other.
    inner: list[Any] = []
    fake.during = lambda: inner.append(mw.fetch_token("t4"))
    assert mw.fetch_token("t3") == {"token": "t3"}
    assert inner == [{"token": "t4"}]
    assert fake.calls == ["t1", "t2", "t3", "t4"]


def test_a_refused_token_is_an_answer_and_ends_the_outage(rig) -> None:
    mw, fake, clock = rig
    with pytest.raises(ksa_exceptions.ConnectFailure):
        mw.fetch_token("t1")
    clock.now += PAUSE + 0.1
    fake.up = True
    with pytest.raises(auth_token.InvalidToken):
        mw.fetch_token("refused")
    assert mw.fetch_token("t2") == {"token": "t2"}


def test_a_cached_token_is_served_and_leaves_the_probe_to_the_next_request(rig) -> None:
    mw, fake, clock = rig
    with pytest.raises(ksa_exceptions.ConnectFailure):
        mw.fetch_token("t1")
    assert mw.fetch_token("cached-1") == {"token": "cached-1"}
    clock.now += PAUSE + 0.1
    # The cached token takes the probe's turn but needs no call: the turn
    # goes back, and the next uncached token asks Keystone.
    assert mw.fetch_token("cached-1") == {"token": "cached-1"}
    fake.up = True
    assert mw.fetch_token("t2") == {"token": "t2"}
