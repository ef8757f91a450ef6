"""Which provider satisfies which request group: the recorded map and its arithmetic.

Placement (microversion 1.34 and later) answers each allocation candidate
with ``mappings``: request group suffix -> the providers that satisfy it,
``""`` for the unnumbered group (which may span several providers: the root
and a sharing disk pool), a numbered group always on exactly one. We record
that map for the server's last claim (``servers.group_providers``) and, when a
resize begins, on the migration (``migrations.old_group_providers``), so a
resize can put a numbered group's increase on the provider that holds that
group, a confirm take what goes from the right group's provider, and a revert
give the old map back.

A flavor without numbered groups has no map (None) anywhere: a flat request is
handled exactly as before.
"""

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from resize_sched import resources as rs
from resize_sched.resources import Allocations, RequestGroup, Resources

#: request group suffix (``""``: unnumbered) -> provider uuids
GroupProviders = dict[str, list[str]]

#: A map is worked out only for this many numbered groups at most when it
#: must be derived from allocations (the search tries every assignment).
_MAX_DERIVED_GROUPS = 6


def from_mappings(
    mappings: Mapping[str, Sequence[str]] | None, groups: Sequence[RequestGroup]
) -> GroupProviders | None:
    """The map to record from Placement's ``mappings`` for a request with ``groups``.

    :returns: None when the request has no numbered group, or when the
        mappings do not name a provider for each of them (an answer from
        before microversion 1.34, or none at all).
    """
    if not groups or not mappings:
        return None
    out = {str(suffix): list(providers) for suffix, providers in mappings.items() if providers}
    if any(len(out.get(group.suffix, ())) != 1 for group in groups):
        return None
    return dict(sorted(out.items()))


def normalize(data: Mapping[str, Any] | None) -> GroupProviders | None:
    """A recorded map read back from JSON (lists of provider uuids), or None."""
    if not data:
        return None
    return {str(suffix): [str(rp) for rp in providers] for suffix, providers in data.items()}


def provider_of(group_providers: Mapping[str, Sequence[str]] | None, suffix: str) -> str | None:
    """The one provider a numbered group is on, or None when not recorded."""
    if not group_providers:
        return None
    providers = group_providers.get(suffix) or ()
    return providers[0] if len(providers) == 1 else None


def grouped(
    groups: Sequence[RequestGroup], group_providers: Mapping[str, Sequence[str]] | None
) -> Allocations | None:
    """Each numbered group's amounts on its recorded provider, summed.

    :returns: None when some group's provider is not recorded.
    """
    parts: list[Allocations] = []
    for group in groups:
        provider = provider_of(group_providers, group.suffix)
        if provider is None:
            return None
        parts.append(rs.on(provider, group.resources))
    return rs.add_allocations(*parts)


def subtract(
    allocations: Mapping[str, Mapping[str, int]], part: Mapping[str, Mapping[str, int]]
) -> Allocations | None:
    """``allocations - part`` provider by provider; None when ``part`` is
    not wholly inside ``allocations``."""
    out: Allocations = {rp: dict(res) for rp, res in allocations.items()}
    for rp, res in part.items():
        for rc, amount in res.items():
            left = out.get(rp, {}).get(rc, 0) - amount
            if left < 0:
                return None
            out.setdefault(rp, {})[rc] = left
    return rs.normalize_allocations(out)


