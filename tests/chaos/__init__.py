"""The chaos soak: the real multi-process deployment under faults and kills.

Not collected by pytest (no ``test_`` modules): run it with ``tox -e chaos``
or ``python -m tests.chaos.soak``; see ``doc/chaos-soak.rst``.
"""
