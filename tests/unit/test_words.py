"""resize_sched.words: the messages an operator reads, from what a step knows."""

from resize_sched import exception, words

SOURCE_RP = "6f1b1d3e-0c39-4d5a-9a51-1c2f8f0a7b11"
DEST_RP = "0a9c3b55-71e2-4c1f-b0d4-2b1e6a8c9d22"
OTHER = "11111111-2222-3333-4444-555555555555"


def test_provider_uuids_become_host_names() -> None:
    text = f"Unable to allocate on resource provider '{DEST_RP}' nor {OTHER}"
    named = words.named(text, {SOURCE_RP: "h1", DEST_RP: "h2"})
    assert (
        named
        == "Unable to allocate on resource provider 'host h2' nor another provider or consumer"
    )


def test_a_refused_confirm_names_the_host_and_no_uuid() -> None:
    exc = exception.PlacementConflict(
        method="PUT", url="/allocations/x", placement_code="x", detail=f"provider {DEST_RP} busy"
    )
    said = words.decision_refused("confirm", "h2", exc, {DEST_RP: "h2"}, retried=False)
    assert DEST_RP not in said
    assert "Placement said: provider host h2 busy" in said
    assert "Retry the confirm" in said


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
        placement_code="placement.undefined_code",
        detail=(
            "Unable to allocate inventory: Unable to create allocation for 'VCPU' on "
            f"resource provider '{SOURCE_RP}'. The requested amount {amount}."
        ),
    )


def test_a_revert_refused_by_max_unit_says_so_and_names_the_source() -> None:
    hosts = {SOURCE_RP: "h1", DEST_RP: "h2"}
    holds = words.held_by_resize({DEST_RP: {"VCPU": 2}}, {SOURCE_RP: {"VCPU": 4}}, hosts)
    said = words.decision_refused(
        "revert", "h1", _refusal("constraints"), hosts, running_on="h2", holds=holds
    )
    assert said.startswith(
        "Reverting the resize was refused: host h1's inventory no longer admits the old flavor"
    )
    assert "Placement said: Unable to allocate inventory" in said
    assert "on resource provider 'host h1'" in said and SOURCE_RP not in said
    assert "not enough capacity" not in said and "other servers" not in said
    assert (
        "the server stays in VERIFY_RESIZE on host h2, holding the server VCPU 2 on host h2 "
        "and the migration VCPU 4 on host h1."
    ) in said
    assert "tries the revert again by itself once host h1's inventory or usage changes" in said


def test_a_revert_refused_for_room_says_the_room_is_short() -> None:
    said = words.decision_refused("revert", "h1", _refusal("capacity"), {SOURCE_RP: "h1"})
    assert "host h1 has not enough room left for the old flavor" in said
    assert "would exceed the capacity" in said


def test_the_kind_of_a_refusal_is_placements_word() -> None:
    assert words.placement_refusal(_refusal("capacity")) == "capacity"
    assert words.placement_refusal(_refusal("constraints")) == "constraints"
    other = exception.PlacementBadRequest(
        method="PUT", url="/x", status=400, placement_code="x", detail="bad"
    )
    assert words.placement_refusal(other) == "other"


def test_a_compute_reason_loses_its_error_code() -> None:
    said = words.compute_failed(
        "spawn", "h1", "Disk full on h1. [resize_sched.compute.injected_failure]", source=None
    )
    assert said.startswith("Building the server failed on host h1: Disk full on h1. ")
    assert "[resize_sched" not in said


def test_placement_not_answering_a_decision_says_the_sweep_finishes_it() -> None:
    said = words.decision_unanswered("revert", "h1")
    assert "host h1" in said and "sweep" in said and "Check that Placement is up" in said


def test_a_step_that_failed_on_placement_names_the_host_and_the_sweep() -> None:
    exc = exception.PlacementUnavailable(
        method="GET", url=f"/resource_providers/{DEST_RP}/inventories", reason="timed out"
    )
    said = words.step_failed("schedule", exc, "h1", {SOURCE_RP: "h1", DEST_RP: "h2"})
    assert said.startswith("Placement did not answer while choosing a host for the resize")
    assert "host h1" in said and "host h2" in said and DEST_RP not in said
    assert "sweep" in said and "Check that Placement is up" in said
