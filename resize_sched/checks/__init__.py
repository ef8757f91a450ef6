"""Checks the daemons run at start and on reload.

* :func:`reload_config` re-reads the mutable options (SIGHUP) but keeps the
  current ``[resize] claim_strategy`` when the files name one that is not
  installed, so a typo cannot make every new resize fail.
* :func:`placement_problem` asks Placement for its root document once and
  says, in one line, which URL failed and how.
* :func:`unknown_options` lists the options and groups of the config files
  that nothing registered, so a misspelt option is not silently ignored.
* :func:`policy_problems` reads the policy file as the API would and says
  whether it parses, and which of its rules name nothing the API enforces
  or refer to rules that do not exist.
* :func:`refused_extra_specs` lists the flavors and live servers whose extra
  specs today's translation refuses (``hw:numa_nodes`` was ignored before);
  :func:`pinned_but_unpinned` the servers built with a dedicated or mixed
  flavor before the CPU policy was translated.
"""

import glob
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_log import log as logging
from stevedore import named

from resize_sched import exception, strategies
from resize_sched import resources as rs
from resize_sched.placement.client import PlacementClient

LOG = logging.getLogger(__name__)

#: The option namespaces the sample config documents (see
#: ``etc/resize_sched/resize_sched-config-generator.conf``): libraries register
#: some of them only when first used (oslo.messaging's driver groups, for one),
#: so they are not yet on the ``ConfigOpts`` at start.
NAMESPACES = (
    "resize_sched",
    "oslo.limit",
    "oslo.log",
    "oslo.messaging",
    "oslo.policy",
    "oslo.middleware.cors",
    "oslo.middleware.healthcheck",
    "oslo.middleware.http_proxy_to_wsgi",
    "oslo.middleware.sizelimit",
    "keystonemiddleware.auth_token",
)

_STRATEGY_GROUP = "resize"
_STRATEGY_OPT = "claim_strategy"


# -- reload -----------------------------------------------------------------------------


def config_files(conf: cfg.ConfigOpts) -> list[str]:
    """The files ``conf`` was parsed from, in the order oslo.config reads them."""
    files = list(conf.config_file or ())
    for directory in conf.config_dir or ():
        files.extend(sorted(glob.glob(os.path.join(directory, "*.conf"))))
    return files


def _strategy_in_files(conf: cfg.ConfigOpts) -> str:
    """``[resize] claim_strategy`` as the config files now say, parsed on the side."""
    from resize_sched import conf as rs_conf  # NOTE: resize_sched.conf imports nothing of ours

    probe = rs_conf.new_conf()
    args: list[str] = []
    for path in conf.config_file or ():
        args += ["--config-file", path]
    for directory in conf.config_dir or ():
        args += ["--config-dir", directory]
    probe(args, project="resize_sched", default_config_files=[], default_config_dirs=[])
    return probe[_STRATEGY_GROUP][_STRATEGY_OPT]


def reload_config(
    conf: cfg.ConfigOpts, load: Callable[[str], object] = strategies.load
) -> str | None:
    """Re-read the mutable options, refusing a claim strategy that cannot load.

    The new strategy is checked before anything changes. One that cannot be
    loaded is refused with an ERROR naming the installed strategies: the
    current one stays in force (pinned with an override, which the next
    successful reload clears) while the other mutable options are applied.

    :param conf: the daemon's parsed configuration.
    :param load: loads a strategy by name (a daemon's cached loader).
    :returns: the claim strategy new resizes use after the reload, or None
        when the files could not be read at all (nothing changed then).
    """
    current = conf[_STRATEGY_GROUP][_STRATEGY_OPT]
    try:
        wanted = _strategy_in_files(conf)
    except (cfg.Error, OSError, SystemExit) as exc:
        LOG.error("Reload refused, configuration unchanged: cannot read the files: %s", exc)
        return None
    try:
        load(wanted)
    except exception.ConfigurationError as exc:
        LOG.error(
            "Reload: [%s] %s = %s refused, keeping %s: %s",
            _STRATEGY_GROUP,
            _STRATEGY_OPT,
            wanted,
            current,
            exc,
        )
        conf.set_override(_STRATEGY_OPT, current, group=_STRATEGY_GROUP)
        conf.mutate_config_files()
        return current
    conf.clear_override(_STRATEGY_OPT, group=_STRATEGY_GROUP)
    conf.mutate_config_files()
    return conf[_STRATEGY_GROUP][_STRATEGY_OPT]


# -- Placement --------------------------------------------------------------------------


def placement_url(conf: cfg.ConfigOpts, client: PlacementClient) -> str:
    """Where the client sends its requests, for a log line."""
    override = conf.placement.endpoint_override
    if override:
        return override
    try:
        # NOTE: the adapter resolves the catalog endpoint; that can fail too
        # (Keystone down), which the check itself then reports.
        return client._adapter.get_endpoint() or "(no placement endpoint in the catalog)"
    except Exception as exc:
        return f"(placement endpoint from the catalog, not found: {exc})"


