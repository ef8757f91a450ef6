"""Domain errors of resize_sched.

Every error formats a ``msg_fmt`` template with the keyword arguments it is
given and carries a stable, namespaced ``code`` that logs, the API layer and
tests can match on. The hierarchy is deliberately shallow: callers catch the
family they can handle (``PlacementError``, ``NotFound``, ``Conflict``...) and
let the rest through. Domain errors become HTTP errors only at the API edge.
"""

from typing import Any


class ResizeSchedException(Exception):
    """Base of every resize_sched error."""

    msg_fmt = "An unknown error occurred."
    code = "resize_sched.error"

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError, ValueError):
                # NOTE: a wrong template must not hide the real error behind a
                # formatting one; fall back to the raw template and arguments.
                message = f"{self.msg_fmt} ({kwargs!r})"
        self.message = message
        super().__init__(message)


# -- configuration and plugins ----------------------------------------------


class ConfigurationError(ResizeSchedException):
    msg_fmt = "Invalid configuration: %(reason)s"
    code = "resize_sched.config"


class StrategyNotFound(ConfigurationError):
    msg_fmt = (
        "Claim strategy '%(name)s' is not installed. Installed claim strategies: "
        "%(installed)s. Set [resize] claim_strategy to one of them."
    )
    code = "resize_sched.config.strategy_not_found"


class StrategyLoadFailed(ConfigurationError):
    msg_fmt = "Claim strategy '%(name)s' could not be loaded: %(reason)s"
    code = "resize_sched.config.strategy_load_failed"


class SchedulerPluginNotFound(ConfigurationError):
    msg_fmt = (
        "Scheduler %(what)s '%(name)s' is not installed. Installed: %(installed)s. "
        "Fix [filter_scheduler] %(option)s."
    )
    code = "resize_sched.config.scheduler_plugin_not_found"


class SchedulerPluginLoadFailed(ConfigurationError):
    msg_fmt = "Scheduler %(what)s '%(name)s' could not be loaded: %(reason)s"
    code = "resize_sched.config.scheduler_plugin_load_failed"


class PolicyFileInvalid(ConfigurationError):
    msg_fmt = "The policy file %(path)s does not parse: %(reason)s"
    code = "resize_sched.config.policy_file_invalid"


# -- Placement ----------------------------------------------------------------


class PlacementError(ResizeSchedException):
    """Placement did not do what was asked.

    The keyword arguments, when Placement answered: ``method`` and ``url``
    (the request, its path relative to Placement's endpoint, its query
    decoded: :func:`resize_sched.placement.errors.shown_request`),
    ``status``, ``placement_code`` and ``detail`` (Placement's own words).
    """

    msg_fmt = "Placement request failed: %(reason)s"
    code = "resize_sched.placement"
    #: Placement's code for a generation conflict: someone wrote first.
    CONCURRENT_UPDATE = "placement.concurrent_update"
    #: Whether every error of the class is permanent (True), transient
    #: (False), or decided by its status (None): see :attr:`permanent`.
    ALWAYS_PERMANENT: bool | None = None

    @property
    def permanent(self) -> bool:
        """Whether asking the same again cannot succeed: Placement refused
        the request itself (a 4xx: an unknown resource class, a constraint
        an inventory sets, no capacity). Nothing retries it; the operation
        ends. A transient error (no answer, a 5xx, a time-out, a generation
        conflict still there after the re-reads) may pass: what is left in
        flight is taken on again by the conductor's sweep.

        The one place this is decided: the words (:mod:`resize_sched.words`)
        read it to say what happens next.
        """
        if self.kwargs.get("placement_code") == self.CONCURRENT_UPDATE:
            return False
        if self.ALWAYS_PERMANENT is not None:
            return self.ALWAYS_PERMANENT
        status = self.kwargs.get("status")
        return isinstance(status, int) and 400 <= status < 500 and status not in (408, 429)

    @property
    def transient(self) -> bool:
        """Not :attr:`permanent`: asking again later may succeed."""
        return not self.permanent

    @property
    def placement_words(self) -> str:
        """What Placement itself said (its error's detail); when it said
        nothing (it did not answer), why not; else this error's message."""
        said = self.kwargs.get("detail") or self.kwargs.get("reason") or self.message
        return str(said).strip()


class PlacementUnavailable(PlacementError):
    """Placement could not be reached, or kept answering 5xx, after retries."""

    msg_fmt = "Placement is unavailable (%(method)s %(url)s): %(reason)s"
    code = "resize_sched.placement.unavailable"
    ALWAYS_PERMANENT = False


class PlacementVersionUnsupported(PlacementError):
    msg_fmt = (
        "Placement at %(url)s supports microversions up to %(max_version)s; "
        "resize_sched needs at least %(min_version)s."
    )
    code = "resize_sched.placement.version_unsupported"
    ALWAYS_PERMANENT = True


