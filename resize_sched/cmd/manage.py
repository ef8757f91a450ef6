"""``resize-sched-manage``: operator commands, in the manner of ``nova-manage``.

    resize-sched-manage [--config-file FILE] db sync [REVISION]
    resize-sched-manage [--config-file FILE] db version
    resize-sched-manage [--config-file FILE] placement heal [--dry-run]
    resize-sched-manage [--config-file FILE] placement audit [--delete]
    resize-sched-manage [--config-file FILE] placement sync_aggregates [--dry-run]
    resize-sched-manage [--config-file FILE] host disable HOST
    resize-sched-manage [--config-file FILE] host enable HOST
    resize-sched-manage [--config-file FILE] host show HOST
    resize-sched-manage [--config-file FILE] host holders HOST

Results go to stdout, logs to stderr. Exit codes: 0 success, 1 error (with a
one-line message on stderr); ``placement heal`` also exits 1 when a server is
still missing its allocation, ``placement audit`` 3 when orphaned allocations
were found and left in place, ``host holders`` 2 when something still holds
the host.

The ``placement`` and ``host`` commands see only this deployment's hosts:
resource providers with the owner trait of ``[placement] deployment_name``.
"""

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from alembic.util import CommandError
from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import conf as rs_conf
from resize_sched import exception
from resize_sched.cmd import host_holders, host_tree, parse_or_exit_code, setup_logging
from resize_sched.conductor import audit, heal
from resize_sched.db import ERRORS as DB_ERRORS
from resize_sched.db import driver_error
from resize_sched.db.api import Database
from resize_sched.placement import aggregates as placement_aggregates
from resize_sched.placement.client import PlacementClient, owner_trait
from resize_sched.scheduler import hosts

LOG = logging.getLogger(__name__)

PROG = "resize-sched-manage"
DESCRIPTION = (
    "Administer a resize_sched deployment. 'db sync' creates the database schema or "
    "upgrades it to the version this code needs (run it before starting services after "
    "an install or upgrade; running it again changes nothing); 'db version' prints the "
    "schema revision the database is at. The database is [database] connection in the "
    "config file. 'placement heal' re-claims what servers should hold in Placement; "
    "'placement audit' finds allocations no server or resize of ours accounts for "
    "(Placement is reached through the [placement] options); 'host disable' and 'host "
    "enable' stop and resume scheduling to a host, 'host show' prints a host's provider "
    "tree. 'migration list' and 'migration show' print resizes with what the Compute API "
    "does not show: the claim strategy each runs with and why one failed. Only this "
    "deployment's hosts, the "
    "providers with the owner trait of [placement] deployment_name, are ever read or "
    "changed."
)

MIGRATION_HELP = (
    "Resizes as our records hold them: the claim strategy each runs with (fixed when it "
    "began), and for a failed one its error kind (deferred: no host has room now; "
    "infeasible: no host ever could; failed: anything else) and reason. The Compute API's "
    "os-migrations shows only Nova's fields."
)

#: ``placement audit``: orphaned allocations were found and are still there.
EXIT_ORPHANS_LEFT = 3

