"""The simulation's concurrency model: one worker at a time, in a seeded order."""

import random
import threading

from resize_sched.simulate.interleave import Interleaver


def _order(seed: int, workers: int = 3, turns: int = 5) -> list[str]:
    interleaver = Interleaver(random.Random(seed))
    order: list[str] = []
    running = []

    def work(name: str) -> None:
        with interleaver.worker(name):
            for _ in range(turns):
                running.append(name)
                assert running == [name], "two workers ran at once"
                order.append(name)
                running.remove(name)
                interleaver.turn()

    names = [f"w{i}" for i in range(workers)]
    for name in names:
        interleaver.expect(name)
    threads = [threading.Thread(target=work, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    return order


def test_the_same_seed_gives_the_same_order() -> None:
    first = _order(7)
    assert sorted(first) == sorted(["w0", "w1", "w2"] * 5)
    assert _order(7) == first
    assert any(_order(seed) != first for seed in range(8, 12))


def test_the_hook_runs_at_the_next_turn_and_contention_is_anyone_elses_write() -> None:
    interleaver = Interleaver(random.Random(1))
    interleaver.expect("solo")
    seen = []
    with interleaver.worker("solo"):
        interleaver.at_next_turn(lambda: seen.append(interleaver.position()))
        assert seen == []
        interleaver.writes.append("solo")
        interleaver.turn()
        assert seen == [1]
        interleaver.writes.append("solo")
        assert not interleaver.contended("solo", 0)
        interleaver.writes.append("other")
        assert interleaver.contended("solo", 1)
        assert not interleaver.contended("solo", 3)
