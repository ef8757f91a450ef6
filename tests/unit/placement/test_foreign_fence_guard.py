"""Guards for another service's allocations on our consumers: the fence
carries them through, and a class only the old flavor asks is still ours.

The fence (before a lost write's journal entry is called abandoned) writes
each consumer again unchanged; "unchanged" includes what Neutron or Cyborg
put on it. And the split into ours and theirs counts every class of both of
a resize's flavors, so a class the new flavor drops (a vGPU resized away)
is still ours to give back or restore. Placement and the database are
stand-ins; the executor's public methods run whole.
"""

from types import SimpleNamespace
from typing import Any

from resize_sched.placement import executor as ex
from resize_sched.placement.client import ConsumerAllocations
from resize_sched.strategies import Holdings

ROOT, GPU, BRIDGE = "root", "gpu", "bridge"
OLD = {"VCPU": 2, "MEMORY_MB": 2048}
PORT = {BRIDGE: {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}


class _Client:
    def __init__(self) -> None:
        self.written: list[tuple[str, Any]] = []

    def put_allocations(self, consumer: str, write: Any) -> None:
        self.written.append((consumer, write))

    def post_allocations(self, writes: dict[str, Any]) -> None:
        self.written.extend(writes.items())


class _Db:
    def __init__(self, entries: list[Any]) -> None:
        self.entries = entries
        self.marked: dict[int, str] = {}

    def journal_list(self, migration_uuid: str) -> list[Any]:
        return list(self.entries)

    def journal_mark(self, entry_id: int, state: str, detail: str | None = None) -> None:
        self.marked[entry_id] = state


def _migration(**kw: Any) -> Any:
    return SimpleNamespace(
        uuid="mig", server_uuid="srv", project_id="p", user_id="u", holdings=None, **kw
    )


def test_the_fence_writes_another_services_part_back_unchanged() -> None:
    held = Holdings(server={ROOT: OLD})
    actual = ex.Known(held, 4, None, Holdings(server=PORT))
    lost = SimpleNamespace(
        id=7,
        seq=2,
        phase="claim",
        state="intended",
        before=held.to_dict(),
        target=Holdings(server={ROOT: {"VCPU": 4, "MEMORY_MB": 4096}}).to_dict(),
    )
    client, db = _Client(), _Db([lost])
    settled, verdicts = ex.TransitionExecutor(client, db).settle(_migration(), actual)
    assert verdicts == {7: "abandoned"}
    assert db.marked == {7: "abandoned"}
    assert [c for c, _ in client.written] == ["srv"]
    (_, write) = client.written[0]
    assert write.allocations == {ROOT: OLD, **PORT}
    assert write.generation == 4
    assert settled.foreign == Holdings(server=PORT)
    assert settled.server_generation == 5


def test_a_class_only_the_old_flavor_asks_is_ours() -> None:
    migration = _migration(old_resources={**OLD, "VGPU": 1}, new_resources={"VCPU": 4})
    assert ex.ours_of(migration) == {"VCPU", "MEMORY_MB", "VGPU"}
    server = ConsumerAllocations({ROOT: {"VCPU": 4}, **PORT}, 3)
    mig = ConsumerAllocations({ROOT: OLD, GPU: {"VGPU": 1}}, 2)
    known = ex.known_from(migration, server, mig)
    assert known.holdings == Holdings(
        server={ROOT: {"VCPU": 4}}, migration={ROOT: OLD, GPU: {"VGPU": 1}}
    )
    assert known.foreign == Holdings(server=PORT)