HEAL_HELP = (
    "Give every live server that lacks it exactly its flavor's allocation on its host: "
    "servers flagged by a failed restore (the resize's journal records the heal), and "
    "ACTIVE or ERROR servers with a host whose allocation is missing or differs. Servers "
    "with a resize in flight are skipped. Prints one line per server healed ('healed "
    "UUID on HOST: RESOURCES') or not ('still missing UUID on HOST: REASON'), then "
    "counts. Exit codes: 0 nothing is missing any more; 1 a server is still missing its "
    "allocation (e.g. its host has no room: free some and run it again), or an error. "
    "With --dry-run: 0 nothing to heal, 1 something would be healed or is missing. Only "
    "this deployment's hosts are healed; a server's allocations on providers that are "
    "not ours are left as they are."
)
AUDIT_HELP = (
    "List, provider by provider, allocations whose consumer is neither a live server "
    "of ours on that provider nor a resize of ours in flight (nor that resize's "
    "server on its source or destination). Prints one line per orphan, then counts. "
    "With --delete, each orphan is re-read and removed with a generation-checked "
    "write (the consumer's allocations on other providers are kept); one that changed "
    "meanwhile is left and reported. Only this deployment's hosts (their roots and the "
    "children its compute services created) and the sharing providers (disk pools) are "
    "audited, and on a pool only our own servers' and resizes' allocations: providers "
    "registered by other services or deployments, and their consumers, are never listed "
    "or changed. Exit codes: 0 no orphans, or all deleted; 1 an error; 3 "
    "orphans found and left in place."
)
SYNC_AGGREGATES_HELP = (
    "Make the root resource provider of every compute host a member, in Placement, of "
    "exactly the host aggregates (os-aggregates) its host is in, as each aggregate's uuid, "
    "so that availability zones and tenant isolation asked of Placement see the hosts "
    "os-aggregates lists. Run it after a host's provider was re-created, or when "
    "os-aggregates changed while Placement was down. Aggregates that are not ours (another "
    "service's, a shared disk pool's) are never added, removed or changed. Prints one line "
    "per change ('added provider ... to aggregate ...', 'removed ...'), hosts in an "
    "aggregate with no provider yet, and providers that could not be synced. Exit codes: 0 "
    "done (or nothing to change); 1 a provider could not be synced, or an error. With "
    "--dry-run nothing is written and the lines say what would change."
)
HOST_HELP = (
    "Disable a host (no new build or resize lands on it, not even a resize that stays "
    "on it; its servers keep running and resizes in flight finish) or enable it again, "
    "by setting or clearing the COMPUTE_STATUS_DISABLED trait on its resource provider "
    "in Placement, as Nova does for a disabled compute service, and recording it on the "
    "host's compute service (what os-services shows; as 'openstack compute service set "
    "--disable' does). HOST is the compute service's [DEFAULT] host. Exit codes: 0 done "
    "(or it already was so); 1 no host of this deployment has that name, or an error."
)

HOST_SHOW_HELP = (
    "Print a host's resource provider tree as Placement holds it: the root (the host's "
    "compute node) and every provider under it, indented under its parent, each with its "
    "inventory (total, reserved and allocation ratio when not the defaults, and what "
    "consumers use), its traits, and who owns it: 'ours' (the root, with this "
    "deployment's owner trait; a child, with its child trait, which the host's compute "
    "service created and keeps) or 'another service's' (a child someone else put under "
    "the root, e.g. Neutron's bandwidth or Cyborg's devices, which nothing here writes "
    "to). Children of ours are also checked against the host's last report to the "
    "conductor (the compute node's children, which os-hypervisors counts): one not "
    "reported, or reported but gone from Placement, is flagged. Reads only. HOST is the "
    "compute service's [DEFAULT] host. Exit codes: 0 printed; 1 no host of this "
    "deployment has that name, or an error."
)

HOST_HOLDERS_HELP = (
    "Report what still holds a host being drained: the servers recorded on it, the moves "
    "in flight from or to it (resizes and cold migrations whose migration record holds "
    "room there until confirmed or reverted), and every allocation in Placement on its "
    "providers, each named as a server of ours, a move of ours, or not ours. Reads only. "
    "HOST is the compute service's [DEFAULT] host. Exit codes: 0 nothing holds it (it "
    "may be taken down); 2 something still does; 1 no host of this deployment has that "
    "name, or an error."
)

#: ``host holders``: something still holds the host.
EXIT_HELD = 2

Command = Callable[[cfg.ConfigOpts], int]
_Report = TypeVar("_Report")


