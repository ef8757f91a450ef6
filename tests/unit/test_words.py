"""resize_sched.words: the messages an operator reads, from what a step knows.

The table below holds at least one case per public function of
:mod:`resize_sched.words` (a test fails when one is missing): each case
calls it with distinct host names, provider UUIDs and consumer UUIDs, and
names what must appear in the message (the host the step concerns, the
server or migration Placement's words name) and what must not (the other
host, a provider's UUID, a mangled request).
"""

import inspect
from collections.abc import Callable
from typing import NamedTuple

import pytest

from resize_sched import exception, words

SRC = "src-host-a"
DST = "dst-host-9"
SRC_RP = "6f1b1d3e-0c39-4d5a-9a51-1c2f8f0a7b11"
DST_RP = "0a9c3b55-71e2-4c1f-b0d4-2b1e6a8c9d22"
SERVER = "aaaaaaaa-1111-4222-8333-444444444444"
MIGRATION = "bbbbbbbb-5555-4666-8777-888888888888"
GROUP = "cccccccc-9999-4aaa-8bbb-cccccccccccc"
OTHER = "11111111-2222-3333-4444-555555555555"
HOSTS = {SRC_RP: SRC, DST_RP: DST}
CONSUMERS = {SERVER: "server", MIGRATION: "migration"}
FLAVOR = {"name": "m1.large"}
#: Never in a message: a provider's UUID, or a request mangled on its way.
NEVER = (SRC_RP, DST_RP, "http://", "%3A", "%2C", "{'", "b'", "/another provider")
#: What a transient failure says retries it, and what a permanent one says.
SWEEP = "[conductor] stuck_after seconds"
ENDED = "nothing retries it"


class Group:
    policy = "anti-affinity"
    uuid = GROUP


def _unknown_class() -> exception.PlacementBadRequest:
    return exception.PlacementBadRequest(
        method="GET",
        url="/allocation_candidates?resources=CUSTOM_NOPE:1,VCPU:2&limit=1000",
        status=400,
        placement_code="placement.undefined_code",
        detail="Invalid resource class in resources parameter: No such resource class "
        "CUSTOM_NOPE.",
    )


def _constraint(rp: str) -> exception.ClaimRefused:
    return exception.ClaimRefused(
        method="POST",
        url="/allocations",
        status=409,
        placement_code="placement.undefined_code",
        detail="Unable to allocate inventory: Unable to create allocation for 'VCPU' on "
        f"resource provider '{rp}'. The requested amount would violate inventory constraints.",
    )


def _unanswered() -> exception.PlacementUnavailable:
    return exception.PlacementUnavailable(
        method="PUT", url=f"/allocations/{SERVER}", reason="Connection refused"
    )


def _conflicting() -> exception.ConsumerGenerationConflict:
    return exception.ConsumerGenerationConflict(
        method="POST",
        url="/allocations",
        status=409,
        placement_code="placement.concurrent_update",
        detail=f"consumer generation conflict for {SERVER} and {MIGRATION}",
    )


def _out_of_rereads() -> exception.PlacementConflict:
    # As the executor raises it once its re-reads are used up.
    return exception.PlacementConflict(
        method="POST",
        url="/allocations",
        placement_code="placement.concurrent_update",
        detail="still conflicting after 3 re-reads",
    )


class Case(NamedTuple):
    function: str
    call: Callable[[], str]
    present: tuple[str, ...]
    absent: tuple[str, ...] = ()

    def id(self) -> str:
        return f"{self.function}-{self.present[0][:24]}"


def _compute(op: str, host: str, source: str | None) -> Callable[[], str]:
    return lambda: words.compute_failed(op, host, f"Disk full on {host}. [x.y]", source=source)


