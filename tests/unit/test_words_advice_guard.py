"""Guards for the failure words: the advice follows the verdict, and every
provider UUID is named whatever its case.

A deferred verdict (no room now) and an infeasible one (no host ever) call for
opposite advice; swapping them sends an operator to add hardware for a full
cloud, or to wait for a flavor no host can hold. Placement may quote a UUID in
upper case; it is still a provider of ours and must read as its host.
"""

import pytest

from resize_sched import exception, words

SOURCE_RP = "6f1b1d3e-0c39-4d5a-9a51-1c2f8f0a7b11"
DEFERRED = exception.NoValidHost.DEFERRED
INFEASIBLE = exception.NoValidHost.INFEASIBLE
FLAVOR = {"name": "m1.large"}


def test_an_upper_case_provider_uuid_is_named_as_its_host() -> None:
    text = f"no room on {SOURCE_RP.upper()} today"
    assert words.named(text, {SOURCE_RP: "h1"}) == "no room on host h1 today"


def test_an_upper_case_unknown_uuid_is_hidden_too() -> None:
    text = "consumer 0A9C3B55-71E2-4C1F-B0D4-2B1E6A8C9D22 moved"
    assert words.named(text, {}) == "consumer another provider or consumer moved"


@pytest.mark.parametrize(
    ("kind", "said", "not_said"),
    [
        (INFEASIBLE, "Resize to a flavor some host can hold", "Retry the resize"),
        (DEFERRED, "Retry the resize when room is freed", "Resize to a flavor"),
    ],
)
def test_a_resize_without_a_host_advises_by_its_verdict(kind, said, not_said) -> None:
    text = words.no_host_for_resize(kind, "all hosts are full", FLAVOR, "h1")
    assert said in text
    assert not_said not in text
    assert f"({kind})" in text
    assert "flavor m1.large" in text


def test_a_deferred_reason_that_already_says_retry_is_not_repeated() -> None:
    text = words.no_host_for_resize(DEFERRED, "Retry after the drain", FLAVOR, "h1")
    assert text.endswith("with its old flavor.")


@pytest.mark.parametrize(
    ("kind", "said", "not_said"),
    [
        (INFEASIBLE, "Add a host that can hold its flavor", "Retry the migration"),
        (DEFERRED, "Retry the migration when room is freed", "Add a host"),
    ],
)
def test_a_migration_without_a_host_advises_by_its_verdict(kind, said, not_said) -> None:
    text = words.no_host_for_migration(kind, "all hosts are full", "h1")
    assert said in text
    assert not_said not in text


def test_a_move_speaks_of_a_resize_only_for_a_resize() -> None:
    resize = words.no_host_for_move("resize", DEFERRED, "full", FLAVOR, "h1")
    migration = words.no_host_for_move("migration", DEFERRED, "full", FLAVOR, "h1")
    assert resize == words.no_host_for_resize(DEFERRED, "full", FLAVOR, "h1")
    assert migration == words.no_host_for_migration(DEFERRED, "full", "h1")


@pytest.mark.parametrize(
    ("kind", "said", "not_said"),
    [
        (INFEASIBLE, "with a flavor some host can hold", "when room is freed"),
        (DEFERRED, "create it again when room is freed", "some host can hold"),
    ],
)
def test_a_build_without_a_host_advises_by_its_verdict(kind, said, not_said) -> None:
    exc = exception.NoValidHost(kind=kind, reason="all hosts are full")
    text = words.no_host_for_build(exc, FLAVOR)
    assert said in text
    assert not_said not in text


@pytest.mark.parametrize(
    ("kind", "said", "not_said"),
    [
        (INFEASIBLE, "No host can hold its flavor", "when room is freed"),
        (DEFERRED, "Unshelve it again when room is freed", "No host can hold"),
    ],
)
def test_an_unshelve_without_a_host_advises_by_its_verdict(kind, said, not_said) -> None:
    exc = exception.NoValidHost(kind=kind, reason="all hosts are full")
    text = words.no_host_for_unshelve(exc, FLAVOR)
    assert said in text
    assert not_said not in text