def group_increase(
    original: Mapping[str, Mapping[str, int]],
    old_groups: Sequence[RequestGroup],
    new_groups: Sequence[RequestGroup],
    group_providers: Mapping[str, Sequence[str]] | None,
    old_unnumbered: Mapping[str, int],
    new_unnumbered: Mapping[str, int],
) -> Allocations | None:
    """Where a same-host resize's increase must be free, provider by provider.

    The new flavor is laid out where the server's holdings are: each
    numbered group on the provider that holds it, the unnumbered group's
    classes on the providers that hold each for the unnumbered group (the
    first of them takes a growth). What a provider must have free is what
    it then holds beyond what it holds now: ``max(old, new)`` is taken per
    provider, so two groups of one class on one provider (``group_policy=
    none``) that swap sizes need nothing more.

    :param original: what the server holds (``max_flavor`` keeps it all).
    :param group_providers: the map when the resize began.
    :returns: provider -> class -> amount (empty: nothing more is needed);
        None when it cannot be said: a new flavor's group the server does not
        hold yet, a held group without a recorded provider, or an unnumbered
        class the unnumbered group does not hold yet (Placement must say
        where it goes).
    """
    held = {group.suffix for group in old_groups}
    if any(group.suffix not in held for group in new_groups):
        return None
    held_groups = grouped(old_groups, group_providers)
    new_grouped = grouped(new_groups, group_providers)
    if held_groups is None or new_grouped is None:
        return None
    unnumbered_held = subtract(original, held_groups)
    if unnumbered_held is None:
        return None
    extra = rs.increase(old_unnumbered, new_unnumbered)
    grows = rs.spread(unnumbered_held, extra) if extra else {}
    if grows is None:
        return None
    layout = rs.add_allocations(new_grouped, rs.shrink(unnumbered_held, new_unnumbered), grows)
    return per_provider_increase(original, layout)


def per_provider_increase(
    before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]]
) -> Allocations:
    """What each provider holds in ``after`` beyond ``before``, class by class."""
    return rs.normalize_allocations(
        {rp: rs.increase(before.get(rp, {}), amounts) for rp, amounts in after.items()}
    )


def held_increase(
    old_groups: Sequence[RequestGroup],
    new_groups: Sequence[RequestGroup],
    group_providers: Mapping[str, Sequence[str]] | None,
) -> Allocations | None:
    """The increase of the numbered groups the server already holds, on the
    providers that hold them; the new flavor's groups the server does not
    hold yet are left out (Placement places them). Taken per provider: a
    group that shrinks (or goes) leaves room for another on its provider.

    :returns: provider -> class -> amount (empty: no held group grows); None
        when a held group grows and the map does not name its provider.
    """
    old_by_suffix = {group.suffix: group for group in old_groups}
    before: list[Allocations] = []
    after: list[Allocations] = []
    for group in old_groups:
        provider = provider_of(group_providers, group.suffix)
        if provider is not None:
            before.append(rs.on(provider, group.resources))
    for group in new_groups:
        old = old_by_suffix.get(group.suffix)
        if old is None:
            continue
        provider = provider_of(group_providers, group.suffix)
        if provider is None:
            if rs.increase(old.resources, group.resources):
                return None
            continue
        after.append(rs.on(provider, group.resources))
    return per_provider_increase(rs.add_allocations(*before), rs.add_allocations(*after))


def fits_beside(
    summaries: Mapping[str, Mapping[str, Any]],
    placed: Mapping[str, Mapping[str, int]],
    allocation_request: Mapping[str, Mapping[str, int]],
) -> bool:
    """Whether ``placed`` is free on its providers beside a candidate's
    ``allocation_request``, as the candidates' provider summaries say
    (``capacity`` less ``used``, every class of every provider of the tree
    from microversion 1.29).

    :returns: False when a provider of ``placed`` is not summarized (not in
        the tree asked about) or lacks room.
    """
    for rp, amounts in placed.items():
        summary = summaries.get(rp)
        if summary is None:
            return False
        inventory = summary.get("resources", {})
        for rc, amount in amounts.items():
            record = inventory.get(rc)
            if record is None:
                return False
            wanted = amount + allocation_request.get(rp, {}).get(rc, 0)
            if record.get("capacity", 0) - record.get("used", 0) < wanted:
                return False
    return True


