"""One sweep per deployment: the lease a conductor holds while it sweeps.

Every conductor process runs a sweep loop (:mod:`resize_sched.conductor.service`);
only the holder of the ``sweep`` lease (:mod:`resize_sched.db.lease_api`)
sweeps, so however many conductor hosts and workers there are, one interval
costs Placement what one sweep and one reaper's pass cost. The holder
renews it at each sweep, and during a long pass (:meth:`Lease.held`); a
conductor that stops gives it up; one that dies keeps it until it expires,
then the first survivor to sweep takes it over: within ``[conductor]
lease_duration`` plus one ``stuck_check_interval``.

Two holders at once would cost twice, never do harm: every step a sweep
takes is a compare-and-swap, every reap a generation-checked write.
"""

import time
from typing import Any

from oslo_log import log as logging

from resize_sched.db import states

LOG = logging.getLogger(__name__)


class Lease:
    """This conductor's side of a lease.

    :param db: the :class:`~resize_sched.db.api.Database`.
    :param holder: who holds it (the conductor's ``[DEFAULT] host``, unique
        per deployment as its service row is).
    :param duration: seconds it is taken or renewed for.
    :param name: which lease.
    """

    def __init__(
        self, db: Any, holder: str, duration: float, name: str = states.LEASE_SWEEP
    ) -> None:
        self.db = db
        self.holder = holder
        self.duration = duration
        self.name = name
        #: time.monotonic() of the last successful take or renewal; None: not held
        self._renewed: float | None = None

    def hold(self) -> bool:
        """Take the lease, or renew it; whether this conductor holds it now."""
        started = time.monotonic()
        taken = self.db.lease_take(self.name, self.holder, self.duration) is not None
        if taken and self._renewed is None:
            LOG.info("%s now holds the %s lease", self.holder, self.name)
        elif not taken and self._renewed is not None:
            LOG.warning("%s lost the %s lease", self.holder, self.name)
        self._renewed = started if taken else None
        return taken

    def held(self) -> bool:
        """Whether it is still held: renewed once half its duration has passed.

        Called between the parts of a long pass, which stops when it is not.
        """
        if self._renewed is None:
            return False
        if time.monotonic() - self._renewed < self.duration / 2:
            return True
        return self.hold()

    def record(self, **marks: Any) -> bool:
        """Record how far the duty got, while this conductor holds the lease."""
        recorded = bool(self.db.lease_record(self.name, self.holder, **marks))
        if not recorded:
            LOG.info(
                "%s does not hold the %s lease: %s not recorded", self.holder, self.name, marks
            )
        return recorded

    def release(self) -> None:
        """Give the lease up (the conductor stops), so a survivor takes it at once."""
        if self._renewed is not None and self.db.lease_release(self.name, self.holder):
            LOG.info("%s gave up the %s lease", self.holder, self.name)
        self._renewed = None