def placement_problem(conf: cfg.ConfigOpts, client: PlacementClient | None = None) -> str | None:
    """Ask Placement for ``GET /`` once.

    :param conf: a parsed configuration with the ``[placement]`` group.
    :param client: the client to check; built from ``[placement]`` when None.
    :returns: None when Placement answered with a usable version document,
        else one line naming the URL and the error.
    """
    try:
        if client is None:
            client = PlacementClient.from_conf(conf)
        client.max_version  # noqa: B018 - one GET /
    except Exception as exc:  # any failure is the answer here, reported as such
        where = placement_url(conf, client) if client is not None else "(no client)"
        return f"Placement at {where} does not answer GET /: {exc}"
    return None


# -- the policy file -------------------------------------------------------------------


@dataclass
class PolicyReport:
    """What :func:`policy_problems` found.

    :ivar files: the policy files read (the policy file, then those of
        ``policy_dirs``), those that exist.
    :ivar unparsable: one line per file oslo.policy could not parse; the API
        answers every request with a 500 while it does not.
    :ivar unknown: one line per rule the files name that the API does not
        enforce (misspelt, or another service's), and per reference to a
        rule that exists nowhere: such a rule changes nothing.
    """

    files: list[str] = field(default_factory=list)
    unparsable: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def _policy_files(conf: cfg.ConfigOpts) -> list[str]:
    found = []
    name = conf.oslo_policy.policy_file
    path = name if os.path.isabs(name) else conf.find_file(name)
    if path and os.path.isfile(path):
        found.append(path)
    for directory in conf.oslo_policy.policy_dirs or ():
        where = directory if os.path.isabs(directory) else conf.find_file(directory)
        if where and os.path.isdir(where):
            found.extend(sorted(glob.glob(os.path.join(where, "*.yaml"))))
            found.extend(sorted(glob.glob(os.path.join(where, "*.json"))))
    return found


def policy_problems(conf: cfg.ConfigOpts) -> PolicyReport:
    """Read the policy file(s) as the API does, and list what is wrong with them.

    :param conf: a parsed configuration (``[oslo_policy]`` is registered on it).
    :returns: the report; empty lists when nothing is wrong (or there is no
        policy file: every rule is at its default).
    """
    from oslo_policy import policy as oslo_policy  # NOTE: only the check reads it

    from resize_sched import policies

    enforcer = oslo_policy.Enforcer(conf)
    enforcer.register_defaults(policies.list_rules())
    report = PolicyReport(files=_policy_files(conf))
    for path in report.files:
        try:
            with open(path, encoding="utf-8") as handle:
                oslo_policy.parse_file_contents(handle.read())
        except Exception as exc:
            report.unparsable.append(f"{path}: {exc}")
    if report.unparsable:
        return report
    try:
        enforcer.load_rules(force_reload=True)
    except Exception as exc:  # the parser's message is the answer here
        report.unparsable.append(f"{', '.join(report.files)}: {exc}")
        return report
    registered = set(enforcer.registered_rules)
    for name in sorted(set(enforcer.file_rules) - registered):
        report.unknown.append(f"rule {name!r} is not a rule of this API")
    for name, rule in sorted(enforcer.rules.items()):
        for ref in sorted(_rule_references(rule)):
            if ref not in enforcer.rules:
                report.unknown.append(f"rule {name!r} refers to rule:{ref}, which does not exist")
    return report


def _rule_references(check: object) -> set[str]:
    """The names of the ``rule:NAME`` checks inside a parsed check."""
    from oslo_policy import _checks

    if isinstance(check, _checks.RuleCheck):
        return {check.match}
    found: set[str] = set()
    for child in getattr(check, "rules", ()) or ():
        found |= _rule_references(child)
    inner = getattr(check, "rule", None)
    if isinstance(inner, _checks.BaseCheck):
        found |= _rule_references(inner)
    return found


# -- unknown options ----------------------------------------------------------------------


def _known(conf: cfg.ConfigOpts) -> dict[str, set[str]]:
    """Option names by group (``DEFAULT`` for none), registered or documented."""
    known: dict[str, set[str]] = {"DEFAULT": set()}

    def add(group: str | None, opts: Iterable[cfg.Opt]) -> None:
        names = known.setdefault(group or "DEFAULT", set())
        for opt in opts:
            names.add(opt.dest)
            names.add(opt.name)
            for old in opt.deprecated_opts:
                old_group = old.group or group or "DEFAULT"
                known.setdefault(old_group, set()).add(old.name or opt.name)

    add(None, (conf._opts[name]["opt"] for name in conf._opts))  # noqa: SLF001
    for group_name, group in conf._groups.items():  # noqa: SLF001
        add(group_name, (info["opt"] for info in group._opts.values()))  # noqa: SLF001
    manager = named.NamedExtensionManager(
        "oslo.config.opts",
        names=list(NAMESPACES),
        invoke_on_load=True,
        on_load_failure_callback=None,
    )
    for extension in manager:
        for group, opts in extension.obj:
            name = group.name if isinstance(group, cfg.OptGroup) else group
            add(name, opts)
    return known