CASES = [
    Case("reason_of", lambda: words.reason_of(f"Disk full on {DST}. [a.b_c]"), (DST,), ("[a",)),
    Case(
        "named",
        lambda: words.named(
            f"on resource provider '{DST_RP}' for {SERVER} by {MIGRATION}, not {OTHER} "
            f"(PUT /allocations/{SERVER}?limit=1)",
            HOSTS,
            CONSUMERS,
        ),
        (
            f"on host {DST} for the server {SERVER} by the migration {MIGRATION}",
            "not another provider or consumer",
            f"PUT /allocations/{SERVER}?limit=1)",
        ),
        (f"host {SRC}", "resource provider", OTHER),
    ),
    Case("compute_failed", _compute("spawn", DST, None), (f"host {DST}",), (SRC,)),
    Case("compute_failed", _compute("prep_resize", DST, SRC), (f"host {DST}", f"host {SRC}")),
    Case("compute_failed", _compute("resize", SRC, SRC), (f"off host {SRC}",), (DST,)),
    Case(
        "compute_failed", _compute("finish_resize", DST, SRC), (f"on host {DST}", f"on host {SRC}")
    ),
    Case("compute_failed", _compute("confirm", SRC, SRC), (f"copy on host {SRC}",), (DST,)),
    Case(
        "compute_failed",
        _compute("revert", DST, SRC),
        (f"stopping the server on host {DST}", f"old flavor on host {SRC} again"),
    ),
    Case("compute_failed", _compute("finish_revert", SRC, SRC), (f"again on host {SRC}",), (DST,)),
    Case(
        "compute_failed",
        _compute("pre_live_migration", DST, SRC),
        (f"on host {DST}", f"runs on host {SRC}"),
    ),
    Case("compute_failed", _compute("live_migration", SRC, SRC), (f"from host {SRC}",), (DST,)),
    Case(
        "compute_failed",
        _compute("live_migration_abort", DST, SRC),
        (f"aborted on host {DST}", f"runs on host {SRC}"),
    ),
    Case("compute_failed", _compute("rebuild", DST, SRC), (f"on host {DST}", f"on host {SRC}")),
    Case("compute_failed", _compute("post_live_migration", SRC, DST), (f"host {SRC}",), (DST,)),
    Case("compute_failed", _compute("other", DST, SRC), (f"on host {DST}",), (SRC,)),
    Case("filtered_out", lambda: words.filtered_out([("ComputeFilter", 2)]), ("ComputeFilter",)),
    Case(
        "no_host_for_resize",
        lambda: words.no_host_for_resize("deferred", "all full", FLAVOR, SRC),
        (f"stays on host {SRC}", "flavor m1.large"),
        (DST,),
    ),
    Case(
        "no_host_for_move",
        lambda: words.no_host_for_move("migration", "infeasible", "all full", None, SRC),
        (f"stays on host {SRC}", "No other host"),
        (DST,),
    ),
    Case(
        "no_host_for_migration",
        lambda: words.no_host_for_migration("deferred", "all full", SRC),
        (f"stays on host {SRC}",),
        (DST,),
    ),
    Case(
        "decision_unanswered",
        lambda: words.decision_unanswered("confirm", DST),
        (f"host {DST}",),
        (SRC,),
    ),
    Case(
        "no_host_for_build",
        lambda: words.no_host_for_build(
            exception.NoValidHost(kind="deferred", reason="all full"), FLAVOR, Group()
        ),
        (f"server group {GROUP}", "flavor m1.large"),
        (SRC, DST),
    ),
    Case(
        "decision_refused",
        lambda: words.decision_refused("confirm", DST, _constraint(DST_RP), HOSTS),
        (f"on host {DST}", "would violate inventory constraints"),
        (SRC,),
    ),
    # An other-host resize's revert concerns its source host, never the destination.
    Case(
        "decision_refused",
        lambda: words.decision_refused("revert", SRC, _constraint(SRC_RP), HOSTS),
        (f"host {SRC}'s inventory no longer admits the old flavor", "on host " + SRC),
        (DST,),
    ),
    Case(
        "held_by_resize",
        lambda: words.held_by_resize({DST_RP: {"VCPU": 2}}, {SRC_RP: {"VCPU": 4}}, HOSTS),
        (f"the server VCPU 2 on host {DST}", f"the migration VCPU 4 on host {SRC}"),
    ),
    Case(
        "placement_refusal",
        lambda: words.placement_refusal(_constraint(SRC_RP)),
        ("constraints",),
        (SRC, DST),
    ),
    Case(
        "restore_refused",
        lambda: words.restore_refused(SRC, "no host"),
        (f"back on host {SRC}", SWEEP, "placement heal"),
        (DST,),
    ),
    Case(
        "step_failed",
        lambda: words.step_failed("schedule", _unknown_class(), SRC, HOSTS, CONSUMERS),
        (
            f"server on host {SRC}: Invalid resource class",
            "No such resource class CUSTOM_NOPE (GET /allocation_candidates?resources=",
            ENDED,
            f"stays on host {SRC} with its old flavor",
        ),
        (DST, SWEEP, "Check that Placement is up"),
    ),
    # Another move's step says that move, never a resize or a flavor.
    Case(
        "step_failed",
        lambda: words.step_failed(
            "schedule", _unknown_class(), SRC, HOSTS, CONSUMERS, move="live-migration"
        ),
        (
            "while choosing a host for the live migration of the server on host",
            f"{ENDED}: the live migration ended and the server stays on host {SRC} as it was",
        ),
        (DST, SWEEP, "resize", "flavor m"),
    ),
    Case(
        "step_failed",
        lambda: words.step_failed("reschedule", _constraint(DST_RP), SRC, HOSTS, CONSUMERS),
        (f"on host {DST}. The requested amount", ENDED, f"stays on host {SRC}"),
        (SWEEP,),
    ),
    Case(
        "step_failed",
        lambda: words.step_failed("schedule", _unanswered(), SRC, HOSTS, CONSUMERS),
        ("Placement did not answer", f"(PUT /allocations/{SERVER})", SWEEP, f"host {SRC}"),
        (DST, ENDED),
    ),
    Case(
        "step_failed",
        lambda: words.step_failed("confirm", _conflicting(), SRC, HOSTS, CONSUMERS),
        (f"the server {SERVER} and the migration {MIGRATION}", SWEEP),
        (ENDED, "another provider or consumer"),
    ),
    Case(
        "step_failed",
        lambda: words.step_failed("revert", _out_of_rereads(), SRC, HOSTS, CONSUMERS),
        ("Another writer", "still conflicting after 3 re-reads (POST /allocations)", SWEEP),
        (ENDED,),
    ),
    Case(
        "unshelve_placement_failed",
        lambda: words.unshelve_placement_failed(_unknown_class()),
        ("refused by Placement", "CUSTOM_NOPE", "Nothing retries it", "SHELVED_OFFLOADED"),
        (SWEEP,),
    ),
    Case(
        "unshelve_placement_failed",
        lambda: words.unshelve_placement_failed(_unanswered()),
        ("Placement did not answer", "Connection refused", "once Placement answers"),
        ("refused by Placement",),
    ),
    Case(
        "no_host_for_unshelve",
        lambda: words.no_host_for_unshelve(
            exception.NoValidHost(kind="infeasible", reason="all full"), FLAVOR, Group()
        ),
        (f"server group {GROUP}", "SHELVED_OFFLOADED"),
        (SRC, DST),
    ),
    Case(
        "shelve_step_failed",
        lambda: words.shelve_step_failed("shelve", SRC, "disk full"),
        (f"on host {SRC}",),
        (DST,),
    ),
    Case(
        "shelve_step_failed",
        lambda: words.shelve_step_failed("shelve_offload", SRC, "disk full"),
        (f"SHELVED on host {SRC}",),
        (DST,),
    ),
    Case(
        "shelve_step_failed",
        lambda: words.shelve_step_failed("unshelve", DST, "disk full", offloaded=False),
        (f"SHELVED on host {DST}",),
        (SRC,),
    ),
    Case(
        "shelve_step_failed",
        lambda: words.shelve_step_failed("unshelve", DST, "disk full"),
        (f"on host {DST}", "SHELVED_OFFLOADED"),
        (SRC,),
    ),
]


