"""The HA run's table: each fault's window, the casts, the retries, the verdict's inputs."""

from __future__ import annotations

import json
from typing import Any

from tests.ha import faults as ha_faults


def print_table(figures: dict[str, Any]) -> None:
    ha = figures["ha"]
    print()
    print(
        f"HA run: seed {figures['seed']}, strategy {figures['strategy']}, "
        f"{figures['clients']} clients, {figures['computes']} computes, two conductors"
    )
    for window in ha["windows"]:
        fault = window["fault"]
        if fault is not None:
            extra = f", rejoined in {fault['rejoin_s']} s" if "rejoin_s" in fault else ""
            print(
                f"  {window['window']}: {fault['target']}; undone after "
                f"{fault['undone_after_s']} s, clock from t0+{fault['clock_after_t0_s']} s"
                f"{extra}{'; ERROR ' + fault['error'] if fault['error'] else ''}"
            )
    print()
    print(ha_faults.table([(w["window"], w) for w in ha["windows"]]))
    casts = ha["casts"]
    print(
        f"\ncasts: {casts['sent']} sent, {casts['received']} received, {casts['lost']} lost "
        f"({casts['lost_before_clients']} more sent at start-up before a conductor consumed), "
        f"{casts['redelivered']} delivered twice, {casts['refused']} refused to their sender"
    )
    for lost in casts["lost_ids"]:
        print(f"  lost: {lost}")
    for twice in casts["redelivered_ids"]:
        print(
            f"  delivered twice: {twice['method']} from {twice['sender']}; the receiver "
            f"then logged: {twice['second_delivery_then'] or '(nothing)'}"
        )
    print(f"database retries logged: {ha['db_retries']}")
    for line in ha["db_retry_lines"]:
        print(f"  {line}")
    for line in ha["error_lines"]:
        print(f"  ERROR {line}")
    print("galera after the run: " + json.dumps(ha["galera"]))
    print(f"invariant checks: {figures['checks_run']}, violations: {len(figures['violations'])}")
    for v in figures["violations"]:
        print(f"  [{v['kind']}] {v['detail']}")
    print("timings: " + ", ".join(f"{k} {v} s" for k, v in figures["timings_s"].items()))