def layout(
    current: Mapping[str, Mapping[str, int]],
    groups: Sequence[RequestGroup],
    unnumbered: Mapping[str, int],
    group_providers: Mapping[str, Sequence[str]] | None,
) -> Allocations | None:
    """``current`` shrunk to hold exactly a flavor: each numbered group's
    amounts on its recorded provider, the unnumbered group's taken from what
    is left (the providers last in ``current``'s order give first).

    :returns: None when the map does not name each group's provider, or
        ``current`` does not hold the flavor that way (not ours to shrink).
    """
    pinned = grouped(groups, group_providers)
    if pinned is None:
        return None
    rest = subtract(current, pinned)
    if rest is None:
        return None
    kept = rs.shrink(rest, unnumbered)
    if rs.total(kept) != rs.normalize(unnumbered):
        return None
    return rs.add_allocations(pinned, kept)


def derive(
    allocations: Mapping[str, Mapping[str, int]],
    groups: Sequence[RequestGroup],
    group_policy: str | None,
) -> GroupProviders | None:
    """The map of a claim whose mappings we never saw, from its allocations.

    Each numbered group is put on a provider that holds all of it (no two on
    one provider under ``isolate``); the unnumbered group on the providers
    holding what is left. The answer is kept only when it is unambiguous:
    every assignment that fits gives each group the same provider, except
    between groups asking for the very same thing (same amounts, traits and
    aggregates), which Placement could have swapped itself.

    :returns: the map; None without numbered groups, or when no assignment,
        or more than one, fits.
    """
    groups = list(groups)
    if not groups or len(groups) > _MAX_DERIVED_GROUPS:
        return None
    providers = list(allocations)
    found: list[tuple[str, ...]] = []
    for choice in itertools.product(providers, repeat=len(groups)):
        if group_policy == "isolate" and len(set(choice)) != len(choice):
            continue
        part = rs.add_allocations(*(rs.on(rp, g.resources) for rp, g in zip(choice, groups)))
        if subtract(allocations, part) is not None:
            found.append(choice)
    if not found:
        return None

    def signature(group: RequestGroup) -> Any:
        return (
            tuple(sorted(group.resources.items())),
            tuple(sorted(group.required_traits)),
            tuple(sorted(group.forbidden_traits)),
            group.member_of,
        )

    # NOTE: groups asking for the same thing are interchangeable: an
    # assignment is told from another by which providers each *kind* of
    # group is on, not by which suffix is where.
    kinds = {
        tuple(sorted((signature(g), rp) for g, rp in zip(groups, choice))) for choice in found
    }
    if len(kinds) != 1:
        return None
    choice = found[0]
    out: GroupProviders = {g.suffix: [rp] for g, rp in zip(groups, choice)}
    part = rs.add_allocations(*(rs.on(rp, g.resources) for rp, g in zip(choice, groups)))
    rest = subtract(allocations, part) or {}
    if rest:
        out[""] = [rp for rp in allocations if rp in rest]
    return dict(sorted(out.items()))


def unnumbered_of(total: Mapping[str, int], groups: Sequence[RequestGroup]) -> Resources:
    """A flavor's unnumbered amounts: its total less its numbered groups."""
    out = dict(total)
    for group in groups:
        for rc, amount in group.resources.items():
            out[rc] = out.get(rc, 0) - amount
    return rs.normalize({rc: max(n, 0) for rc, n in out.items()})


def merged(
    kept: Mapping[str, Sequence[str]] | None,
    taken: Mapping[str, Sequence[str]] | None,
    suffixes: Sequence[str],
) -> GroupProviders | None:
    """The map after a same-host claim that kept what the server held:
    each of ``suffixes`` (the new flavor's numbered groups) on the provider
    ``kept`` names, else the one ``taken`` (the candidate's mappings) names;
    the unnumbered group on the providers of both.

    :returns: None without numbered groups, or when one of them has no provider.
    """
    if not suffixes:
        return None
    kept = kept or {}
    taken = taken or {}
    out: GroupProviders = {}
    for suffix in suffixes:
        providers = list(kept.get(suffix) or taken.get(suffix) or ())
        if len(providers) != 1:
            return None
        out[suffix] = providers
    unnumbered = list(kept.get("") or ())
    unnumbered += [rp for rp in taken.get("") or () if rp not in unnumbered]
    if unnumbered:
        out[""] = unnumbered
    return dict(sorted(out.items()))
