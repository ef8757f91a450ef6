"""The claim strategy contract.

A claim strategy decides, for each phase of a resize, what the two Placement
consumers involved should hold: the **server** (its instance uuid) and the
**migration** (its migration uuid). It is a pure function of the resize's
facts (source provider, old and new amounts, what the server held before) and
the phase; it never talks HTTP. The transition executor
(:mod:`resize_sched.placement.executor`) turns "current holdings -> target
holdings" into one atomic Placement write, and the scheduler runs the queries
the strategy asks for.

Phases and who calls them:

``prepare``
    before scheduling (the conductor, once per resize);
``source_request`` / ``destination_request``
    what Placement is asked for, for the source and for every other host;
``claim``
    the target once a host is chosen, and again for each alternate after a
    refused claim or a failed ``prep_resize`` (the executor goes from whatever
    is held now straight to the new target, in one write);
``restore``
    the resize ends without a host: the server gets exactly what it had;
``confirm`` / ``revert``
    the operator's decision after VERIFY_RESIZE. A confirm only releases
    (it empties the migration consumer; the server keeps what its claim gave
    it), so Placement never refuses it; a revert writes the server back to
    ``facts.original``, which Placement checks like any claim.

``claim_groups``
    which provider holds which request group once the claim is written (the
    map recorded on the server; see :mod:`resize_sched.resources.group_map`).

A strategy may raise nothing but ``ValueError`` for facts it cannot handle;
Placement errors come from the executor, not from here.
"""

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from resize_sched import resources as rs
from resize_sched.resources import Allocations, Resources
from resize_sched.resources import group_map as gm


@dataclass(frozen=True)
class Holdings:
    """What the server consumer and the migration consumer hold."""

    server: Allocations = field(default_factory=dict)
    migration: Allocations = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "server", rs.normalize_allocations(self.server))
        object.__setattr__(self, "migration", rs.normalize_allocations(self.migration))

    def to_dict(self) -> dict[str, Any]:
        return {"server": self.server, "migration": self.migration}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Holdings":
        return cls(server=data.get("server") or {}, migration=data.get("migration") or {})


@dataclass(frozen=True)
class ResizeFacts:
    """What a strategy knows about one resize; fixed when the resize begins.

    :ivar source: resource provider uuid of the host the server runs on.
    :ivar old: the old flavor's amounts.
    :ivar new: the new flavor's amounts.
    :ivar old_groups: / :ivar new_groups: the numbered request groups of
        each flavor (their amounts are part of ``old`` and ``new``).
    :ivar group_policy: the new flavor's ``group_policy``.
    :ivar original: what the server held before the resize began (normally
        ``{source: old}``); restore and revert give back exactly this.
    :ivar group_providers: which provider held which request group when the
        resize began (suffix -> provider uuids, ``""`` unnumbered; see
        :mod:`resize_sched.resources.group_map`); None when the old flavor has no
        numbered group or it is not known. Restore and revert give it back.
    :ivar claimed_groups: the map our claim recorded for the new flavor,
        known from the claim on (the confirm's shrink reads it); None before,
        or when unknown.
    """

    source: str
    old: Resources
    new: Resources
    original: Allocations = field(default_factory=dict)
    old_groups: tuple[rs.RequestGroup, ...] = ()
    new_groups: tuple[rs.RequestGroup, ...] = ()
    group_policy: str | None = None
    group_providers: Mapping[str, list[str]] | None = None
    claimed_groups: Mapping[str, list[str]] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "old", rs.normalize(self.old))
        object.__setattr__(self, "new", rs.normalize(self.new))
        original = self.original or rs.on(self.source, self.old)
        object.__setattr__(self, "original", rs.normalize_allocations(original))

    @property
    def increase(self) -> Resources:
        """Per class ``new - old``, negatives as 0."""
        return rs.increase(self.old, self.new)

    def group_increase(self) -> Allocations | None:
        """The increase provider by provider when the map says where each
        numbered group is: a group grows on its own provider, the unnumbered
        classes where the unnumbered group holds them.

        :returns: None when there is no map, a new group is added (Placement
            places it), or it cannot be said (see :func:`group_map.group_increase`).
        """
        if not self.group_providers or not self.new_groups:
            return None
        return gm.group_increase(
            self.original,
            self.old_groups,
            self.new_groups,
            self.group_providers,
            gm.unnumbered_of(self.old, self.old_groups),
            gm.unnumbered_of(self.new, self.new_groups),
        )


