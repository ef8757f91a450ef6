"""The API service: the subset of the Compute API v2.1 that we serve.

openstacksdk and python-novaclient use it unchanged.

Layers, outermost first: :mod:`~resize_sched.api.middleware`
(oslo.middleware's request id, CORS, proxy headers, body size limit and
``/healthcheck``), :mod:`~resize_sched.api.app` (version documents, the route
table), :mod:`~resize_sched.api.auth` (who is calling),
:mod:`~resize_sched.api.microversion` (microversion-parse), one module per resource under
:mod:`~resize_sched.api.handlers` (the server document apart, in
:mod:`~resize_sched.api.handlers.server_view`, and server create in
:mod:`~resize_sched.api.handlers.server_create`),
:mod:`~resize_sched.api.schemas` (request bodies, one module per subject)
and :mod:`~resize_sched.api.faults` (the only place domain errors become HTTP
errors). :mod:`~resize_sched.api.deploy` builds it all from the
configuration; :mod:`~resize_sched.api.wsgi` is the WSGI entry point.

Microversions 2.1 to 2.80 (:data:`resize_sched.api.microversion.MAX_VERSION`).
Those that change what we serve, and are reproduced:

* servers: 2.3 admin extended attributes, 2.9 ``locked``, 2.16
  ``host_status``, 2.19 ``description`` (set by ``PUT /servers/{id}``),
  2.26 ``tags``, 2.47 the flavor
  embedded in the server, 2.63 ``trusted_image_certificates``, 2.71
  ``server_groups``, 2.73 ``locked_reason`` (constant values: there are no
  locks, tags or groups here); 2.75 ``PUT /servers/{id}`` answers every
  field (before, not the extension fields);
* flavors: 2.55 ``description`` (always null), 2.61 ``extra_specs``
  (which ``/flavors/{id}/os-extra_specs`` reads and writes at any version);
* os-migrations: 2.23 ``migration_type``, 2.59 ``uuid`` with ``limit``,
  ``marker`` and ``changes-since``, 2.66 ``changes-before``, 2.80
  ``user_id``/``project_id``;
* /servers/{id}/migrations (from 2.23): 2.59 ``uuid``, 2.80
  ``user_id``/``project_id``; force-complete (2.22) and abort (2.24) answer
  409, as Nova does for a server that is not live-migrating;
* os-instance-actions: 2.21 a deleted server's actions, 2.51 events for
  non-admins (never the traceback), 2.58 ``updated_at`` with paging and
  ``changes-since``, 2.62 ``hostId`` (and ``host`` for admins), 2.66
  ``changes-before``;
* os-services and os-hypervisors: 2.53 uuid ids and ``PUT
  /os-services/{id}`` (before it, ``/os-services/disable`` and ``enable``),
  2.33 hypervisor paging, and below 2.88 the hypervisors' resource figures
  and ``/os-hypervisors/statistics``;
* os-simple-tenant-usage: 2.40 ``limit`` and ``marker``, 2.75 unknown query
  parameters refused.

``doc/operator-api.rst`` compares what is served with Nova, route by route.

Deliberate differences from Nova: ``networks`` stays optional after 2.37
(there is no networking here; ``auto``/``none``/a list are accepted and
ignored); ``/servers/{id}/migrations`` lists the resizes in progress
(Nova lists only live migrations there); ``swap`` is always an integer,
also before 2.75; flavors have no per-project access list (a private flavor
is an administrator's); ``os-resetState`` to ``active`` waits for a resize in
flight (409).
"""
