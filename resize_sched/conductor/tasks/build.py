"""The build flow: record a server, choose a host, claim its flavor there.

A build involves one consumer (the server), so its claim is a single
``PUT /allocations/{server}`` expecting the consumer not to exist yet; a
refused claim moves to the next alternate, as in a resize.

Every step takes the server by compare-and-swap on the state it expects
(``BUILD``/``scheduling``, ``BUILD``/``spawning``), never while a delete is
asked for: a delete recorded first wins over every later build step, and a
stale step is a logged no-op. The claim is journaled before it is sent
(:meth:`~resize_sched.placement.server_executor.ServerTransitions.claim_server`),
under the server's lock, so none is sent once a delete is recorded; its entry
is marked ``applied`` in the transaction that records the host. A claim that
lands after a delete released everything (sent before, held up in a slow
Placement) is given back by the step when its compare-and-swap fails, and
otherwise by the reaper (:mod:`resize_sched.conductor.reaper`).
"""

from typing import Any, ClassVar

from oslo_log import log as logging

from resize_sched import actions, exception, words
from resize_sched import resources as rs
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.policy import Placed, placed_zone, policy_fields
from resize_sched.db import action_api, host_state_api
from resize_sched.placement.client import owner_trait
from resize_sched.placement.foreign import split
from resize_sched.placement.server_executor import server_classes
from resize_sched.resources import group_map as gm
from resize_sched.scheduler.manager import SchedulingRequest, flavor_filters

LOG = logging.getLogger(__name__)

#: The states a build step expects the server in (compare-and-swap).
_SCHEDULING = {"status": "BUILD", "task_state": "scheduling"}
_SPAWNING = {"status": "BUILD", "task_state": "spawning"}

#: The instance-action event of scheduling a build (os-instance-actions), Nova's name.
SCHEDULE_EVENT = "conductor_schedule_and_build_instances"