class PlacementNotFound(PlacementError):
    msg_fmt = "Placement found nothing for %(what)s: %(detail)s"
    code = "resize_sched.placement.not_found"
    ALWAYS_PERMANENT = True


class PlacementBadRequest(PlacementError):
    """Placement rejected the request itself (a 400): a bug or bad input."""

    msg_fmt = "Placement rejected %(method)s %(url)s: %(detail)s"
    code = "resize_sched.placement.bad_request"
    ALWAYS_PERMANENT = True


class PlacementConflict(PlacementError):
    """A 409 that is neither a generation conflict nor a capacity refusal
    (or a generation conflict still there after the caller's re-reads)."""

    msg_fmt = "Placement refused %(method)s %(url)s: %(detail)s"
    code = "resize_sched.placement.conflict"
    ALWAYS_PERMANENT = True


class ConsumerGenerationConflict(PlacementConflict):
    """Someone else wrote the consumer (or provider) since we last read it."""

    msg_fmt = "Generation conflict on %(method)s %(url)s: %(detail)s"
    code = "resize_sched.placement.generation_conflict"
    ALWAYS_PERMANENT = False


class ClaimRefused(PlacementConflict):
    """Placement refused an allocation: not enough capacity, or an
    inventory's constraint (``max_unit``, ``step_size``) rules it out."""

    msg_fmt = "Placement refused the claim: %(detail)s"
    code = "resize_sched.placement.claim_refused"
    ALWAYS_PERMANENT = True


# -- database and domain objects ------------------------------------------------


class NotFound(ResizeSchedException):
    msg_fmt = "Resource could not be found: %(what)s"
    code = "resize_sched.not_found"


class ProjectRequired(ResizeSchedException):
    """A per-project query without a project, and without asking for all projects."""

    msg_fmt = (
        "%(what)s: no project given; a caller without a project sees nothing, and "
        "reading every project's must be asked for explicitly (ALL_PROJECTS)."
    )
    code = "resize_sched.project_required"


class FlavorNotFound(NotFound):
    msg_fmt = "Flavor %(flavor_id)s could not be found."
    code = "resize_sched.not_found.flavor"


class KeyPairNotFound(NotFound):
    msg_fmt = "Keypair %(name)s not found for user %(user_id)s"
    code = "resize_sched.not_found.key_pair"


class FlavorAccessNotFound(NotFound):
    msg_fmt = "Flavor access not found for %(flavor_id)s / %(project_id)s combination."
    code = "resize_sched.not_found.flavor_access"


class FlavorExtraSpecNotFound(NotFound):
    msg_fmt = "Flavor %(flavor_id)s has no extra spec %(key)s."
    code = "resize_sched.not_found.flavor_extra_spec"


class ServerNotFound(NotFound):
    msg_fmt = "Server %(server_id)s could not be found."
    code = "resize_sched.not_found.server"


class ServerGroupNotFound(NotFound):
    msg_fmt = "Server group %(group_uuid)s could not be found."
    code = "resize_sched.not_found.server_group"


class MigrationNotFound(NotFound):
    msg_fmt = "Migration %(migration_id)s could not be found."
    code = "resize_sched.not_found.migration"


class RequestSpecNotFound(NotFound):
    msg_fmt = "No request spec for server %(server_id)s."
    code = "resize_sched.not_found.request_spec"


class AggregateNotFound(NotFound):
    msg_fmt = "Aggregate %(aggregate_id)s could not be found."
    code = "resize_sched.not_found.aggregate"


class ComputeHostNotFound(NotFound):
    msg_fmt = "Compute host %(host)s could not be found."
    code = "resize_sched.not_found.compute_host"


class AggregateHostNotFound(NotFound):
    msg_fmt = "Aggregate %(aggregate_id)s has no host %(host)s."
    code = "resize_sched.not_found.aggregate_host"


class Invalid(ResizeSchedException):
    msg_fmt = "Invalid input: %(reason)s"
    code = "resize_sched.invalid"


class InvalidFlavor(Invalid):
    msg_fmt = "Invalid flavor: %(reason)s"
    code = "resize_sched.invalid.flavor"


class Conflict(ResizeSchedException):
    msg_fmt = "Conflict: %(reason)s"
    code = "resize_sched.conflict"


class FlavorExists(Conflict):
    msg_fmt = "A flavor named %(name)s already exists."
    code = "resize_sched.conflict.flavor_exists"


class AggregateNameExists(Conflict):
    msg_fmt = "Aggregate %(aggregate_name)s already exists."
    code = "resize_sched.conflict.aggregate_name"