def _db_sync(conf: cfg.ConfigOpts) -> int:
    with Database.from_conf(conf) as db:
        before = db.version()
        db.sync(conf.category.revision)
        after = db.version()
    if before == after:
        print(f"Database is already at revision {after}; nothing to do.")
    else:
        print(f"Database upgraded from {before or 'an empty schema'} to revision {after}.")
    return 0


def _db_version(conf: cfg.ConfigOpts) -> int:
    with Database.from_conf(conf) as db:
        revision = db.version()
    print(revision if revision is not None else "None")
    if revision is None:
        print(f"The schema was never created; run '{PROG} db sync'.", file=sys.stderr)
    return 0


def _owner(conf: cfg.ConfigOpts) -> str:
    return owner_trait(conf.placement.deployment_name)


def _against_placement(
    conf: cfg.ConfigOpts, run: Callable[..., _Report], **kwargs: Any
) -> _Report:
    """``run`` (heal or audit) over our database and the deployment's providers."""
    with Database.from_conf(conf) as db:
        return run(db, PlacementClient.from_conf(conf), owner_trait=_owner(conf), **kwargs)


def _placement_heal(conf: cfg.ConfigOpts) -> int:
    report = _against_placement(conf, heal.heal, dry_run=conf.category.dry_run)
    for result in report.results:
        print(result.line())
    print(report.summary())
    return 0 if report.complete else 1


def _placement_audit(conf: cfg.ConfigOpts) -> int:
    report = _against_placement(conf, audit.audit, delete=conf.category.delete)
    for orphan in report.orphans:
        print(orphan.line())
    print(report.summary())
    return EXIT_ORPHANS_LEFT if report.left else 0


def _placement_sync_aggregates(conf: cfg.ConfigOpts) -> int:
    dry_run = conf.category.dry_run
    with Database.from_conf(conf) as db:
        report = placement_aggregates.sync(db, PlacementClient.from_conf(conf), dry_run=dry_run)
    for line in placement_aggregates.describe(report, dry_run=dry_run):
        print(line)
    return 1 if report.failed else 0


def _host_set_disabled(conf: cfg.ConfigOpts) -> int:
    disabled = conf.category.action == "disable"
    host = conf.category.host_name
    reason = getattr(conf.category, "reason", None) if disabled else None
    changed = hosts.set_disabled(PlacementClient.from_conf(conf), _owner(conf), host, disabled)
    # NOTE: then the host's compute service row, so os-services agrees.
    with Database.from_conf(conf) as db:
        try:
            service = db.service_get_by_host(host)
        except exception.NotFound:
            LOG.info("Host %s has no compute service recorded yet; Placement only", host)
        else:
            if service.disabled != disabled or (disabled and service.disabled_reason != reason):
                db.service_set_disabled(service.uuid, disabled, reason)
                changed = True
    state = "disabled" if disabled else "enabled"
    print(f"Host {host} {state}." if changed else f"Host {host} was already {state}.")
    return 0


def _host_show(conf: cfg.ConfigOpts) -> int:
    host = conf.category.host_name
    client = PlacementClient.from_conf(conf)
    owner = _owner(conf)
    root = hosts.find_host(client, owner, host)
    with Database.from_conf(conf) as db:
        node = next((n for n in db.compute_nodes_by_host(host) if n.uuid == root["uuid"]), None)
    for line in host_tree.describe(client, owner, root, node):
        print(line)
    return 0


def _host_holders(conf: cfg.ConfigOpts) -> int:
    with Database.from_conf(conf) as db:
        report = host_holders.holders(
            db, PlacementClient.from_conf(conf), _owner(conf), conf.category.host_name
        )
    for line in report.lines():
        print(line)
    return 0 if report.empty else EXIT_HELD


def _migration_line(migration: Any) -> str:
    dest = migration.dest_host or "-"
    line = (
        f"{migration.id} {migration.uuid} server={migration.server_uuid} "
        f"status={migration.status} {migration.source_host}->{dest} "
        f"flavor={migration.old_flavor.get('id')}->{migration.new_flavor.get('id')} "
        f"strategy={migration.claim_strategy}"
    )
    if migration.error_kind:
        line += f" error={migration.error_kind}"
    return line


