"""Logging into the host's trace through the contract's `log` import, which
every world has. It works in every build (stdout and stderr are stubbed in a
`--stub-wasi` build; in others they are captured too). The host caps size
and rate."""

from wit_world.imports import log as _log


def trace(message):
    _log.log(_log.Level.TRACE, str(message))


def debug(message):
    _log.log(_log.Level.DEBUG, str(message))


def info(message):
    _log.log(_log.Level.INFO, str(message))


def warn(message):
    _log.log(_log.Level.WARN, str(message))


def error(message):
    _log.log(_log.Level.ERROR, str(message))
