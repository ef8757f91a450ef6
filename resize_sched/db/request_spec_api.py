"""Data API for request specs (a mixin of ``Database``).

A server's request spec records what it asks the scheduler for (resources,
required traits, host lists, scheduler hints), and nothing else: per-attempt
state such as retries and alternates is never stored there.
"""

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa

from resize_sched import exception, resources
from resize_sched.db import models
from resize_sched.db.retry import (
    commit_may_have_landed,
    earlier_run_row,
    retry_on_deadlock,
)
from resize_sched.db.session import INTEGRITY_ERRORS, SessionSource

_REQUEST_SPEC_FIELDS = frozenset(
    {
        "resources",
        "required_traits",
        "ignore_hosts",
        "force_hosts",
        "scheduler_hints",
        "availability_zone",
    }
)


def _string_list(value: Iterable[str], name: str) -> list[str]:
    if isinstance(value, str):
        raise exception.Invalid(reason=f"{name} must be a list of strings, not a string")
    items = list(value)
    if not all(isinstance(item, str) for item in items):
        raise exception.Invalid(reason=f"{name} must be a list of strings, got {items!r}")
    return items


def _check_request_spec(values: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(values) - _REQUEST_SPEC_FIELDS)
    if unknown:
        raise exception.Invalid(
            reason=f"request specs hold only {', '.join(sorted(_REQUEST_SPEC_FIELDS))}; "
            f"not {', '.join(unknown)} (per-attempt state such as retries and "
            "alternates is never stored there)"
        )
    if "resources" in values:
        try:
            values["resources"] = resources.normalize(values["resources"])
        except (AttributeError, TypeError, ValueError) as exc:
            raise exception.Invalid(reason=f"bad resources: {exc}") from None
    for key in ("required_traits", "ignore_hosts", "force_hosts"):
        if key in values:
            values[key] = _string_list(values[key], key)
    if "scheduler_hints" in values:
        hints = values["scheduler_hints"]
        if hints is None:
            hints = {}
        if not isinstance(hints, Mapping):
            raise exception.Invalid(reason=f"scheduler_hints must be a mapping, got {hints!r}")
        values["scheduler_hints"] = dict(hints)
    return values


class RequestSpecApi(SessionSource):
    """Request specs."""

    @retry_on_deadlock
    def request_spec_create(
        self,
        server_uuid: str,
        *,
        resources: dict[str, int],
        required_traits: Iterable[str],
        ignore_hosts: Iterable[str] = (),
        force_hosts: Iterable[str] = (),
        scheduler_hints: Mapping[str, Any] | None = None,
        availability_zone: str | None = None,
    ) -> models.RequestSpec:
        """Record what a server asks the scheduler for.

        :param availability_zone: the zone it must be placed in (None: any).

        :raises resize_sched.exception.ServerNotFound: no such server.
        :raises resize_sched.exception.Invalid: a bad value.
        :raises resize_sched.exception.Conflict: the server already has one.
        """
        values = _check_request_spec(
            {
                "resources": resources,
                "required_traits": required_traits,
                "ignore_hosts": ignore_hosts,
                "force_hosts": force_hosts,
                "scheduler_hints": scheduler_hints,
            }
        )
        values["availability_zone"] = availability_zone
        spec = models.RequestSpec(server_uuid=server_uuid, **values)
        try:
            with self._writer() as session:
                if session.get(models.Server, server_uuid) is None:
                    raise exception.ServerNotFound(server_id=server_uuid)
                key = {"server_uuid": server_uuid}
                found = earlier_run_row(session, models.RequestSpec, key, values)
                if found is not None:
                    return found  # type: ignore[no-any-return]
                session.add(spec)
        except INTEGRITY_ERRORS:
            if commit_may_have_landed():
                raise  # run again: the row is this call's own (see db.retry)
            raise exception.Conflict(
                reason=f"server {server_uuid} already has a request spec"
            ) from None
        return spec

    def request_spec_get(self, server_uuid: str) -> models.RequestSpec:
        """Get a server's request spec.

        :raises resize_sched.exception.RequestSpecNotFound: none recorded.
        """
        spec = self._first(models.RequestSpec, server_uuid=server_uuid)
        if spec is None:
            raise exception.RequestSpecNotFound(server_id=server_uuid)
        return spec

    @retry_on_deadlock
    def request_spec_update(self, server_uuid: str, **values: Any) -> models.RequestSpec:
        """Change what a server asks for (e.g. the new flavor's resources).

        :raises resize_sched.exception.RequestSpecNotFound: none recorded.
        :raises resize_sched.exception.Invalid: an unknown field (per-attempt
            state such as retries or alternates) or a bad value.
        """
        values = _check_request_spec(dict(values))
        with self._writer() as session:
            result = session.execute(
                sa.update(models.RequestSpec)
                .where(models.RequestSpec.server_uuid == server_uuid)
                .values(**values)
                .execution_options(synchronize_session=False)
            )
            if result.rowcount == 0:
                raise exception.RequestSpecNotFound(server_id=server_uuid)
            return session.scalars(
                sa.select(models.RequestSpec)
                .where(models.RequestSpec.server_uuid == server_uuid)
                .execution_options(populate_existing=True)
            ).one()