def _migration_list(conf: cfg.ConfigOpts) -> int:
    statuses = [conf.category.status] if conf.category.status else None
    with Database.from_conf(conf) as db:
        migrations = db.migration_list(server_uuid=conf.category.server, statuses=statuses)
    for migration in migrations:
        print(_migration_line(migration))
    return 0


def _migration_show(conf: cfg.ConfigOpts) -> int:
    ident = conf.category.migration
    with Database.from_conf(conf) as db:
        try:
            migration = (
                db.migration_get_by_id(int(ident)) if ident.isdigit() else db.migration_get(ident)
            )
        except exception.MigrationNotFound as exc:
            print(exc, file=sys.stderr)
            return 1
    fields = (
        ("id", migration.id),
        ("uuid", migration.uuid),
        ("server", migration.server_uuid),
        ("type", migration.migration_type),
        ("status", migration.status),
        ("source", f"{migration.source_host} ({migration.source_rp_uuid})"),
        ("destination", f"{migration.dest_host or '-'} ({migration.dest_rp_uuid or '-'})"),
        ("old flavor", migration.old_flavor.get("id")),
        ("new flavor", migration.new_flavor.get("id")),
        ("claim strategy", migration.claim_strategy),
        ("error kind", migration.error_kind or "-"),
        ("error reason", migration.error_reason or "-"),
    )
    for name, value in fields:
        print(f"{name}: {value}")
    return 0


#: Each category's help (in the list of categories) and description.
_CATEGORIES = {
    "db": ("Manage the database schema.", "Manage the database schema."),
    "placement": (
        "Heal and audit allocations in Placement; sync host aggregates there.",
        "Compare what Placement holds with what servers and resizes need.",
    ),
    "host": ("Disable or enable scheduling to a host; show its provider tree.", HOST_HELP),
    "migration": (
        "List and show resizes, with their claim strategy and why one failed.",
        MIGRATION_HELP,
    ),
}


def _category(
    subparsers: argparse._SubParsersAction, name: str
) -> Callable[..., argparse.ArgumentParser]:
    """Add the category ``name``; returns a function that adds one of its
    commands: ``command(name, help, description, action_fn)``, the parser."""
    help_text, description = _CATEGORIES[name]
    parser = subparsers.add_parser(name, help=help_text, description=description)
    actions = parser.add_subparsers(title=f"{name} commands", dest="action")
    actions.required = True

    def command(
        command_name: str, command_help: str, command_description: str, action_fn: Command
    ) -> argparse.ArgumentParser:
        sub = actions.add_parser(command_name, help=command_help, description=command_description)
        sub.set_defaults(action_fn=action_fn)
        # NOTE: the usage line lists the commands in the order they are added.
        actions.metavar = "{" + ",".join(actions.choices) + "}"
        return sub

    return command


def _add_migration_parsers(subparsers: argparse._SubParsersAction) -> None:
    command = _category(subparsers, "migration")
    listing = command(
        "list", "One line per migration, oldest first.", MIGRATION_HELP, _migration_list
    )
    listing.add_argument("--server", help="Only this server's (its uuid).")
    listing.add_argument("--status", help="Only migrations in this status (error, finished...).")
    command("show", "Every field of one migration.", MIGRATION_HELP, _migration_show).add_argument(
        "migration", metavar="MIGRATION", help="Its uuid, or its id (as os-migrations shows it)."
    )


