"""Where a reshape puts what moves (compute side) and how the conductor
translates a stored shape to the tree as it is now."""

import pytest

from resize_sched import exception
from resize_sched.compute.reshape import _place
from resize_sched.conductor.reshape import layout, translate

ROOT, CELL0, CELL1, POOL = "root", "cell0", "cell1", "pool"
BEFORE = {ROOT: frozenset({"VCPU", "MEMORY_MB", "DISK_GB"})}
AFTER = {
    ROOT: frozenset({"DISK_GB"}),
    CELL0: frozenset({"VCPU", "MEMORY_MB"}),
    CELL1: frozenset({"VCPU", "MEMORY_MB"}),
}


def test_a_guest_stays_whole_on_the_cell_with_most_room() -> None:
    free = {CELL0: {"VCPU": 2, "MEMORY_MB": 4096}, CELL1: {"VCPU": 6, "MEMORY_MB": 4096}}
    placed = _place({"VCPU": 2, "MEMORY_MB": 2048}, free, [CELL0, CELL1], "h")
    assert placed == {CELL1: {"VCPU": 2, "MEMORY_MB": 2048}}
    assert free[CELL1] == {"VCPU": 4, "MEMORY_MB": 2048}


def test_split_class_by_class_only_when_no_cell_holds_it_whole() -> None:
    free = {CELL0: {"VCPU": 4, "MEMORY_MB": 1024}, CELL1: {"VCPU": 1, "MEMORY_MB": 4096}}
    placed = _place({"VCPU": 2, "MEMORY_MB": 2048}, free, [CELL0, CELL1], "h")
    assert placed == {CELL0: {"VCPU": 2}, CELL1: {"MEMORY_MB": 2048}}


def test_no_room_refuses() -> None:
    free = {CELL0: {"VCPU": 1}, CELL1: {"VCPU": 1}}
    with pytest.raises(exception.ClaimRefused):
        _place({"VCPU": 4}, free, [CELL0, CELL1], "h")


def test_translate_follows_where_the_consumers_hold_the_class_now() -> None:
    stored = {ROOT: {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}}
    now = {ROOT: {"DISK_GB": 10}, CELL1: {"VCPU": 4, "MEMORY_MB": 4096}}
    assert translate(stored, BEFORE, AFTER, now) == {
        ROOT: {"DISK_GB": 10},
        CELL1: {"VCPU": 2, "MEMORY_MB": 2048},
    }


def test_translate_keeps_what_did_not_move_and_is_idempotent() -> None:
    stored = {ROOT: {"VCPU": 2, "DISK_GB": 10}, POOL: {"DISK_GB": 5}}
    once = translate(stored, BEFORE, AFTER, {})
    assert once == {ROOT: {"DISK_GB": 10}, CELL0: {"VCPU": 2}, POOL: {"DISK_GB": 5}}
    assert translate(once, BEFORE, AFTER, {}) == once


def test_translate_back_to_a_flat_root() -> None:
    stored = {ROOT: {"DISK_GB": 10}, CELL0: {"VCPU": 2, "MEMORY_MB": 2048}}
    assert translate(stored, AFTER, BEFORE, {}) == {
        ROOT: {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}
    }


def test_a_class_on_another_services_cell_follows_the_consumer() -> None:
    after = {ROOT: frozenset({"DISK_GB"})}
    now = {ROOT: {"DISK_GB": 10}, "theirs": {"VCPU": 2, "MEMORY_MB": 2048}}
    stored = {ROOT: {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}}
    assert translate(stored, BEFORE, after, now) == now


def test_layout_from_a_report() -> None:
    children = {CELL0: {"name": "h_numa0", "inventory": {"VCPU": {}}, "traits": []}}
    assert layout(ROOT, {"DISK_GB": {}}, children) == {
        ROOT: frozenset({"DISK_GB"}),
        CELL0: frozenset({"VCPU"}),
    }
