"""Data API for flavors (a mixin of ``Database``).

Creating a flavor (sizes and extra specs checked to make a resource request
the scheduler can use), reading and listing live ones, changing extra specs,
soft-deleting. Servers keep a snapshot of their flavor, so nothing here
changes a server.
"""

import re
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from oslo_log import log as logging

from resize_sched import exception, resources
from resize_sched.db import models
from resize_sched.db.retry import (
    call_uuid,
    commit_may_have_landed,
    earlier_run_row,
    retry_on_deadlock,
)
from resize_sched.db.session import INTEGRITY_ERRORS, SessionSource
from resize_sched.db.values import text, whole_number
from resize_sched.resources import extra_specs

LOG = logging.getLogger(__name__)

# As in Nova: letters, digits, '.', '_', '-' and inner spaces.
_FLAVORID_RE = re.compile(r"^(?! )[a-zA-Z0-9. _-]+(?<! )\Z")
_FLAVOR_SIZES = ("vcpus", "memory_mb", "root_gb", "ephemeral_gb", "swap")


def _checked_specs(
    sizes: Mapping[str, Any], specs: dict[str, Any], stored: Mapping[str, Any] | None = None
) -> dict[str, str]:
    """Flavor extra specs, each a string, that make a valid resource request.

    :param stored: the specs the flavor has now. One of them that this
        service refuses today, stored before it did (accepted and ignored
        then), and left as it is, is ignored by the check as it is when read
        (:func:`resize_sched.resources.stored_request`): it does not block a
        change of the others, and removing it is always allowed.
    :raises ValueError: a bad key or value, or a ``resources:``/``trait:``
        spec the scheduler could not use, or a key it does not honour.
    """
    for key, value in specs.items():
        text(key, "extra spec key")
        if not isinstance(value, str) or len(value) > 255:
            raise ValueError(f"extra spec {key} must be a string of at most 255")
    kept = {k for k, v in (stored or {}).items() if specs.get(k) == v and _refused(k)}
    checked = {k: v for k, v in specs.items() if k not in kept}
    resources.flavor_request({**sizes, "extra_specs": checked})
    return specs


def _refused(key: str) -> bool:
    try:
        extra_specs.check(key)
    except ValueError:
        return True
    return False


