"""The scheduler: turns a resource request into a chosen host plus alternates.

It is a library the conductor calls (it may become a service of its own
later). See :mod:`resize_sched.scheduler.manager`.
"""