def _add_host_parsers(subparsers: argparse._SubParsersAction) -> None:
    command = _category(subparsers, "host")
    for action, text, description, action_fn in (
        ("disable", "Stop scheduling new work to HOST.", HOST_HELP, _host_set_disabled),
        ("enable", "Schedule new work to HOST again.", HOST_HELP, _host_set_disabled),
        (
            "show",
            "Print HOST's provider tree: inventories, usage, traits and owners.",
            HOST_SHOW_HELP,
            _host_show,
        ),
        (
            "holders",
            "Report what still holds HOST (servers, moves, allocations) while draining it.",
            HOST_HOLDERS_HELP,
            _host_holders,
        ),
    ):
        parser = command(action, text, description, action_fn)
        parser.add_argument("host_name", metavar="HOST", help="The compute host's name.")
        if action == "disable":
            parser.add_argument(
                "--reason",
                help="Why, as os-services shows it (its disabled_reason).",
            )


def _add_placement_parsers(subparsers: argparse._SubParsersAction) -> None:
    command = _category(subparsers, "placement")
    command(
        "heal", "Re-claim missing or wrong server allocations.", HEAL_HELP, _placement_heal
    ).add_argument(
        "--dry-run", action="store_true", help="Print what would be healed; write nothing."
    )
    command(
        "audit", "Find (and delete) orphaned allocations.", AUDIT_HELP, _placement_audit
    ).add_argument("--delete", action="store_true", help="Remove the orphaned allocations found.")
    command(
        "sync_aggregates",
        "Mirror host aggregates onto their hosts' providers in Placement.",
        SYNC_AGGREGATES_HELP,
        _placement_sync_aggregates,
    ).add_argument(
        "--dry-run", action="store_true", help="Print what would change; write nothing."
    )


def _add_command_parsers(subparsers: argparse._SubParsersAction) -> None:
    command = _category(subparsers, "db")
    command(
        "sync",
        "Create the schema or upgrade it to the newest revision. Idempotent.",
        "Create the schema on an empty database or upgrade it to the newest "
        "revision (or to REVISION). Safe to run on an up-to-date database.",
        _db_sync,
    ).add_argument("revision", nargs="?", default="head", help="Target revision (default: head).")
    command(
        "version",
        "Print the schema revision the database is at.",
        "Print the schema revision the database is at ('None' when the schema was never created).",
        _db_version,
    )
    _add_placement_parsers(subparsers)
    _add_host_parsers(subparsers)
    _add_migration_parsers(subparsers)


CATEGORY_OPT = cfg.SubCommandOpt(
    "category",
    title="Command categories",
    help="Run '%(prog)s CATEGORY --help' for the commands of a category.",
    handler=_add_command_parsers,
)


def _error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 1


def _one_line(exc: BaseException) -> str:
    exc = driver_error(exc)
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command.

    :param argv: the arguments, without the program name; ``sys.argv[1:]``
        when None.
    :returns: the exit code: 0 success, 1 error (or, for ``placement heal``,
        a server still missing its allocation), 3 orphaned allocations left
        by ``placement audit``.
    """
    conf = rs_conf.new_conf()
    conf.register_cli_opt(CATEGORY_OPT)
    # NOTE: stdout carries the command's result (scripts read 'db version');
    # logs go to stderr unless the config file says otherwise.
    conf.set_default("use_stderr", True)
    conf.set_default("default_log_levels", [*logging.get_default_log_levels(), "alembic=WARN"])
    code = parse_or_exit_code(conf, argv, DESCRIPTION, lambda exc: _error(_one_line(exc)))
    if code is not None:
        return code
    setup_logging(conf)

    action_fn: Command = conf.category.action_fn
    try:
        return action_fn(conf)
    except DB_ERRORS as exc:
        return _error(f"database {_safe_url(conf)}: {_one_line(exc)}")
    except (exception.ResizeSchedException, CommandError, OSError, ImportError) as exc:
        LOG.debug("%s failed", conf.category.name, exc_info=True)
        return _error(_one_line(exc))


def _safe_url(conf: cfg.ConfigOpts) -> str:
    try:
        return sa.engine.make_url(conf.database.connection).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return "(malformed [database] connection)"


if __name__ == "__main__":
    sys.exit(main())
