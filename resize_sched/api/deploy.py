"""Build the API service from a parsed configuration.

The one startup sequence both the console script
(:mod:`resize_sched.cmd.api`) and the WSGI entry point
(:mod:`resize_sched.api.wsgi`) run, top to bottom: log the options, check
the claim strategy loads, open the database, build the RPC transport and
conductor client, build the application.
"""

import logging as std_logging
from dataclasses import dataclass
from typing import Any

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import rpc, strategies
from resize_sched.api.app import ComputeApp, build_app
from resize_sched.conductor.rpcapi import ConductorAPI
from resize_sched.db.api import Database

LOG = logging.getLogger(__name__)


@dataclass
class Deployment:
    """The application and what it holds open.

    :ivar app: the WSGI application.
    :ivar db: its database.
    :ivar transport: its RPC transport.
    """

    app: ComputeApp
    db: Database
    transport: messaging.Transport

    def close(self) -> None:
        """Close the transport and every pooled database connection."""
        self.transport.cleanup()
        self.db.dispose()


def load(conf: cfg.ConfigOpts) -> Deployment:
    """Build the API service from ``conf``.

    :param conf: parsed, with our options registered and logging set up.
    :returns: the deployment; :meth:`Deployment.close` it when done.
    :raises StrategyNotFound: ``[resize] claim_strategy`` is not installed.
    :raises ConfigurationError: the auth strategy cannot be set up.
    :raises oslo_messaging.InvalidTransportURL: a bad ``transport_url``.
    """
    conf.log_opt_values(LOG, std_logging.DEBUG)
    # NOTE: fail at start, not at the first resize, on a typo in the option.
    strategies.load(conf.resize.claim_strategy)
    db = Database.from_conf(conf)
    transport: Any = None
    try:
        transport = rpc.get_transport(conf)
        app = build_app(conf, db, ConductorAPI(conf, transport))
    except Exception:
        if transport is not None:
            transport.cleanup()
        db.dispose()
        raise
    LOG.info("API service ready: database %s, auth %s", db.url, conf.api.auth_strategy)
    return Deployment(app=app, db=db, transport=transport)