class ClaimStrategy(abc.ABC):
    """Base of every claim strategy (entry points in ``resize_sched.claim_strategies``).

    Subclasses implement :meth:`prepare`, :meth:`source_request` and
    :meth:`claim`. :meth:`restore`, :meth:`confirm` and :meth:`revert` have
    defaults that hold for the three built-in strategies.
    """

    #: The entry-point name; written on each migration the strategy starts.
    name: ClassVar[str]
    #: Whether a same-host :meth:`claim` adds the candidate to what the server
    #: holds (each group it held staying on its provider) rather than
    #: replacing it; :meth:`claim_groups` records the groups accordingly.
    claims_beside_held: ClassVar[bool] = False

    @abc.abstractmethod
    def prepare(self, facts: ResizeFacts) -> Holdings:
        """Target holdings before scheduling starts.

        :param facts: the resize.
        :returns: what both consumers hold while candidates are looked for.
        """

    def destination_request(self, facts: ResizeFacts) -> Resources:
        """What any host other than the source must have free: the new flavor."""
        return dict(facts.new)

    @abc.abstractmethod
    def source_request(self, facts: ResizeFacts) -> Resources:
        """What the source must have free, once :meth:`prepare` is applied, to
        keep the server.

        The scheduler asks Placement for it with ``in_tree=<source>`` (or, when
        :meth:`source_placement` names the providers, reads their usage), or, when
        it equals :meth:`destination_request`, reads the source's answer from
        the query over every host. An empty result means the source fits
        without asking.
        """

    def source_placement(self, facts: ResizeFacts) -> Allocations:
        """Where on the source's providers :meth:`source_request` must be
        free, provider by provider, when it must stay beside what the server
        holds (a vGPU on its child, a disk on its sharing provider).

        :returns: provider -> class -> amount; empty (the default) when any
            provider of the source's tree will do, as Placement finds it.
        """
        return {}

    def source_groups(self, facts: ResizeFacts) -> tuple[rs.RequestGroup, ...]:
        """Numbered groups the source must satisfy as groups (each from one
        provider, away from the providers the server's groups hold under
        ``group_policy=isolate``), beside :meth:`source_placement`; none by
        default."""
        return ()

    @abc.abstractmethod
    def claim(self, facts: ResizeFacts, dest: str, allocation_request: Allocations) -> Holdings:
        """Target holdings once ``dest`` is chosen.

        :param dest: the chosen provider (equal to ``facts.source`` for a
            same-host resize).
        :param allocation_request: the candidate Placement returned for
            ``dest``, i.e. exactly what was asked of it.
        """

    def claim_groups(
        self,
        facts: ResizeFacts,
        dest: str,
        allocation_request: Allocations,
        mappings: Mapping[str, list[str]] | None,
    ) -> gm.GroupProviders | None:
        """Which provider holds which of the new flavor's request groups once
        :meth:`claim` is written for ``dest``: recorded on the server, and
        what :meth:`confirm` reads back as ``facts.claimed_groups``.

        When the server's claim is the candidate itself: Placement's
        ``mappings`` for it, or, when the candidate came without them, what
        its allocations say unambiguously. When a same-host claim keeps what
        the server held (:attr:`claims_beside_held`): a group it held stays
        on its provider, a new group is where the candidate put it.

        :param mappings: the candidate's ``mappings`` (None: not given).
        :returns: None when the new flavor has no numbered group, or it
            cannot be said.
        """
        if dest == facts.source and self.claims_beside_held:
            return gm.merged(
                facts.group_providers, mappings, [group.suffix for group in facts.new_groups]
            )
        return gm.from_mappings(mappings, facts.new_groups) or gm.derive(
            allocation_request, facts.new_groups, facts.group_policy
        )

    def restore(self, facts: ResizeFacts) -> Holdings:
        """The resize ends without a host: the server holds what it held before."""
        return Holdings(server=facts.original)

    def kept(self, facts: ResizeFacts, held: Allocations, dest: str) -> Allocations:
        """What the server keeps of ``held`` on its own host once the resize
        is confirmed: the new flavor, provider by provider, from the providers
        that hold it (each numbered group on the provider
        ``facts.claimed_groups`` names).

        A same-host claim that holds more than the new flavor while the
        resize waits (``max_flavor``) splits its holding with this: the server
        gets what it keeps, the migration the rest, so that a confirm only
        empties the migration.
        """
        # NOTE: per provider, so what stays (a vGPU on its child, a disk on a
        # sharing provider) is kept nowhere but where it is held; only a
        # holding that does not cover the new flavor (not ours to shrink)
        # falls back to the new flavor on the root.
        kept = None
        if facts.new_groups:
            # NOTE: two groups of one class on two providers: what goes must
            # come from the group that shrinks, not from whichever provider
            # is last.
            kept = gm.layout(
                held,
                facts.new_groups,
                gm.unnumbered_of(facts.new, facts.new_groups),
                facts.claimed_groups,
            )
        if kept is None:
            kept = rs.shrink(held, facts.new)
        if rs.total(kept) != facts.new:
            kept = rs.on(dest, facts.new)
        return kept

    def confirm(self, facts: ResizeFacts, current: Holdings, dest: str) -> Holdings:
        """The resize is confirmed: the server keeps what it holds, the
        migration's holding is given back.

        A confirm only releases: every strategy's claim already gives the
        server exactly the new flavor where it runs, and what the resize held
        beyond it is the migration's (the source of another host, or the
        excess of a same-host ``max_flavor`` claim), so the one write empties
        the migration consumer, which Placement never refuses for capacity or
        inventory. The server's consumer is not written at all.

        Compatibility: a same-host resize claimed before that split (the
        server holding ``max(old, new)``, the migration nothing) is shrunk
        to :meth:`kept`, as it always was.
        """
        if dest == facts.source and rs.total(current.server) != facts.new:
            return Holdings(server=self.kept(facts, current.server, dest))
        return Holdings(server=current.server)

    def revert(self, facts: ResizeFacts, current: Holdings, dest: str) -> Holdings:
        """The resize is reverted: only the old flavor remains, on the source
        (``facts.original``, each group on the provider it was on)."""
        return Holdings(server=facts.original)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
