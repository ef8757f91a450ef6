"""Compute API microversions: what a request asks for, what we answer with.

A client names the version with ``OpenStack-API-Version: compute 2.N`` (or
the older ``X-OpenStack-Nova-API-Version: 2.N``); no header means the minimum,
``latest`` the maximum. Every response to a versioned request echoes the
version it was served at.

The headers are read by the ``microversion-parse`` library, as Nova and
Placement read them (an ``OpenStack-API-Version`` naming ``compute`` wins
over the legacy header; an item without a version is ignored). The version
table stays ours: a version that is not ``X.Y`` (Nova's form: no leading
zeros, no sign) is malformed (400); a well-formed one outside
:data:`MIN_VERSION`..:data:`MAX_VERSION`, however many digits it has, is
not acceptable (406), as Nova answers.

We claim :data:`MAX_VERSION` 2.80: every microversion up to it that touches
our subset is reproduced (the list is in :mod:`resize_sched.api`), and 2.80
is also the highest openstacksdk asks of os-migrations. 2.81-2.90 add
nothing we serve except 2.90's settable hostname, which we do not model.
"""

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

import microversion_parse

from resize_sched.api import faults

SERVICE_TYPE = "compute"
HEADER = "OpenStack-API-Version"
LEGACY_HEADER = "X-OpenStack-Nova-API-Version"

_VERSION_RE = re.compile(r"^([1-9]\d*)\.([1-9]\d*|0)$")

#: Longest major or minor number parsed; longer ones are out of any range we
#: serve, and not worth turning into an integer (Python refuses over 4300 digits).
_MAX_DIGITS = 6


@functools.total_ordering
@dataclass(frozen=True)
class APIVersion:
    """A microversion, ``major.minor``, ordered numerically (2.9 < 2.10)."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> "APIVersion":
        """Parse ``"2.47"``.

        :param text: the version string.
        :returns: the version.
        :raises faults.BadRequest: not of the form ``X.Y``.
        :raises faults.NotAcceptable: of that form, but with numbers too long
            to be any version we serve.
        """
        text = text.strip()
        match = _VERSION_RE.match(text)
        if match is None:
            raise faults.BadRequest(f"Invalid API version request string: {text[:32]!r}")
        if max(len(match.group(1)), len(match.group(2))) > _MAX_DIGITS:
            raise faults.NotAcceptable(
                f"Version {text[:16]}... is not supported by the API. Minimum is "
                f"{MIN_VERSION} and maximum is {MAX_VERSION}."
            )
        try:
            parsed = microversion_parse.parse_version_string(text)
        except TypeError:
            raise faults.BadRequest(f"Invalid API version request string: {text!r}") from None
        return cls(parsed.major, parsed.minor)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, APIVersion):
            return NotImplemented
        return (self.major, self.minor) < (other.major, other.minor)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    def at_least(self, text: str) -> bool:
        """Whether this version is ``text`` or newer.

        :param text: e.g. ``"2.47"``.
        """
        return self >= APIVersion.parse(text)


MIN_VERSION = APIVersion(2, 1)
MAX_VERSION = APIVersion(2, 80)


def from_headers(headers: Mapping[str, str]) -> APIVersion:
    """The version a request asks for.

    :param headers: the request headers (case-insensitive mapping).
    :returns: the version to serve the request at.
    :raises faults.BadRequest: a malformed version.
    :raises faults.NotAcceptable: a version outside what we support.
    """
    try:
        requested = microversion_parse.get_version(
            dict(headers.items()), service_type=SERVICE_TYPE, legacy_headers=[LEGACY_HEADER]
        )
    except ValueError:
        raise faults.BadRequest(f"Invalid {HEADER} header.") from None
    if requested is None:
        return MIN_VERSION
    if requested.lower() == "latest":
        return MAX_VERSION
    version = APIVersion.parse(requested)
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise faults.NotAcceptable(
            f"Version {version} is not supported by the API. Minimum is {MIN_VERSION} "
            f"and maximum is {MAX_VERSION}."
        )
    return version


def response_headers(version: APIVersion) -> list[tuple[str, str]]:
    """The headers that echo ``version`` in a response.

    :param version: the version the request was served at.
    :returns: ``(name, value)`` pairs.
    """
    return [
        (HEADER, f"{SERVICE_TYPE} {version}"),
        (LEGACY_HEADER, str(version)),
        ("Vary", f"{HEADER}, {LEGACY_HEADER}"),
    ]
