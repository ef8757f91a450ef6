"""Authorization: oslo.policy over the rules of :mod:`resize_sched.policies`.

The API builds one :class:`Policy` per application. Its defaults are Nova's;
operators override them in ``[oslo_policy] policy_file`` (``policy.yaml``,
looked up beside the configuration files; edits are picked up without a
restart) and ``policy_dirs``. Handlers ask through :func:`authorize` (refuse
with 403) or :func:`allowed` (hide a field); the auth middlewares ask
:meth:`Policy.is_admin` once per request, and that answer
(:attr:`RequestContext.is_admin <resize_sched.context.RequestContext.is_admin>`)
is what scopes lookups to the caller's project: another project's server is
a 404 before any rule is asked.

Every rule is about a project's resources (``scope_types = ['project']``,
as in Nova): a caller without a project passes none of them, whatever the
rule's check string says, and is never an administrator. No missing value
reaches oslo.policy either, which would compare a missing ``project_id``
with a missing ``project_id`` as equal. A policy file that does not parse
raises :class:`~resize_sched.exception.PolicyFileInvalid` (logged with the
file and the parser's message), which the API answers with its 500 body.
"""

from typing import Any

from oslo_config import cfg
from oslo_log import log as logging
from oslo_policy import policy as oslo_policy

from resize_sched import exception, policies
from resize_sched.api import faults
from resize_sched.api.request import ApiRequest
from resize_sched.context import RequestContext

#: The WSGI environ key the auth middlewares put the :class:`Policy` under.
POLICY_KEY = "resize_sched.policy"

#: The rule deciding who is an administrator.
ADMIN_RULE = "context_is_admin"

LOG = logging.getLogger(__name__)


class Policy:
    """The rule defaults, the operator's overrides, and the checks.

    :param conf: the parsed configuration; ``[oslo_policy]`` is registered
        on it.
    """

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self.enforcer = oslo_policy.Enforcer(conf)
        self.enforcer.register_defaults(policies.list_rules())

    def load(self) -> None:
        """Read the policy file (and ``policy_dirs``) if they changed.

        :raises PolicyFileInvalid: a file does not parse; logged with the
            file and the parser's message.
        """
        try:
            self.enforcer.load_rules()
        except Exception as exc:
            path = self.enforcer.policy_path or self.conf.oslo_policy.policy_file
            dirs = ", ".join(self.conf.oslo_policy.policy_dirs or ())
            where = f"{path} (or a file of policy_dirs: {dirs})" if dirs else path
            LOG.error("The policy file %s does not parse: %s", where, exc)
            raise exception.PolicyFileInvalid(path=where, reason=str(exc)) from exc

    def check(self, ctxt: RequestContext, rule: str, target: dict[str, Any] | None = None) -> bool:
        """Whether ``rule`` lets the caller act on ``target``.

        :param ctxt: the caller.
        :param rule: a rule name from :mod:`resize_sched.policies`.
        :param target: what the caller acts on (``project_id``, ``user_id``);
            the caller's own project and user when None.
        :returns: True when allowed; always False for a caller without a
            project (every rule here is project-scoped).
        :raises PolicyFileInvalid: the policy file does not parse.
        """
        self.load()
        if not ctxt.has_project:
            return False
        if target is None:
            target = {"project_id": ctxt.project_id, "user_id": ctxt.user_id}
        # NOTE: a missing key makes a check like project_id:%(project_id)s fail;
        # a None would be formatted as "None" and match a None in the creds.
        target = {k: v for k, v in target.items() if v is not None}
        return bool(self.enforcer.enforce(rule, target, ctxt.to_policy_values()))

    def is_admin(self, ctxt: RequestContext) -> bool:
        """Whether the caller passes ``context_is_admin``.

        :param ctxt: the caller (its ``is_admin`` is not read).
        :returns: True for an administrator; never for a caller without a
            project.
        :raises PolicyFileInvalid: the policy file does not parse.
        """
        return self.check(ctxt, ADMIN_RULE, {})


def _policy(req: ApiRequest) -> Policy:
    found = req.environ.get(POLICY_KEY)
    if found is None:
        # NOTE: only a request that no auth middleware saw gets here; refuse.
        raise faults.Unauthorized("Authentication required")
    return found


def allowed(req: ApiRequest, rule: str, target: dict[str, Any] | None = None) -> bool:
    """Whether ``rule`` lets the caller of ``req`` act on ``target``.

    :param req: the request (its caller and the application's policy).
    :param rule: a rule name from :mod:`resize_sched.policies`.
    :param target: ``project_id`` (and ``user_id``) of what is acted on; the
        caller's own when None.
    :returns: True when allowed.
    """
    return _policy(req).check(req.context, rule, target)


def authorize(req: ApiRequest, rule: str, target: dict[str, Any] | None = None) -> None:
    """Refuse the request unless ``rule`` lets its caller act on ``target``.

    :param req: the request (its caller and the application's policy).
    :param rule: a rule name from :mod:`resize_sched.policies`.
    :param target: ``project_id`` (and ``user_id``) of what is acted on; the
        caller's own when None.
    :raises faults.Forbidden: the rule refuses.
    """
    if not allowed(req, rule, target):
        raise faults.Forbidden(f"Policy doesn't allow {rule} to be performed.")


def server_target(server: Any) -> dict[str, Any]:
    """The target of a rule on one server: its project and user.

    :param server: a server row.
    :returns: ``{"project_id": ..., "user_id": ...}``.
    """
    return {"project_id": server.project_id, "user_id": server.user_id}


def authorized_server(req: ApiRequest, db: Any, rule: str, server_id: str) -> Any:
    """The server, if the caller may see it and ``rule`` lets it act on it.

    The lookup comes first, scoped to the caller's project unless the caller
    is an administrator, so another project's server is a 404 whatever the
    rule says.

    :param req: the request.
    :param db: the :class:`resize_sched.db.api.Database`.
    :param rule: a rule name from :mod:`resize_sched.policies.servers`.
    :param server_id: the server's uuid.
    :returns: the server row.
    :raises ServerNotFound: unknown, or another project's: 404.
    :raises faults.Forbidden: the rule refuses.
    """
    server = db.server_get(server_id, project_id=req.project_scope())
    authorize(req, rule, server_target(server))
    return server