class BuildTask:
    """Creates servers and places them.

    The placing (schedule, claim, the host's report) is shared with an
    unshelve of an offloaded server (:mod:`.shelve`), which names its own
    states, action and outcome of a failure through the class attributes
    and hooks below.

    :param deps: configuration, database, Placement client, scheduler.
    """

    #: The state scheduling expects the server in, and the state while its
    #: host spawns it (compare-and-swap).
    SCHEDULING: ClassVar[dict[str, Any]] = _SCHEDULING
    SPAWNING: ClassVar[dict[str, Any]] = _SPAWNING
    #: The scheduling step's instance-action event and the action it belongs to.
    SCHEDULE_EVENT: ClassVar[str] = SCHEDULE_EVENT
    ACTION: ClassVar[str] = action_api.CREATE
    #: What the placing is called in the log and in conflicts.
    WHAT: ClassVar[str] = "Build"

    def __init__(self, deps: TaskDeps) -> None:
        self.deps = deps
        self.db = deps.db

    def create(
        self,
        *,
        name: str,
        flavorid: str,
        project_id: str,
        user_id: str,
        force_hosts: tuple[str, ...] = (),
    ) -> Any:
        """Record a server in BUILD with its request spec; no Placement call.

        :raises FlavorNotFound: unknown flavor.
        """
        return actions.create_server(
            self.db,
            name=name,
            flavorid=flavorid,
            project_id=project_id,
            user_id=user_id,
            force_hosts=force_hosts,
        )

    def schedule(self, server_uuid: str) -> Any:
        """Choose a host and claim the flavor there; the host spawns it next.

        Recorded as the ``create`` action's ``conductor_schedule_and_build_instances``
        event.

        :returns: the server, ``spawning`` on its host; None when nothing
            fitted but the server had moved on meanwhile (a delete recorded:
            it stays recorded, and nothing is written).
        :raises NoValidHost: nothing fits; the server goes to ERROR with a fault.
        """
        said: list[str] = []
        with self.db.action_event(
            server_uuid,
            self.SCHEDULE_EVENT,
            (self.ACTION,),
            host=self.deps.conf.host,
            said=said,
        ):
            return self._schedule(server_uuid, said)

    def _forced_hosts(self, spec: Any) -> frozenset[str]:
        """The hosts the scheduler must choose among (a build: those forced at create)."""
        return frozenset(spec.force_hosts)

    def _no_host(self, server: Any, exc: exception.NoValidHost, group: Any) -> str:
        """Record that nothing fitted (compare-and-swap on :attr:`SCHEDULING`);
        a build goes to ERROR. Returns the words recorded.

        :raises ServerStateConflict, ServerNotFound: the server moved on.
        """
        said = words.no_host_for_build(exc, server.flavor, group)
        # NOTE: compare-and-swap on the state the build left it in: a
        # delete recorded meanwhile (``deleting``) must stay recorded, or
        # the delete's own compare-and-swap fails and the server stays
        # ERROR, never deleted.
        self.db.server_update(
            server.uuid,
            expected=self.SCHEDULING,
            operation="fail the build",
            status="ERROR",
            vm_state="error",
            task_state=None,
            fault_message=said,
            fault_code=500,
        )
        return said

    def _schedule(self, server_uuid: str, said: list[str]) -> Any:
        server = self.db.server_get(server_uuid)
        spec = self.db.request_spec_get(server_uuid)
        # NOTE: the amounts and traits come from the flavor the server has
        # now, not from its request spec: a confirmed resize changes the
        # first and not the second, and an unshelve from offloaded must claim
        # the new flavor (for a build the two are the same).
        request = SchedulingRequest(
            destination_request=dict(rs.stored_request(server.flavor).resources),
            **flavor_filters(server.flavor),
            ignore_hosts=frozenset(spec.ignore_hosts),
            force_hosts=self._forced_hosts(spec),
            **policy_fields(
                self.db,
                Placed.of_server(server),
                spec,
                flavor=server.flavor,
                moving=False,
                conf=self.deps.conf,
            ),
        )
        refused: list[exception.GroupPolicyViolation] = []
        try:
            selection = self.deps.scheduler.select_destinations(request)
            for dest in selection.destinations:
                try:
                    entry_id, generation = self.deps.executor.claim_server(
                        server, dest.allocation_request, expected=self.SCHEDULING
                    )
                except exception.ClaimRefused as exc:
                    LOG.info(
                        "%s of %s: claim on %s refused (%s)",
                        self.WHAT,
                        server_uuid,
                        dest.host,
                        exc,
                    )
                    continue
                except (exception.ServerStateConflict, exception.ServerNotFound) as exc:
                    # NOTE: a delete (or another run of this build) got there
                    # first; checked under the server's lock before the write,
                    # so nothing was claimed.
                    LOG.info(
                        "%s of %s: not claiming on %s: %s", self.WHAT, server_uuid, dest.host, exc
                    )
                    return None
                try:
                    placed = self.db.server_advance(
                        server_uuid,
                        expected=self.SCHEDULING,
                        operation="place",
                        applied=[entry_id],
                        group_check=request.group is not None,
                        task_state="spawning",
                        host=dest.host,
                        node=dest.host,
                        availability_zone=(
                            request.availability_zone
                            or placed_zone(self.db, dest.host, self.deps.conf)
                        ),
                        rp_uuid=dest.provider,
                        placement_generation=generation,
                        # NOTE: a tree's child or a sharing provider holds part.
                        allocations=(
                            dest.allocation_request
                            if set(dest.allocation_request) != {dest.provider}
                            else None
                        ),
                        **_group_providers(request.groups, dest.mappings),
                    )
                except exception.GroupPolicyViolation as exc:
                    # NOTE: the late check (Nova's): a member racing onto the
                    # same host recorded it first. Give the claim back and try
                    # the next alternate.
                    LOG.info("%s of %s: %s; next alternate", self.WHAT, server_uuid, exc)
                    refused.append(exc)
                    self.db.server_journal_mark(entry_id, "applied", "landed; policy refused")
                    try:
                        self.deps.executor.release_server(
                            server, "policy refused", expected=self.SCHEDULING, whole=False
                        )
                    except (exception.ServerStateConflict, exception.ServerNotFound):
                        # NOTE: a delete recorded meanwhile releases it all.
                        return None
                    continue
                except (exception.ServerStateConflict, exception.ServerNotFound):
                    # NOTE: deleted while we were claiming: give the room back
                    # rather than leak it; unless recovery adopted this very
                    # claim meanwhile (it is the server's now).
                    self.db.server_journal_mark(entry_id, "applied", "landed; the server moved on")
                    if not self._adopted(server_uuid, dest.provider):
                        self._give_back(server)
                    raise
                LOG.info("Server %s placed on %s (%s)", server_uuid, dest.host, self.WHAT.lower())
                return placed
            if refused:
                raise exception.NoValidHost(
                    kind=exception.NoValidHost.DEFERRED,
                    reason=f"the server group's policy refused every candidate host "
                    f"({refused[-1].kwargs['reason']})",
                )
            raise exception.NoValidHost(
                kind=exception.NoValidHost.DEFERRED,
                reason="every candidate host refused the claim",
            )
        except exception.NoValidHost as exc:
            try:
                said.append(self._no_host(server, exc, request.group))
            except (exception.ServerStateConflict, exception.ServerNotFound) as lost:
                LOG.info(
                    "%s of server %s ended without a host, not recorded: %s",
                    self.WHAT,
                    server_uuid,
                    lost,
                )
                return None
            raise

    def _give_back(self, server: Any) -> None:
        """Release, journaled, what a claim that lost to a delete left."""
        try:
            self.deps.executor.release_server(server, "give back")
        except exception.PlacementError as exc:
            # NOTE: the reaper gives it back once the server is deleted.
            LOG.warning("Server %s: give-back left to the reaper: %s", server.uuid, exc)

    def adopt(self, server_uuid: str) -> Any | None:
        """Take on a claim that Placement holds but the database never recorded.

        The conductor stopped (or its message was lost) between the claim and
        the database update that names the host. The claim names the host, so
        the build goes on there rather than claiming a second time.

        :returns: the server, now ``spawning`` on the claimed host, or None
            when Placement holds nothing for it (it must be scheduled again).
        :raises ServerStateConflict: the build moved on meanwhile.
        """
        held = self.deps.client.get_allocations(server_uuid)
        # NOTE: what other services put on its consumer (a port's bandwidth)
        # is not our claim: it names no host of ours.
        ours = server_classes(self.db.server_get(server_uuid))
        allocations = held.allocations if ours is None else split(held.allocations, ours)[0]
        # NOTE: the claims journaled for it are settled by the same read.
        self.deps.executor.settle_server(server_uuid, allocations)
        if held.generation is None or not allocations:
            return None
        # NOTE: a build claims on its host's root provider, named after the
        # host, and on a tree also on children and a sharing disk pool: the
        # host is the root that carries this deployment's owner trait.
        client = self.deps.client
        rp_uuid = next(iter(allocations))
        if len(allocations) > 1:
            roots = {client.get_resource_provider(rp)["root_provider_uuid"] for rp in allocations}
            owner = owner_trait(self.deps.conf.placement.deployment_name)
            rp_uuid = next((r for r in sorted(roots) if owner in client.get_traits(r)[0]), rp_uuid)
        host = client.get_resource_provider(rp_uuid)["name"]
        LOG.info("Server %s: adopting its claim on %s", server_uuid, host)
        return self.db.server_update(
            server_uuid,
            expected=self.SCHEDULING,
            operation="adopt the claim",
            task_state="spawning",
            host=host,
            node=host,
            rp_uuid=rp_uuid,
            placement_generation=held.generation,
            allocations=allocations if set(allocations) != {rp_uuid} else None,
            **_adopted_group_providers(server_uuid, self.db, allocations),
        )

    def _adopted(self, server_uuid: str, rp_uuid: str) -> bool:
        try:
            server = self.db.server_get(server_uuid)
        except exception.ServerNotFound:
            return False
        return server.rp_uuid == rp_uuid and server.placement_generation is not None

    def spawned(self, server_uuid: str) -> Any:
        """The host spawned the server: it becomes ACTIVE, and (a build) its
        node's count of failed builds (the BuildFailureWeigher's) starts again
        from 0 in the same transaction."""
        server = self.db.server_get(server_uuid)
        done = self.db.server_update(
            server_uuid,
            expected={**self.SPAWNING, "rp_uuid": server.rp_uuid},
            operation=f"finish the {self.WHAT.lower()}",
            then=self._spawn_result(server.rp_uuid, failed=False),
            status="ACTIVE",
            vm_state="active",
            task_state=None,
            **self._spawned_values(),
        )
        self._counted(server.rp_uuid)
        return done

    def _counted(self, rp_uuid: str | None) -> None:
        """After a spawn's outcome is committed: this conductor's scheduler
        reads the node's count of failed builds again at its next request
        (other conductors' within ``[scheduler] compute_node_cache_seconds``)."""
        if rp_uuid is not None:
            self.deps.scheduler.nodes.forget(rp_uuid)

    def _spawned_values(self) -> dict[str, Any]:
        """More columns to set once the server runs (a build: none)."""
        return {}

    def _spawn_result(self, rp_uuid: str | None, *, failed: bool) -> Any:
        """The work done in the transaction of a spawn's outcome (a build:
        its node's count of failed builds)."""
        return _build_result(rp_uuid, failed=failed)

    def _failed_values(self, reason: str) -> dict[str, Any]:
        """The server's state once its spawn failed and the claim is given
        back (a build: ERROR with the fault)."""
        return {
            "status": "ERROR",
            "vm_state": "error",
            "task_state": None,
            "fault_message": reason,
            "fault_code": 500,
        }

    def fail(self, server_uuid: str, reason: str) -> Any:
        """The host failed to spawn: release the claim; a build goes to ERROR.

        :returns: the server, or None when it is no longer spawning
            (a duplicate report, or a delete asked for: it releases itself).
        """
        try:
            server = self.db.server_get(server_uuid)
        except exception.ServerNotFound:
            server = None
        spawning = (self.SPAWNING["status"], self.SPAWNING["task_state"])
        if server is None or (server.status, server.task_state) != spawning:
            LOG.info(
                "%s of server %s: spawn failure not due; nothing to do", self.WHAT, server_uuid
            )
            return None
        try:
            self.deps.executor.release_server(
                server, "spawn failed", expected=self.SPAWNING, whole=False
            )
        except (exception.ServerNotFound, exception.ServerStateConflict) as exc:
            LOG.info(
                "%s of server %s: spawn failure not due (%s); nothing to do",
                self.WHAT,
                server_uuid,
                exc,
            )
            return None
        LOG.warning("%s of server %s failed: %s", self.WHAT, server_uuid, reason)
        # NOTE: the server is on no host now; heal must not give it room back.
        # The node it failed on counts one failed build more, in the same
        # transaction (a duplicate report changes nothing: it finds ERROR).
        try:
            failed = self.db.server_update(
                server_uuid,
                expected=self.SPAWNING,
                operation=f"fail the {self.WHAT.lower()}",
                then=self._spawn_result(server.rp_uuid, failed=True),
                host=None,
                node=None,
                rp_uuid=None,
                placement_generation=None,
                **self._failed_values(reason),
            )
        except (exception.ServerNotFound, exception.ServerStateConflict) as exc:
            LOG.info("%s of server %s: %s", self.WHAT, server_uuid, exc)
            return None
        self._counted(server.rp_uuid)
        return failed


