"""Failures said in words: what an operator reads in a server's fault and events.

A failed step records a message where ``openstack server event show`` (the
event's ``traceback``) and ``openstack server show`` (the server's
``fault``) print it. Each function here writes one such message from what
the step knows: what happened, on which host (by name, never by provider
UUID), what state the server is left in, and what the operator can do. The
deferred and infeasible verdicts of the scheduler
(:mod:`resize_sched.scheduler.verdict`) give the reason the no-host
messages quote.

The messages are grouped by what failed: :mod:`.moves` (a move's steps and
its search for a host), :mod:`.decisions` (confirm and revert), :mod:`.shelve`;
:mod:`.base` holds what they are made of.
"""

from resize_sched.words.base import named, placement_refusal, reason_of
from resize_sched.words.decisions import decision_refused, decision_unanswered, held_by_resize
from resize_sched.words.moves import (
    compute_failed,
    filtered_out,
    no_host_for_build,
    no_host_for_migration,
    no_host_for_move,
    no_host_for_resize,
    restore_refused,
    step_failed,
)
from resize_sched.words.shelve import (
    no_host_for_unshelve,
    shelve_step_failed,
    unshelve_placement_failed,
)

__all__ = [
    "compute_failed",
    "decision_refused",
    "decision_unanswered",
    "filtered_out",
    "held_by_resize",
    "named",
    "no_host_for_build",
    "no_host_for_migration",
    "no_host_for_move",
    "no_host_for_resize",
    "no_host_for_unshelve",
    "placement_refusal",
    "reason_of",
    "restore_refused",
    "shelve_step_failed",
    "step_failed",
    "unshelve_placement_failed",
]
