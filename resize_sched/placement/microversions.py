"""The Placement microversions our calls pin, each the lowest that has what the call needs.

Every call asks for at least :data:`ERROR_CODE_VERSION`, so that errors carry
Placement's error code; the server must have :data:`MIN_VERSION` (consumer
generations). Allocation reads and writes use :data:`CONSUMER_TYPE_VERSION`
when the server has it.
"""

MIN_VERSION = (1, 28)  # consumer generations: required of the server
ERROR_CODE_VERSION = (1, 23)  # errors carry a code: the floor of every call
INVENTORY_VERSION = (1, 26)  # reserved may equal total
IN_TREE_VERSION = (1, 31)  # in_tree on allocation candidates, root/parent in summaries
ROOT_REQUIRED_VERSION = (1, 35)  # root_required on allocation candidates
CONSUMER_TYPE_VERSION = (1, 38)  # consumer_type, used when the server has it
FORBIDDEN_AGGREGATES_VERSION = (1, 32)  # member_of=!in:... (not in any of these)
RESHAPER_VERSION = (1, 30)  # POST /reshaper: inventories and allocations in one request
# GET /resource_providers/{uuid}/allocations is as old as Placement (1.0) and
# its answer never changed shape; the floor of every call is error codes.
PROVIDER_ALLOCATIONS_VERSION = ERROR_CODE_VERSION


def mv(version: tuple[int, int]) -> str:
    """``(1, 39)`` -> ``"1.39"``, as the ``OpenStack-API-Version`` header wants it."""
    return f"{version[0]}.{version[1]}"


def parse_version(text: str) -> tuple[int, int]:
    """``"1.39"`` -> ``(1, 39)``."""
    major, _, minor = text.partition(".")
    return int(major), int(minor)
