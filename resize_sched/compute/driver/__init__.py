"""Hypervisor drivers of the compute service.

:class:`base.ComputeDriver` is the contract; :class:`fake.FakeDriver` keeps
servers in memory and is the only driver shipped.
"""
