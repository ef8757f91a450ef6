"""The project a query is limited to: one project, or every project.

A server query (and the usage and migration listings built on servers) is
always given a scope: a project id, or :data:`ALL_PROJECTS` for a service's
own work or an API caller allowed to see every project. ``None`` is refused,
never read as "no filter" (:func:`project_condition`).
"""

from typing import Any, Final

from oslo_log import log as logging

from resize_sched import exception

LOG = logging.getLogger(__name__)


class AllProjects:
    """The type of :data:`ALL_PROJECTS`: a server query over every project."""

    def __repr__(self) -> str:
        return "ALL_PROJECTS"


#: The project of a server query that reads every project's servers: a
#: service's own work, or an API caller that asked for all projects and whose
#: policy allows it. A query given ``None`` (a caller without a project) is
#: refused: a missing project never means "no filter".
ALL_PROJECTS: Final = AllProjects()

#: What a server query is limited to: one project, or :data:`ALL_PROJECTS`.
ProjectScope = str | AllProjects


def project_condition(column: Any, project_id: ProjectScope | None, what: str) -> Any:
    """The ``WHERE`` clause limiting a query to a project, or None for every project.

    :param column: the project column of the queried model.
    :param project_id: the project, or :data:`ALL_PROJECTS`.
    :param what: the query, for the error.
    :returns: the clause, or None for :data:`ALL_PROJECTS`.
    :raises ProjectRequired: no project (None or empty) and not ALL_PROJECTS.
    """
    if project_id is ALL_PROJECTS:
        return None
    if not isinstance(project_id, str) or not project_id:
        LOG.error("Refused %s with no project (%r): never read as every project", what, project_id)
        raise exception.ProjectRequired(what=what)
    return column == project_id
