"""Exceptions whose message is shown to the user as one line."""


class NbrunnerError(Exception):
    """Base class: ``str(exc)`` is a complete one-line message for the user."""

    status = 400


class InvalidRequest(NbrunnerError, ValueError):
    """The request is wrong; nothing was changed."""


class NotFound(NbrunnerError, KeyError):
    status = 404

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "not found"


class Forbidden(NbrunnerError):
    """The caller may not do this (an admin's operation)."""

    status = 403


class Conflict(NbrunnerError):
    status = 409


class TooLarge(NbrunnerError):
    """The request is over a size limit (a job's inputs past ``NBRUNNER_MAX_INPUT_BYTES``)."""

    status = 413


class NoCluster(NbrunnerError):
    """No running cluster could be reached."""

    status = 503


def one_line(text: object, limit: int = 300) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters with "..."."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def from_status(status: int, message: str) -> NbrunnerError:
    """The error a REST answer with HTTP ``status`` and ``message`` stands for (the mapping the
    handlers make, turned around): 400 InvalidRequest, 404 NotFound, 409 Conflict, 413 TooLarge,
    503 NoCluster."""
    kinds = {400: InvalidRequest, 404: NotFound, 409: Conflict, 413: TooLarge, 503: NoCluster}
    error = kinds.get(status, NbrunnerError)(message)
    if status not in kinds:
        error.status = status
    return error
