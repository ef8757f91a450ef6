"""The conductor's RPC endpoints, one module per family.

Each module holds one mixin of
:class:`~resize_sched.conductor.manager.ConductorManager` whose handlers
check the message (:mod:`.checks`), hand the step to its task under
:mod:`resize_sched.conductor.tasks`, record the compute event and cast the
next step to a host: :mod:`.builds`, :mod:`.resizes`, :mod:`.live`,
:mod:`.evacuations`, :mod:`.power`, :mod:`.shelving`, :mod:`.deletes`,
:mod:`.compute_reports`, :mod:`.failures`; what they share is in :mod:`.base`.
"""