def _auth_plugin_opts(auth_type: str) -> set[str]:
    try:
        return {opt.dest for opt in ks_loading.get_auth_plugin_conf_options(auth_type)}
    except Exception:  # an unknown plugin is reported when it is loaded
        return set()


def unknown_options(conf: cfg.ConfigOpts, files: Iterable[str] | None = None) -> list[str]:
    """The groups and options of the config files that nothing knows.

    Known: every option registered on ``conf`` and every option of the
    namespaces of :data:`NAMESPACES`, with their deprecated names; in a group
    that sets ``auth_type``, that keystoneauth plugin's options too.

    :param conf: a parsed configuration.
    :param files: the files to look at; those ``conf`` was parsed from when None.
    :returns: one ``path: ...`` line per unknown group or option.
    """
    known = _known(conf)
    found: list[str] = []
    for path in config_files(conf) if files is None else files:
        sections: dict[str, dict[str, list[str]]] = {}
        try:
            cfg.ConfigParser(path, sections).parse()
        except (OSError, cfg.Error) as exc:
            found.append(f"{path}: not readable: {exc}")
            continue
        for section, values in sections.items():
            if section not in known:
                found.append(f"{path}: unknown group [{section}]")
                continue
            names = known[section]
            if "auth_type" in values:
                # NOTE: a library listing its group may leave keystoneauth's
                # auth_type and auth_section out (oslo.limit does).
                common = {opt.dest for opt in ks_loading.get_auth_common_conf_options()}
                names = names | common | _auth_plugin_opts(values["auth_type"][-1])
            for key in values:
                if key.replace("-", "_") not in names:
                    found.append(f"{path}: unknown option [{section}] {key}")
    return found


def warn_unknown_options(conf: cfg.ConfigOpts) -> list[str]:
    """Log a WARNING for each unknown group or option; return them (for tests)."""
    found = unknown_options(conf)
    for line in found:
        LOG.warning("Ignored configuration: %s (misspelt, or for another service?)", line)
    return found


# -- extra specs ---------------------------------------------------------------------------


def refused_extra_specs(flavors: Iterable[Any], servers: Iterable[Any]) -> list[str]:
    """The flavors, and the flavor snapshots of live servers, that
    :func:`resize_sched.resources.flavor_request` refuses.

    Before ``hw:numa_nodes`` was translated into request groups any ``hw:``
    extra spec was accepted and ignored, so a flavor (and the servers built
    from it) may carry NUMA specs today's checks refuse (``hw:numa_nodes=3``
    with 2 vCPUs). A build or resize with such a flavor is refused; a server
    already running with one goes on as it was claimed.

    :param flavors: flavor rows (``to_snapshot()``, ``flavorid``, ``name``).
    :param servers: server rows (``flavor`` snapshot, ``uuid``, ``name``).
    :returns: one line per refused flavor or server, with the reason.
    """
    found: list[str] = []
    for flavor in flavors:
        reason = rs.refusal(flavor.to_snapshot())
        if reason is not None:
            found.append(f"flavor {flavor.flavorid} ({flavor.name}): {reason}")
    for server in servers:
        reason = rs.refusal(server.flavor or {})
        if reason is not None:
            flavorid = (server.flavor or {}).get("id")
            found.append(
                f"server {server.uuid} ({server.name}, flavor {flavorid} as stored): {reason}"
            )
    return found


def pinned_but_unpinned(
    servers: Iterable[Any], held: Callable[[str], dict[str, int]]
) -> list[str]:
    """The live servers whose flavor asks for PCPU but which hold none.

    A version that did not translate ``hw:cpu_policy`` accepted
    ``dedicated`` and ``mixed`` and claimed VCPU for them; such a server
    still holds VCPU while its flavor, read today, asks for PCPU.

    :param servers: server rows (``flavor`` snapshot, ``uuid``, ``name``).
    :param held: server uuid -> what it holds in Placement, summed; asked
        only for servers whose flavor asks for PCPU.
    :returns: one line per such server.
    """
    found: list[str] = []
    for server in servers:
        try:
            wanted = rs.stored_request(server.flavor or {}).resources
        except ValueError:
            continue  # listed by refused_extra_specs
        if not wanted.get(rs.PCPU):
            continue
        holding = held(server.uuid)
        if holding and not holding.get(rs.PCPU):
            found.append(
                f"server {server.uuid} ({server.name}) holds {rs.format_resources(holding)}, "
                f"its flavor asks for {rs.format_resources(wanted)}"
            )
    return found
