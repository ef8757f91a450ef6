"""Third-party deprecation warnings go to the log at DEBUG, not to the operator's console.

A dependency's deprecation (``CryptographyDeprecationWarning`` from
dnspython, a ``DeprecationWarning`` an OpenStack library raises) is news
for whoever packages resize_sched, not for the operator running a command:
printed on stderr it buries what the command says. :func:`install` (run by
:mod:`resize_sched.cmd` before any command imports a dependency, since many
such warnings are raised at import time) sends every warning whose category
is a deprecation and whose origin is a file outside resize_sched to the
``py.warnings`` logger at DEBUG, as ``logging.captureWarnings`` would at
WARNING. Python's filters still decide which warnings are raised at all
(``-W`` and ``PYTHONWARNINGS`` work as usual), and every other warning,
including any resize_sched raises itself, is shown as before.

A warning raised before the command has set up logging is held (a few
hundred at most) and logged by :func:`replay` once it has.
"""

import logging
import os
import warnings
from typing import Any, TextIO

#: The logger warnings are sent to (the one ``logging.captureWarnings`` uses).
LOGGER = "py.warnings"
#: resize_sched's own directory: a warning from a file under it is ours.
_OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_MAX_HELD = 200
_held: list[logging.LogRecord] = []
_previous: Any = None


def is_deprecation(category: type[Warning]) -> bool:
    """A deprecation, by class or by name (``CryptographyDeprecationWarning``
    derives from ``UserWarning``)."""
    return issubclass(category, DeprecationWarning | PendingDeprecationWarning) or (
        "Deprecat" in category.__name__
    )


def is_third_party(filename: str) -> bool:
    """Whether the warning was raised from outside resize_sched."""
    return not os.path.abspath(filename).startswith(_OURS)


def _log(record: logging.LogRecord) -> None:
    logger = logging.getLogger(LOGGER)
    if not logging.getLogger().handlers and not logger.handlers:
        if len(_held) < _MAX_HELD:
            _held.append(record)
        return
    if logger.isEnabledFor(record.levelno):
        logger.handle(record)


def _show(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """:func:`warnings.showwarning`, third-party deprecations to the log."""
    if file is None and is_deprecation(category) and is_third_party(filename):
        text = f"{category.__name__}: {message} ({filename}:{lineno})"
        logger = logging.getLogger(LOGGER)
        _log(
            logger.makeRecord(
                LOGGER, logging.DEBUG, filename, lineno, text, None, None, func="<warning>"
            )
        )
        return
    _previous(message, category, filename, lineno, file, line)


def install() -> None:
    """Route third-party deprecation warnings to the log (once per process)."""
    global _previous
    if warnings.showwarning is _show:
        return
    _previous = warnings.showwarning
    warnings.showwarning = _show


def replay() -> None:
    """Log the warnings held while logging was not set up; call once it is."""
    held = _held[:]
    del _held[:]
    for record in held:
        _log(record)