class AggregateHostExists(Conflict):
    msg_fmt = "Aggregate %(aggregate_id)s already has host %(host)s."
    code = "resize_sched.conflict.aggregate_host"


class InvalidAggregateAction(Conflict):
    """An aggregate change that would leave a host in two zones, or delete a
    non-empty aggregate. ``action`` says which change (``add``, ``update``,
    ``update_meta``, ``delete``): the API answers 409 for ``add``, 400 else,
    as Nova."""

    msg_fmt = "Cannot %(what)s aggregate %(aggregate_id)s. Reason: %(reason)s."
    code = "resize_sched.conflict.aggregate_action"


class KeyPairExists(Conflict):
    msg_fmt = "Key pair '%(name)s' already exists."
    code = "resize_sched.conflict.key_pair_exists"


class FlavorAccessExists(Conflict):
    msg_fmt = (
        "Flavor access already exists for flavor %(flavor_id)s and project "
        "%(project_id)s combination."
    )
    code = "resize_sched.conflict.flavor_access_exists"


class ServerStateConflict(Conflict):
    """The server is not in the state the operation needs (another task won)."""

    msg_fmt = "Server %(server_id)s is %(actual)s; %(operation)s needs it to be %(expected)s."
    code = "resize_sched.conflict.server_state"


class MigrationStateConflict(Conflict):
    msg_fmt = (
        "Migration %(migration_id)s is %(actual)s; %(operation)s needs it to be %(expected)s."
    )
    code = "resize_sched.conflict.migration_state"


class StepNotDue(Conflict):
    """A conductor step found its migration moved on (another step, a delete).

    Not an error: the step is a duplicate or arrived late. It changes nothing
    (or undoes what it wrote) and is logged on one line.
    """

    msg_fmt = "Migration %(migration_id)s: %(step)s is not due: %(reason)s."
    code = "resize_sched.conflict.step_not_due"


class OverQuota(ResizeSchedException):
    """A request would take a project past one of its limits (HTTP 403)."""

    msg_fmt = (
        "Quota exceeded for %(resource)s: requested %(requested)d, but already "
        "used %(used)d of %(limit)d"
    )
    code = "resize_sched.over_quota"


class LimitsUnavailable(ResizeSchedException):
    """Keystone's unified limits could not be read (HTTP 503)."""

    msg_fmt = "Keystone's limits could not be read: %(reason)s"
    code = "resize_sched.limits_unavailable"


# -- scheduling and resize --------------------------------------------------------


class NoValidHost(ResizeSchedException):
    """No host can take the request.

    ``kind`` tells an operator what to do about it: ``deferred`` means some host
    could take it when empty but none has the room now (retry later, or free
    room); ``infeasible`` means no host could ever take it (the flavor is larger
    than any host, or asks for a trait nobody has).
    """

    msg_fmt = "No valid host was found (%(kind)s): %(reason)s"
    code = "resize_sched.no_valid_host"

    DEFERRED = "deferred"
    INFEASIBLE = "infeasible"

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("kind", self.DEFERRED)
        super().__init__(message, **kwargs)
        self.kind: str = kwargs["kind"]
        self.reason: str = kwargs.get("reason", "")


class GroupPolicyViolation(ResizeSchedException):
    """The late check: the chosen host breaks the server's group policy (a
    member racing onto it got there first); the claim is given back and the
    next alternate tried."""

    msg_fmt = (
        "Server %(server_id)s may not go to %(host)s under the policy of server group "
        "%(group_uuid)s: %(reason)s"
    )
    code = "resize_sched.group_policy_violation"


class ResizeFailed(ResizeSchedException):
    msg_fmt = "Resize of server %(server_id)s failed: %(reason)s"
    code = "resize_sched.resize_failed"


class RestoreFailed(ResizeFailed):
    """Even putting the old flavor back on the source was refused."""

    msg_fmt = (
        "Server %(server_id)s could not get its old allocation back on %(source)s: "
        "%(reason)s. The migration records what is missing; run "
        "'resize-sched-manage placement heal' once room is free."
    )
    code = "resize_sched.resize_failed.restore"


# -- compute hosts ------------------------------------------------------------------


class InjectedFailure(ResizeSchedException):
    """The fake hypervisor failed an operation on purpose (``[fake_driver] fail_on``)."""

    msg_fmt = "Injected failure of %(operation)s on host %(host)s ([fake_driver] fail_on)."
    code = "resize_sched.compute.injected_failure"


class LiveMigrationAborted(ResizeSchedException):
    """A live migration's hand-over stopped because an operator aborted it."""

    msg_fmt = "Live migration %(migration_id)s was aborted on host %(host)s."
    code = "resize_sched.compute.live_migration_aborted"
