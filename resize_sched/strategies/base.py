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
    the operator's decision after VERIFY_RESIZE.

A strategy may raise nothing but ``ValueError`` for facts it cannot handle;
Placement errors come from the executor, not from here.
"""

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from resize_sched import resources as rs
from resize_sched.resources import Allocations, Resources


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
    """

    source: str
    old: Resources
    new: Resources
    original: Allocations = field(default_factory=dict)
    old_groups: tuple[rs.RequestGroup, ...] = ()
    new_groups: tuple[rs.RequestGroup, ...] = ()
    group_policy: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "old", rs.normalize(self.old))
        object.__setattr__(self, "new", rs.normalize(self.new))
        original = self.original or rs.on(self.source, self.old)
        object.__setattr__(self, "original", rs.normalize_allocations(original))

    @property
    def increase(self) -> Resources:
        """Per class ``new - old``, negatives as 0."""
        return rs.increase(self.old, self.new)


class ClaimStrategy(abc.ABC):
    """Base of every claim strategy (entry points in ``resize_sched.claim_strategies``).

    Subclasses implement :meth:`prepare`, :meth:`source_request` and
    :meth:`claim`. :meth:`restore`, :meth:`confirm` and :meth:`revert` have
    defaults that hold for the three built-in strategies.
    """

    #: The entry-point name; written on each migration the strategy starts.
    name: ClassVar[str]

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

    def restore(self, facts: ResizeFacts) -> Holdings:
        """The resize ends without a host: the server holds what it held before."""
        return Holdings(server=facts.original)

    def confirm(self, facts: ResizeFacts, current: Holdings, dest: str) -> Holdings:
        """The resize is confirmed: only the new flavor remains, where the server runs.

        On the same host the server keeps ``new`` alone (whatever extra it held
        while the resize was pending is released, provider by provider, from
        the providers that hold it); on another host the
        migration's holdings on the source are dropped.
        """
        if dest == facts.source:
            # NOTE: per provider, so what stays (a vGPU on its child, a disk
            # on a sharing provider) is released nowhere but where it is
            # held; only a holding that does not cover the new flavor (not
            # ours to shrink) falls back to the new flavor on the root.
            kept = rs.shrink(current.server, facts.new)
            if rs.total(kept) != facts.new:
                kept = rs.on(dest, facts.new)
            return Holdings(server=kept)
        return Holdings(server=current.server)

    def revert(self, facts: ResizeFacts, current: Holdings, dest: str) -> Holdings:
        """The resize is reverted: only the old flavor remains, on the source."""
        return Holdings(server=facts.original)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