def _public_functions() -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(words, inspect.isfunction)
        if member.__module__.startswith(words.__name__ + ".")
    }


def test_words_exports_every_public_function_of_its_modules() -> None:
    for module in (words.base, words.decisions, words.moves, words.shelve):
        for name, member in inspect.getmembers(module, inspect.isfunction):
            if not name.startswith("_") and member.__module__ == module.__name__:
                assert name in words.__all__, f"{module.__name__}.{name} is not in words"


def test_every_public_function_of_words_has_a_case() -> None:
    covered = {case.function for case in CASES}
    assert _public_functions() - covered == set(), "words functions without a case"
    assert covered - _public_functions() == set(), "cases of functions words no longer has"


@pytest.mark.parametrize("case", CASES, ids=[case.id() for case in CASES])
def test_each_message_names_its_host_and_consumer_and_no_other(case: Case) -> None:
    said = case.call()
    for expected in case.present:
        assert expected in said, (expected, said)
    for unexpected in (*case.absent, *NEVER):
        assert unexpected not in said, (unexpected, said)


def test_a_compute_reason_loses_its_error_code() -> None:
    said = words.compute_failed(
        "spawn", "h1", "Disk full on h1. [resize_sched.compute.injected_failure]", source=None
    )
    assert said.startswith("Building the server failed on host h1: Disk full on h1. ")
    assert "[resize_sched" not in said


