"""Tempest against resize_sched: the harness of ``tox -e tempest`` (doc/tempest.rst)."""
