"""The bounded name filter and the checks on a decoded body."""

import time

import pytest

from resize_sched.api import faults, name_filter, request


def test_the_name_filter_is_a_regular_expression_searched_anywhere() -> None:
    pattern = name_filter.NameFilter("^web-[0-9]+$")
    assert pattern.matches("web-12")
    assert not pattern.matches("my-web-12")
    assert name_filter.NameFilter("eb").matches("web-1")
    assert name_filter.NameFilter("é").matches("café")


def test_the_name_filter_takes_linear_time_on_a_catastrophic_pattern() -> None:
    pattern = name_filter.NameFilter("(a+)+$")
    started = time.monotonic()
    assert not pattern.matches("a" * 10_000 + "!")
    assert time.monotonic() - started < 1


@pytest.mark.parametrize(
    "text",
    ["(", "[z-a]", "(a)\\1", "(?=a)", "(?<=a)b", "a{1001}", "x" * 256],
)
def test_a_pattern_the_engine_will_not_run_is_a_bad_request(text: str) -> None:
    with pytest.raises(faults.BadRequest):
        name_filter.NameFilter(text)


def test_a_body_within_limits_passes() -> None:
    request.check_json_shape({"server": {"name": "web", "metadata": {"a": [1, 2, {"b": None}]}}})
    request.check_json_shape([[[]]], max_depth=3)


def test_a_body_nested_too_deep_is_refused() -> None:
    deep: list = []
    for _ in range(request.MAX_BODY_DEPTH):
        deep = [deep]
    with pytest.raises(faults.BadRequest, match="deeper"):
        request.check_json_shape(deep)


@pytest.mark.parametrize(
    "body", ["\ud800", {"name": "a\udfff"}, {"\ud800": 1}, [1, ["x", "\udc00"]]]
)
def test_a_lone_surrogate_anywhere_is_refused(body: object) -> None:
    with pytest.raises(faults.BadRequest, match="surrogate"):
        request.check_json_shape(body)
