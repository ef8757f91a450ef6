"""The state vocabulary of resize_sched: server, task, power, migration and journal states.

What a row's ``status``, ``vm_state``, ``task_state``, ``power_state``,
``migration_type``, ``error_kind`` and journal ``state`` columns hold, and
the lease names, as plain constants. The tables are in
:mod:`resize_sched.db.models` (which re-exports every name here, so
``models.STATUS_ACTIVE`` keeps working); code that needs only the words, not
the tables, imports this module.
"""

# -- servers, as the Compute API shows them -----------------------------------

STATUS_BUILD = "BUILD"
STATUS_ACTIVE = "ACTIVE"
STATUS_RESIZE = "RESIZE"
STATUS_VERIFY_RESIZE = "VERIFY_RESIZE"
STATUS_REVERT_RESIZE = "REVERT_RESIZE"
STATUS_ERROR = "ERROR"
STATUS_DELETED = "DELETED"
STATUS_SHUTOFF = "SHUTOFF"
STATUS_MIGRATING = "MIGRATING"
STATUS_REBUILD = "REBUILD"
STATUS_SHELVED = "SHELVED"
STATUS_SHELVED_OFFLOADED = "SHELVED_OFFLOADED"
SERVER_STATUSES = (
    STATUS_BUILD,
    STATUS_ACTIVE,
    STATUS_RESIZE,
    STATUS_VERIFY_RESIZE,
    STATUS_REVERT_RESIZE,
    STATUS_ERROR,
    STATUS_DELETED,
    STATUS_SHUTOFF,
    STATUS_MIGRATING,
    STATUS_REBUILD,
    STATUS_SHELVED,
    STATUS_SHELVED_OFFLOADED,
)

VM_BUILDING = "building"
VM_ACTIVE = "active"
VM_RESIZED = "resized"
VM_ERROR = "error"
VM_DELETED = "deleted"
VM_STOPPED = "stopped"
VM_SHELVED = "shelved"
VM_SHELVED_OFFLOADED = "shelved_offloaded"
VM_STATES = (
    VM_BUILDING,
    VM_ACTIVE,
    VM_RESIZED,
    VM_ERROR,
    VM_DELETED,
    VM_STOPPED,
    VM_SHELVED,
    VM_SHELVED_OFFLOADED,
)

TASK_SCHEDULING = "scheduling"
TASK_RESIZE_PREP = "resize_prep"
#: A live migration's task state (the server's status is MIGRATING meanwhile).
TASK_MIGRATING = "migrating"
#: An evacuation's task state (the server's status is REBUILD meanwhile).
TASK_REBUILDING = "rebuilding"
TASK_RESIZE_MIGRATING = "resize_migrating"
TASK_RESIZE_MIGRATED = "resize_migrated"
TASK_RESIZE_FINISH = "resize_finish"
TASK_RESIZE_CONFIRMING = "resize_confirming"
TASK_RESIZE_REVERTING = "resize_reverting"
TASK_DELETING = "deleting"
TASK_POWERING_OFF = "powering-off"
TASK_POWERING_ON = "powering-on"
#: A shelve's, a shelve offload's and an unshelve's task states (Nova's); an
#: unshelve from offloaded is ``spawning`` once its host is claimed, as a build.
TASK_SHELVING = "shelving"
TASK_SHELVING_OFFLOADING = "shelving_offloading"
TASK_UNSHELVING = "unshelving"
TASK_SPAWNING = "spawning"

#: Nova's power states (``OS-EXT-STS:power_state``).
POWER_NOSTATE = 0
POWER_RUNNING = 1
POWER_SHUTDOWN = 4


def settled_state(power_state: int | None) -> tuple[str, str]:
    """(status, vm_state) of a server no task is acting on, by its power
    state: a stopped server stays SHUTOFF across a resize's end (confirm,
    revert, failure), as in Nova.

    :param power_state: the server's ``power_state`` (None: never set, running).
    """
    if power_state == POWER_SHUTDOWN:
        return STATUS_SHUTOFF, VM_STOPPED
    return STATUS_ACTIVE, VM_ACTIVE


# -- migrations -----------------------------------------------------------------