def _build_result(rp_uuid: str | None, *, failed: bool) -> Any:
    """The failed-builds change of a build step, run in its transaction."""
    if rp_uuid is None:
        return None
    return lambda session: host_state_api.record_build_result(session, rp_uuid, failed=failed)


def _group_providers(
    groups: tuple[rs.RequestGroup, ...], mappings: dict[str, list[str]] | None
) -> dict[str, Any]:
    """The ``group_providers`` column to set with a build's claim: Placement's
    mappings for the candidate claimed; nothing for a flat flavor (the same
    statement as ever)."""
    if not groups:
        return {}
    return {"group_providers": gm.from_mappings(mappings, groups)}


def _adopted_group_providers(
    server_uuid: str, db: Any, allocations: dict[str, dict[str, int]]
) -> dict[str, Any]:
    """The ``group_providers`` of an adopted claim.

    ``GET /allocations/{consumer}`` has no mappings: the map is read from the
    allocations when only one reading fits (:func:`group_map.derive`).
    """
    request = rs.stored_request(db.server_get(server_uuid).flavor)
    if not request.groups:
        return {}
    found = gm.derive(allocations, request.groups, request.group_policy)
    if found is None:
        # NOTE: two groups that could be on either of two providers: left
        # unknown rather than guessed. A resize then reads it from the
        # holdings again, and grows each class on the first provider holding
        # it, as before the map existed; the next claim records a map.
        LOG.warning(
            "Server %s: adopted claim does not say which provider holds which group", server_uuid
        )
    return {"group_providers": found}