class FlavorApi(SessionSource):
    """Flavors."""

    @retry_on_deadlock
    def flavor_create(
        self,
        name: str,
        vcpus: int,
        memory_mb: int,
        root_gb: int,
        ephemeral_gb: int = 0,
        swap: int = 0,
        extra_specs: dict[str, str] | None = None,
        flavorid: str | None = None,
        is_public: bool = True,
    ) -> models.Flavor:
        """Create a flavor.

        :param name: unique among live flavors.
        :param vcpus: at least 1.
        :param memory_mb: at least 1.
        :param root_gb: 0 or more (0: the root disk is not local).
        :param ephemeral_gb: 0 or more.
        :param swap: swap in MB, 0 or more.
        :param extra_specs: ``resources:CLASS=N``, ``trait:NAME=required``...
        :param flavorid: the API-visible id; a new UUID when omitted.
        :param is_public: visible to every project.
        :returns: the new flavor.
        :raises resize_sched.exception.InvalidFlavor: a bad value; nothing written.
        :raises resize_sched.exception.FlavorExists: the name or flavorid is taken.
        """
        try:
            name = text(name, "name")
            sizes = {
                "vcpus": whole_number(vcpus, "vcpus", minimum=1),
                "memory_mb": whole_number(memory_mb, "memory_mb", minimum=1),
                "root_gb": whole_number(root_gb, "root_gb", minimum=0),
                "ephemeral_gb": whole_number(ephemeral_gb, "ephemeral_gb", minimum=0),
                "swap": whole_number(swap, "swap", minimum=0),
            }
            if flavorid is None:
                flavorid = call_uuid("flavor")
            elif not isinstance(flavorid, str) or not _FLAVORID_RE.match(flavorid):
                raise ValueError(
                    f"flavorid {flavorid!r} may only hold letters, digits, '.', '_', "
                    "'-' and inner spaces"
                )
            flavorid = text(flavorid, "flavorid")
            specs = _checked_specs(sizes, dict(extra_specs or {}))
            if not isinstance(is_public, bool):
                raise ValueError(f"is_public must be true or false, got {is_public!r}")
        except ValueError as exc:
            raise exception.InvalidFlavor(reason=str(exc)) from None

        columns = dict(
            flavorid=flavorid,
            name=name,
            extra_specs=specs,
            is_public=is_public,
            deleted=0,
            **sizes,
        )
        flavor = models.Flavor(**columns)
        try:
            with self._writer() as session:
                clash = session.scalars(
                    sa.select(models.Flavor).where(
                        models.Flavor.deleted == 0,
                        sa.or_(models.Flavor.name == name, models.Flavor.flavorid == flavorid),
                    )
                ).first()
                if clash is not None:
                    if earlier_run_row(session, models.Flavor, {"id": clash.id}, columns):
                        return clash
                    raise self._flavor_exists(clash, name, flavorid)
                session.add(flavor)
        except INTEGRITY_ERRORS:
            if commit_may_have_landed():
                raise  # run again: the row is this call's own (see db.retry)
            # NOTE: someone created it between our check and our insert.
            raise exception.FlavorExists(name=name) from None
        LOG.info("Created flavor %s (%s)", flavorid, name)
        return flavor

    @staticmethod
    def _flavor_exists(clash: models.Flavor, name: str, flavorid: str) -> exception.FlavorExists:
        if clash.name == name:
            return exception.FlavorExists(name=name)
        return exception.FlavorExists(
            f"A flavor with id {flavorid} already exists.", name=name, flavorid=flavorid
        )

    def flavor_get(self, flavorid: str, *, read_deleted: bool = False) -> models.Flavor:
        """Get a live flavor by its API-visible id.

        :param flavorid: the flavor's id.
        :param read_deleted: also find a deleted one (the latest).
        :returns: the flavor.
        :raises resize_sched.exception.FlavorNotFound: no such flavor.
        """
        flavor = self._first(
            models.Flavor,
            None if read_deleted else models.Flavor.deleted == 0,
            flavorid=flavorid,
            order_by=(models.Flavor.id.desc(),),
        )
        if flavor is None:
            raise exception.FlavorNotFound(flavor_id=flavorid)
        return flavor

    def flavor_get_by_name(self, name: str) -> models.Flavor:
        """Get a live flavor by name.

        :raises resize_sched.exception.FlavorNotFound: no such flavor.
        """
        flavor = self._first(models.Flavor, name=name, deleted=0)
        if flavor is None:
            raise exception.FlavorNotFound(flavor_id=name)
        return flavor

    def flavor_list(self, *, is_public: bool | None = None) -> list[models.Flavor]:
        """List live flavors, smallest first (by memory, then vCPUs, then id).

        :param is_public: only public (True) or private (False) flavors.
        """
        flavor = models.Flavor
        return self._list(
            flavor,
            deleted=0,
            optional={"is_public": is_public},
            order_by=(flavor.memory_mb, flavor.vcpus, flavor.id),
        )

    @retry_on_deadlock
    def flavor_update_extra_specs(
        self,
        flavorid: str,
        *,
        updates: Mapping[str, str] | None = None,
        remove: str | None = None,
    ) -> models.Flavor:
        """Set some extra specs of a live flavor, or remove one.

        Servers keep the snapshot they were built or resized with; new builds
        and resizes see the change.

        :param updates: keys to set (added or replaced).
        :param remove: a key to remove.
        :returns: the flavor as updated.
        :raises resize_sched.exception.FlavorNotFound: no such live flavor.
        :raises resize_sched.exception.FlavorExtraSpecNotFound: ``remove`` is not set.
        :raises resize_sched.exception.InvalidFlavor: the specs would not be
            valid; nothing written.
        """
        # NOTE: the row lock makes two read-modify-writes of one flavor's
        # specs take turns on one server. On Galera it holds on its own node
        # only, but this transaction writes the very row it locked (its
        # extra_specs and updated_at), so a concurrent update or delete of
        # the flavor committed on another node fails certification for one
        # of the two, which runs again whole on the other's result: no
        # update is lost. One that writes no change loses nothing either.
        with self._writer() as session:
            flavor = session.scalars(
                sa.select(models.Flavor)
                .where(models.Flavor.flavorid == flavorid, models.Flavor.deleted == 0)
                .with_for_update()
            ).first()
            if flavor is None:
                raise exception.FlavorNotFound(flavor_id=flavorid)
            specs = {**(flavor.extra_specs or {}), **(updates or {})}
            if remove is not None:
                if remove not in specs:
                    raise exception.FlavorExtraSpecNotFound(flavor_id=flavorid, key=remove)
                del specs[remove]
            sizes = {k: getattr(flavor, k) for k in _FLAVOR_SIZES}
            try:
                flavor.extra_specs = _checked_specs(sizes, specs, flavor.extra_specs)
            except ValueError as exc:
                raise exception.InvalidFlavor(reason=str(exc)) from None
        LOG.info("Flavor %s extra specs now %s", flavorid, specs)
        return flavor

    @retry_on_deadlock
    def flavor_delete(self, flavorid: str) -> None:
        """Soft-delete a flavor; servers keep their snapshot of it.

        :raises resize_sched.exception.FlavorNotFound: no such live flavor.
        """
        with self._writer() as session:
            result = session.execute(
                sa.update(models.Flavor)
                .where(models.Flavor.flavorid == flavorid, models.Flavor.deleted == 0)
                .values(deleted=models.Flavor.id, deleted_at=models.utcnow())
                .execution_options(synchronize_session=False)
            )
        if result.rowcount == 0:
            raise exception.FlavorNotFound(flavor_id=flavorid)
        LOG.info("Deleted flavor %s", flavorid)
