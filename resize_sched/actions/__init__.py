"""The first, database-only step of each server action: validate and record intent.

The API service runs these and then casts to the conductor, which does the
Placement work; tests that drive the task flows directly run them too. Each
step is a compare-and-swap on the server (and migration), so two concurrent
requests can never both start: the second gets a typed conflict error.

One module per family, over a common part:

- :mod:`.allowed`: the table of the states each action may start from (the
  API's early 409 and every compare-and-swap below read it);
- :mod:`.common`: the action record, flavor reads, the quota check of a
  bigger flavor, and :func:`record_migration`, the one place a move's
  migration is recorded with what the server holds;
- :mod:`.destinations`: whether a move may go to the host its caller named;
- :mod:`.build`, :mod:`.power`, :mod:`.shelve`, :mod:`.moves` (resize, cold
  and live migration, evacuation), :mod:`.decisions` (confirm, revert),
  :mod:`.delete`.

Callers use the package: ``actions.begin_resize(...)``.
"""

from resize_sched.actions.allowed import ALLOWED, Allowed
from resize_sched.actions.build import create_server
from resize_sched.actions.common import check_upsize, record_migration
from resize_sched.actions.decisions import begin_confirm, begin_revert
from resize_sched.actions.delete import begin_delete
from resize_sched.actions.destinations import check_destination, source_is_down
from resize_sched.actions.moves import (
    begin_evacuation,
    begin_live_migration,
    begin_migrate,
    begin_resize,
    check_movable,
)
from resize_sched.actions.power import begin_power
from resize_sched.actions.shelve import (
    KEEP_ZONE,
    SHELVABLE,
    UNSHELVABLE,
    begin_shelve,
    begin_shelve_offload,
    begin_unshelve,
    check_unshelvable,
)

__all__ = [
    "ALLOWED",
    "KEEP_ZONE",
    "SHELVABLE",
    "UNSHELVABLE",
    "Allowed",
    "begin_confirm",
    "begin_delete",
    "begin_evacuation",
    "begin_live_migration",
    "begin_migrate",
    "begin_power",
    "begin_resize",
    "begin_revert",
    "begin_shelve",
    "begin_shelve_offload",
    "begin_unshelve",
    "check_destination",
    "check_movable",
    "check_unshelvable",
    "check_upsize",
    "create_server",
    "record_migration",
    "source_is_down",
]
