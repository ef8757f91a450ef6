"""Probe a Placement for over-commit when claims on one provider race.

Starts openstack-placement in its own process on a scratch MariaDB/MySQL or
PostgreSQL database (see ``external_placement.py``), then, ``--rounds`` times:
a new provider with 8 VCPU, and ``--claims`` threads that each PUT a new
consumer holding 4 VCPU on it at the same instant. At most two such claims
fit; the rest must be refused (409). Each round prints the answers and the
provider's usage, and the run says in how many rounds usage went over the
inventory.

With openstack-placement 16.0 and its default
``[placement] allocation_conflict_retry_count = 10``, rounds went over
capacity on both MariaDB 10.11 and PostgreSQL 15 here; with the count set to
1 (``--conflict-retries 1``: Placement answers a provider generation
conflict with 409 at once and the client claims again) none did. resize_sched
claims again on such a conflict (``[placement] generation_conflict_retries``).

Run: ``python benchmarks/placement_race.py --placement-db
mysql+pymysql://root@127.0.0.1:3306/test [--conflict-retries 1]``.
"""

from __future__ import annotations

import argparse
import sys
import threading
import uuid

import requests
from external_placement import ExternalPlacement

HEADERS = {"OpenStack-API-Version": "placement 1.38", "X-Auth-Token": "admin"}
VCPUS, EACH = 8, 4


def one_round(endpoint: str, rp: str, claims: int) -> tuple[list[int], int]:
    """``claims`` simultaneous claims of EACH VCPU on ``rp``: (answers, usage)."""
    start = threading.Barrier(claims)
    answers: list[int] = []

    def claim() -> None:
        body = {
            "allocations": {rp: {"resources": {"VCPU": EACH}}},
            "project_id": "probe",
            "user_id": "probe",
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        }
        with requests.Session() as session:
            start.wait()
            url = f"{endpoint}/allocations/{uuid.uuid4()}"
            answers.append(session.put(url, json=body, headers=HEADERS, timeout=60).status_code)

    threads = [threading.Thread(target=claim) for _ in range(claims)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    usages = requests.get(
        f"{endpoint}/resource_providers/{rp}/usages", headers=HEADERS, timeout=60
    ).json()["usages"]
    return sorted(answers), usages.get("VCPU", 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--placement-db", required=True, help="server URL for the scratch DB")
    parser.add_argument("--rounds", type=int, default=10, help="providers to race on")
    parser.add_argument("--claims", type=int, default=8, help="simultaneous claims per round")
    parser.add_argument(
        "--conflict-retries",
        type=int,
        default=None,
        help="Placement's allocation_conflict_retry_count (default: Placement's own, 10)",
    )
    args = parser.parse_args(argv)
    options = {}
    if args.conflict_retries is not None:
        options = {"placement": {"allocation_conflict_retry_count": args.conflict_retries}}
    over = 0
    with ExternalPlacement(args.placement_db, threads=args.claims, options=options) as placement:
        print(f"Placement {placement.describe()}; {args.claims} claims of {EACH} of {VCPUS} VCPU")
        for n in range(args.rounds):
            rp = placement.add_host(f"race{n}", vcpus=VCPUS, memory_mb=1024, disk_gb=10)
            answers, used = one_round(placement.endpoint, rp, args.claims)
            over += used > VCPUS
            flag = "  OVER CAPACITY" if used > VCPUS else ""
            print(f"round {n}: answers {answers}, VCPU used {used} of {VCPUS}{flag}")
    print(f"{over} of {args.rounds} rounds went over capacity")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
