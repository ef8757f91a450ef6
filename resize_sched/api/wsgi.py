"""WSGI entry point for uwsgi, gunicorn or mod_wsgi: ``resize_sched.api.wsgi:application``.

The configuration files are those named (comma-separated) by the
``RESIZE_SCHED_CONFIG_FILE`` environment variable, else oslo.config's
defaults (``/etc/resize_sched/resize_sched.conf`` and the like). Nothing is
read at import: the application is built on the first request, once per
process, so a WSGI server that forks workers builds one per worker (each with
its own database pool and RPC connection).
"""

import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from oslo_log import log as logging

from resize_sched import conf as rs_conf
from resize_sched.api import deploy

LOG = logging.getLogger(__name__)

CONFIG_ENV = "RESIZE_SCHED_CONFIG_FILE"


def config_files(environ: dict[str, str] | None = None) -> list[str] | None:
    """The configuration files named by :data:`CONFIG_ENV`.

    :param environ: the environment (``os.environ`` when None).
    :returns: the files, or None for oslo.config's default files.
    """
    value = (os.environ if environ is None else environ).get(CONFIG_ENV, "")
    files = [f.strip() for f in value.split(",") if f.strip()]
    return files or None


def init_application() -> deploy.Deployment:
    """Parse the configuration, set up logging and build the API service.

    :returns: the deployment.
    """
    conf = rs_conf.new_conf()
    # NOTE: no command line: the WSGI server's own arguments are not ours.
    rs_conf.parse_args(conf, [], default_config_files=config_files())
    logging.setup(conf, "resize_sched")
    return deploy.load(conf)


class LazyApplication:
    """A WSGI application that builds the real one on its first request.

    :param factory: builds the deployment.
    """

    def __init__(self, factory: Callable[[], deploy.Deployment] = init_application) -> None:
        self._factory = factory
        self._deployment: deploy.Deployment | None = None
        self._lock = threading.Lock()

    @property
    def deployment(self) -> deploy.Deployment:
        """The deployment, built now if it was not yet."""
        if self._deployment is None:
            with self._lock:
                if self._deployment is None:
                    self._deployment = self._factory()
        return self._deployment

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        return self.deployment.app(environ, start_response)


application = LazyApplication()