def test_placement_not_answering_a_decision_says_the_sweep_finishes_it() -> None:
    said = words.decision_unanswered("revert", "h1")
    assert "host h1" in said and "sweep" in said and "Check that Placement is up" in said


def test_a_permanent_refusal_while_confirming_says_it_is_refused_until_fixed() -> None:
    said = words.step_failed("confirm", _unknown_class(), SRC, HOSTS)
    assert said.startswith("Placement refused a request while confirming the resize")
    assert "refused the same way until that is fixed" in said
    assert ENDED not in said and "Check that Placement is up" not in said


def test_a_5xx_says_placement_answered_it() -> None:
    exc = exception.PlacementUnavailable(
        method="GET", url="/resource_providers", status=503, reason="HTTP 503: busy", detail="busy"
    )
    said = words.step_failed("schedule", exc, SRC, HOSTS)
    assert said.startswith("Placement answered HTTP 503 while choosing a host")
    assert "busy (GET /resource_providers)" in said and SWEEP in said


def _refusal(kind: str) -> exception.ClaimRefused:
    # NOTE: Placement answers 409 "Unable to allocate inventory" for both; its
    # detail says which (placement/exception.py's two InvalidInventory kinds).
    amount = {
        "capacity": "would exceed the capacity",
        "constraints": "would violate inventory constraints",
    }[kind]
    return exception.ClaimRefused(
        method="PUT",
        url="/allocations/x",
        status=409,
        placement_code="placement.undefined_code",
        detail=(
            "Unable to allocate inventory: Unable to create allocation for 'VCPU' on "
            f"resource provider '{SRC_RP}'. The requested amount {amount}."
        ),
    )


def test_a_refused_confirm_names_the_host_and_no_uuid() -> None:
    exc = exception.PlacementConflict(
        method="PUT", url="/allocations/x", placement_code="x", detail=f"provider {DST_RP} busy"
    )
    said = words.decision_refused("confirm", DST, exc, HOSTS, retried=False)
    assert DST_RP not in said
    assert f"Placement said: provider host {DST} busy" in said
    assert "Retry the confirm" in said


def test_a_revert_refused_by_max_unit_says_so_and_names_the_source() -> None:
    holds = words.held_by_resize({DST_RP: {"VCPU": 2}}, {SRC_RP: {"VCPU": 4}}, HOSTS)
    said = words.decision_refused(
        "revert", SRC, _refusal("constraints"), HOSTS, running_on=DST, holds=holds
    )
    assert said.startswith(
        f"Reverting the resize was refused: host {SRC}'s inventory no longer admits the old flavor"
    )
    assert "Placement said: Unable to allocate inventory" in said
    assert f"on host {SRC}" in said and SRC_RP not in said
    assert "not enough capacity" not in said and "other servers" not in said
    assert (
        f"the server stays in VERIFY_RESIZE on host {DST}, holding the server VCPU 2 on host "
        f"{DST} and the migration VCPU 4 on host {SRC}."
    ) in said
    assert f"tries the revert again by itself once host {SRC}'s inventory or usage changes" in said


def test_a_revert_refused_for_room_says_the_room_is_short() -> None:
    said = words.decision_refused("revert", SRC, _refusal("capacity"), HOSTS)
    assert f"host {SRC} has not enough room left for the old flavor" in said
    assert "would exceed the capacity" in said


def test_the_kind_of_a_refusal_is_placements_word() -> None:
    assert words.placement_refusal(_refusal("capacity")) == "capacity"
    assert words.placement_refusal(_refusal("constraints")) == "constraints"
    other = exception.PlacementBadRequest(
        method="PUT", url="/x", status=400, placement_code="x", detail="bad"
    )
    assert words.placement_refusal(other) == "other"
