"""Property-based fuzzing of every route: no input makes the API answer 5xx.

Hypothesis draws requests over every method and path the application serves
(:data:`resize_sched.api.app.ROUTES`, the version documents and
``/healthcheck``), with ids that exist, random ones and undecodable bytes,
random query strings, microversion headers well- and ill-formed, and JSON
bodies of random shape (also the shapes the handlers expect, filled at
random). For every request: no 5xx, a Compute-style body on a 4xx, and a
refused request neither changes a row of the database nor casts to the
conductor. The number of examples is bounded so the file runs in well under
a minute; it is marked slow and runs in ``tox -e faults``.
"""

import json
import re
import urllib.parse
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resize_sched.api.app import ROUTES
from resize_sched.context import admin_context
from tests.functional.api.harness import ADMIN, ALICE, BOB, SENTINEL, ApiHarness

pytestmark = pytest.mark.slow

#: Examples per test; each is one request (and, when refused, a proof that
#: nothing changed).
EXAMPLES = 100

METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS")
TEMPLATES = sorted({route.template for route in ROUTES})
EXTRA_PATHS = ("/", "/v2.1", "/v2.1/", "/healthcheck", "/v2", "/v2.1/servers/")
QUERY_KEYS = (
    "limit",
    "marker",
    "name",
    "status",
    "flavor",
    "all_tenants",
    "host",
    "project_id",
    "tenant_id",
    "changes-since",
    "changes-before",
    "minRam",
    "minDisk",
    "sort_key",
    "sort_dir",
    "is_public",
    "instance_uuid",
    "migration_type",
    "source_compute",
    "user_id",
)
VERSIONS = ("2.1", "2.47", "2.59", "2.61", "2.80", "latest", "2.81", "3.0", "2.0", "2.")

_FUZZ_FIXTURE = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class World:
    """What exists when fuzzing starts: ids worth drawing."""

    def __init__(self, api: ApiHarness) -> None:
        small = api.flavor("small", extra_specs={"hw:cpu_policy": "shared"})
        large = api.flavor("large", vcpus=4, memory_mb=4096)
        api.flavor("hidden", is_public=False)
        active = api.server(small, name="web-1")
        api.server(small, name="a" * 64 + "!", project_id="project-b", user_id="bob")
        resized = api.server(small, name="db-1")
        migration = api.verify_resize(resized, large)
        self.ids = [
            "small",
            "large",
            "hidden",
            active.uuid,
            resized.uuid,
            migration.uuid,
            "hw:cpu_policy",
            "00000000-0000-0000-0000-000000000000",
        ]


def _drain(api: ApiHarness) -> None:
    """Forget the casts of accepted requests (everything up to a sentinel)."""
    api.conductor.delete_server(admin_context(), SENTINEL)
    while api.next_cast().kwargs.get("server_uuid") != SENTINEL:
        pass


_printable = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30
)
_garbage_escape = st.sampled_from(["%FF", "%C3%28", "%ED%A0%80", "%00", "%2F", "%25", "%E2%82"])


def _segment(ids: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(ids).map(lambda v: urllib.parse.quote(v, safe=":")),
        _printable.map(lambda v: urllib.parse.quote(v, safe="")),
        st.lists(_garbage_escape, min_size=1, max_size=3).map("".join),
    )


@st.composite
def paths(draw: st.DrawFn, ids: list[str]) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(EXTRA_PATHS))
    template = draw(st.sampled_from(TEMPLATES))
    path = re.sub(r"\{\w+\}", lambda _: draw(_segment(ids)), template)
    return "/v2.1" + path


@st.composite
def queries(draw: st.DrawFn, ids: list[str]) -> str:
    pairs = draw(
        st.lists(
            st.tuples(
                st.one_of(st.sampled_from(QUERY_KEYS), _printable),
                st.one_of(
                    st.sampled_from(ids),
                    st.integers(-(10**30), 10**30).map(str),
                    st.sampled_from(["", "0", "1", "true", "none", "(a+)+$", "2026-11-30"]),
                    _printable,
                ),
            ),
            max_size=4,
        )
    )
    query = urllib.parse.urlencode(pairs)
    if draw(st.booleans()) and draw(st.integers(0, 4)) == 0:
        query += "&" + draw(st.sampled_from(QUERY_KEYS)) + "=" + draw(_garbage_escape)
    return f"?{query}" if query else ""


_header_text = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"),
    max_size=40,
)
_version = st.one_of(
    st.sampled_from(VERSIONS),
    st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)).map(lambda t: f"{t[0]}.{t[1]}"),
    st.integers(1, 5000).map(lambda n: "2." + "9" * n),
    _header_text,
)