MIGRATION_TYPE_RESIZE = "resize"
MIGRATION_TYPE_MIGRATION = "migration"
MIGRATION_TYPE_LIVE = "live-migration"
MIGRATION_TYPE_EVACUATION = "evacuation"
MIGRATION_TYPES = (
    MIGRATION_TYPE_RESIZE,
    MIGRATION_TYPE_MIGRATION,
    MIGRATION_TYPE_LIVE,
    MIGRATION_TYPE_EVACUATION,
)

MIGRATION_PRE_MIGRATING = "pre-migrating"
MIGRATION_MIGRATING = "migrating"
MIGRATION_POST_MIGRATING = "post-migrating"
MIGRATION_FINISHED = "finished"
MIGRATION_CONFIRMING = "confirming"
MIGRATION_CONFIRMED = "confirmed"
MIGRATION_REVERTING = "reverting"
MIGRATION_REVERTED = "reverted"
MIGRATION_ERROR = "error"
#: A live migration's own statuses, Nova's: ``accepted`` until a destination
#: is claimed, ``preparing`` while the destination prepares, ``running`` while
#: the source hands the server over, then ``completed``; a rollback ends in
#: ``error``, an abort in ``cancelled``.
MIGRATION_ACCEPTED = "accepted"
MIGRATION_PREPARING = "preparing"
MIGRATION_RUNNING = "running"
MIGRATION_COMPLETED = "completed"
MIGRATION_CANCELLED = "cancelled"
LIVE_IN_FLIGHT_STATUSES = (MIGRATION_ACCEPTED, MIGRATION_PREPARING, MIGRATION_RUNNING)
#: An evacuation's, Nova's too: ``accepted``, ``pre-migrating`` once the
#: destination is claimed, ``done`` once the server runs there (the migration
#: still holds the source, whose host is down), ``completed`` once the
#: source's compute service is back and has removed its copy; ``failed``
#: when the rebuild on the destination failed.
MIGRATION_DONE = "done"
MIGRATION_FAILED = "failed"
MIGRATION_STATUSES = (
    MIGRATION_PRE_MIGRATING,
    MIGRATION_MIGRATING,
    MIGRATION_POST_MIGRATING,
    MIGRATION_FINISHED,
    MIGRATION_CONFIRMING,
    MIGRATION_CONFIRMED,
    MIGRATION_REVERTING,
    MIGRATION_REVERTED,
    MIGRATION_ERROR,
    *LIVE_IN_FLIGHT_STATUSES,
    MIGRATION_COMPLETED,
    MIGRATION_CANCELLED,
    MIGRATION_DONE,
    MIGRATION_FAILED,
)
#: A migration in one of these has ended; nothing more happens to it (except
#: an ``error`` one whose ``missing`` holdings the heal command still owes).
FINAL_STATUSES = (
    MIGRATION_CONFIRMED,
    MIGRATION_REVERTED,
    MIGRATION_ERROR,
    MIGRATION_COMPLETED,
    MIGRATION_CANCELLED,
    MIGRATION_FAILED,
)
#: Everything else: crash recovery must look at these.
IN_FLIGHT_STATUSES = tuple(s for s in MIGRATION_STATUSES if s not in FINAL_STATUSES)

#: ``Migration.error_kind``: why a migration is in ``error``.
ERROR_DEFERRED = "deferred"  # no host has room now; may fit later
ERROR_INFEASIBLE = "infeasible"  # no host can ever take it
ERROR_FAILED = "failed"  # anything else: see error_reason
ERROR_KINDS = (ERROR_DEFERRED, ERROR_INFEASIBLE, ERROR_FAILED)

# -- journal -------------------------------------------------------------------------

JOURNAL_INTENDED = "intended"
JOURNAL_APPLIED = "applied"
JOURNAL_ABANDONED = "abandoned"
JOURNAL_STATES = (JOURNAL_INTENDED, JOURNAL_APPLIED, JOURNAL_ABANDONED)


# -- leases ---------------------------------------------------------------------------

#: The lease of the conductors' sweep and reaper: one holder per deployment.
LEASE_SWEEP = "sweep"
