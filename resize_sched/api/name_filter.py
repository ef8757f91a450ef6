"""The ``name`` filter of ``GET /servers``: a regular expression, in bounded time.

Nova hands the filter to its database (MySQL ``REGEXP``, PostgreSQL ``~``),
whose engines bound their work. Matching it with Python's :mod:`re` would
not: a backtracking engine takes exponential time on ``(a+)+$`` against
``"aaaa…a!"``, and any caller may send one.

The approach here: the pattern is at most :data:`MAX_PATTERN_LENGTH`
characters (a server name's own limit) and is compiled by RE2
(``google-re2``), an automaton-based engine whose matching is linear in the
length of the name and which refuses what would need backtracking
(back-references, look-around) instead of running it. Its compiled program is
capped at :data:`MAX_PROGRAM_BYTES`, so a pattern such as ``(a{999}){999}``
is refused at compile time rather than built. Every refusal is a 400. The
syntax otherwise is what MySQL 8 and PostgreSQL accept for the same filters
(``^``, ``$``, classes, ``|``, ``*``, ``+``, ``?``, ``{m,n}``).
"""

import re2

from resize_sched.api import faults

#: The longest pattern accepted: the longest a server name may be.
MAX_PATTERN_LENGTH = 255

#: The memory RE2 may use for one compiled pattern.
MAX_PROGRAM_BYTES = 1 << 20


class NameFilter:
    """A compiled ``name`` filter.

    :param pattern: the filter as sent.
    :raises faults.BadRequest: too long, or not a pattern RE2 can run.
    """

    def __init__(self, pattern: str) -> None:
        if len(pattern) > MAX_PATTERN_LENGTH:
            raise faults.BadRequest(
                f"Invalid name filter: longer than {MAX_PATTERN_LENGTH} characters."
            )
        options = re2.Options()
        options.log_errors = False
        options.max_mem = MAX_PROGRAM_BYTES
        try:
            self._compiled = re2.compile(pattern, options)
        except (re2.error, UnicodeError, ValueError, TypeError):
            raise faults.BadRequest(
                f"Invalid name filter {pattern!r}: not a regular expression this API runs."
            ) from None

    def matches(self, name: str) -> bool:
        """Whether the filter matches anywhere in ``name`` (as ``REGEXP`` does).

        :param name: a server's name.
        """
        try:
            return self._compiled.search(name) is not None
        except UnicodeError:
            # NOTE: a name stored before names were checked for surrogates.
            return False