@st.composite
def headers(draw: st.DrawFn) -> dict[str, str]:
    chosen: dict[str, str] = {}
    if draw(st.booleans()):
        service = draw(st.sampled_from(["compute", "COMPUTE", "volume", ""]))
        chosen["OpenStack-API-Version"] = f"{service} {draw(_version)}".strip()
    if draw(st.booleans()):
        chosen["X-OpenStack-Nova-API-Version"] = draw(_version)
    if draw(st.integers(0, 4)) == 0:
        chosen["Content-Type"] = draw(
            st.sampled_from(["application/json", "text/plain", "application/xml", ""])
        )
    if draw(st.integers(0, 4)) == 0:
        chosen[draw(st.sampled_from(["Accept", "X-Forwarded-Proto", "Origin"]))] = draw(
            _header_text
        )
    return chosen


_json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    _printable,
)
_json = st.recursive(
    _json_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(_printable, inner, max_size=4)
    ),
    max_leaves=12,
)


def _fields(names: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(names), _json, max_size=len(names))


@st.composite
def bodies(draw: st.DrawFn, ids: list[str]) -> bytes | None:
    value: Any
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return None
    if kind == 1:
        return draw(st.binary(max_size=60))
    if kind == 2:
        depth = draw(st.integers(1, 3000))
        return b"[" * depth + b"]" * depth
    if kind == 3:
        value = draw(_json)
    elif kind == 4:
        server = draw(_fields(("name", "flavorRef", "networks", "metadata", "min_count")))
        if draw(st.booleans()):
            server |= {"name": draw(_printable), "flavorRef": draw(st.sampled_from(ids))}
        value = {"server": server}
    elif kind == 5:
        value = {"flavor": draw(_fields(("name", "ram", "vcpus", "disk", "id", "swap")))}
    elif kind == 6:
        value = {"extra_specs": draw(st.dictionaries(_printable, _json_scalar, max_size=3))}
    elif kind == 7:
        action = draw(st.sampled_from(["resize", "confirmResize", "revertResize", "reboot"]))
        argument = draw(st.one_of(_json, st.sampled_from(ids).map(lambda i: {"flavorRef": i})))
        value = {action: argument}
    else:
        value = {draw(st.sampled_from(["server", "flavor", "hw:cpu_policy"])): draw(_json)}
    raw = json.dumps(value).encode()
    if draw(st.integers(0, 5)) == 0:
        # A lone surrogate, escaped as JSON allows.
        raw = raw.replace(b'"', b'"\\ud800', 1)
    return raw


@pytest.fixture
def world(api: ApiHarness) -> World:
    return World(api)


def _check(api: ApiHarness, method: str, path: str, **kw: Any) -> None:
    before = api.snapshot()
    response = api.request(method, path, **kw)
    assert response.status_int < 500, (method, path, kw, response.status, response.body[:300])
    if 400 <= response.status_int < 500:
        if method != "HEAD" and response.content_type == "application/json":
            (fault,) = response.json.values()
            assert fault["code"] == response.status_int
        assert api.snapshot() == before, (method, path, kw, response.status)
        api.assert_no_cast()
    else:
        _drain(api)


@_FUZZ_FIXTURE
@given(data=st.data())
def test_no_request_answers_5xx(api: ApiHarness, world: World, data: st.DataObject) -> None:
    method = data.draw(st.sampled_from(METHODS), label="method")
    path = data.draw(paths(world.ids), label="path") + data.draw(queries(world.ids), label="query")
    token = data.draw(st.sampled_from([ADMIN, ALICE, BOB, None, "", ":"]), label="token")
    raw = data.draw(bodies(world.ids), label="body")
    _check(api, method, path, token=token, raw=raw, headers=data.draw(headers(), label="hdr"))


@_FUZZ_FIXTURE
@given(data=st.data())
def test_no_route_answers_5xx_to_its_own_method(
    api: ApiHarness, world: World, data: st.DataObject
) -> None:
    route = data.draw(st.sampled_from(ROUTES), label="route")
    path = "/v2.1" + re.sub(r"\{\w+\}", lambda _: data.draw(_segment(world.ids)), route.template)
    path += data.draw(queries(world.ids), label="query")
    raw = data.draw(bodies(world.ids), label="body") if route.method in ("POST", "PUT") else None
    version = data.draw(st.sampled_from(VERSIONS[:5]), label="version")
    token = data.draw(st.sampled_from([ADMIN, ALICE, BOB]), label="token")
    _check(
        api,
        route.method,
        path,
        token=token,
        raw=raw,
        headers={"OpenStack-API-Version": f"compute {version}"},
    )
