"""Options of the ``[resize]`` group: how a resize claims resources."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    "resize",
    title="Resize options",
    help="How the conductor claims Placement resources while a server is resized.",
)

OPTS = [
    # NOTE: a plain string, not ``choices``: a third party may ship a strategy
    # in its own package under the resize_sched.claim_strategies namespace.
    cfg.StrOpt(
        "claim_strategy",
        default="max_flavor",
        mutable=True,
        help="Name of the claim strategy for new resizes, an entry point in the "
        "resize_sched.claim_strategies namespace. Built in: 'legacy' (Nova's "
        "behaviour: the source keeps the old flavor on the migration and the new "
        "flavor is claimed on top, so a full host can never be resized in place), "
        "'drop_and_reclaim' (drops the old flavor before scheduling, so the source "
        "competes on its freed room; the old flavor is re-claimed if another host "
        "is chosen) and 'max_flavor' (nothing is dropped; the source is asked only "
        "for the per-class increase and holds max(old, new) until confirm or "
        "revert, so a revert always fits). A resize keeps the strategy it started "
        "with; changing this (SIGHUP reloads it) affects only new resizes.",
    ),
    cfg.BoolOpt(
        "allow_same_host",
        default=True,
        help="Allow a resize to stay on its current host. Turn it off to force "
        "every resize onto another host, e.g. to drain hosts while resizing.",
    ),
    cfg.BoolOpt(
        "prefer_same_host",
        default=False,
        help="Ask Placement about the source host alone first and query every host "
        "only when the source cannot take the resize. A source-only query costs "
        "about the same at any cloud size, while a query over every host grows "
        "with the number of hosts (about 0.8 s at 10,000), so large clouds resize "
        "faster with this on, at the price of packing servers where they are. "
        "Ignored when allow_same_host is false.",
    ),
]
