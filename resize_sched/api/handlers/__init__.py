"""One module per resource; each public function answers one route.

A handler takes the :class:`~resize_sched.api.state.ApiState` and the
:class:`~resize_sched.api.request.ApiRequest`, plus the route's path
parameters by name, and returns a WebOb response. It raises a
:class:`~resize_sched.api.faults.Fault` or lets a domain error through; the
router turns either into an error response.
"""
