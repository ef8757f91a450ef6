"""The installed version of resize_sched, for --version and logs."""

from importlib import metadata


def version_string() -> str:
    """Return the installed package version, or 'unknown' from a bare checkout."""
    try:
        return metadata.version("resize_sched")
    except metadata.PackageNotFoundError:
        return "unknown"
