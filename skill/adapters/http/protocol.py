"""uvicorn's h11 HTTP protocol with a request read deadline.

uvicorn closes an idle keep-alive connection only after a response (``timeout_keep_alive``): a client
that connects and sends nothing, or sends part of a request (headers, or a body slower than promised),
holds its connection, and a task on the server, forever.  :class:`ReadDeadlineH11Protocol` closes such a
connection when a whole request has not arrived ``read_timeout`` seconds after the connection opened or
after the previous response was sent.  A request that has arrived whole is never cut, however long the
handler runs (a verification may take minutes).

Used by :func:`fsdp_skill.adapters.http.app.serve`; this module imports uvicorn, so import it only there.
"""

from __future__ import annotations

import asyncio
import logging

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("uvicorn.error")

READ_TIMEOUT_S = 30.0  # default of ``fsdp-skill serve --read-timeout``


def protocol_class(read_timeout: float) -> type[H11Protocol]:
    """A :class:`ReadDeadlineH11Protocol` subclass with ``read_timeout`` (seconds, > 0) bound, to pass as
    uvicorn's ``http=``.  Raises ValueError for a timeout that is not a positive finite number."""
    if not 0 < read_timeout < float("inf"):
        raise ValueError(f"read_timeout must be a positive, finite number of seconds, not {read_timeout!r}")
    micros = max(1, round(read_timeout * 1e6))
    return _bound(f"{_PREFIX}{micros}us", micros / 1e6)


_PREFIX = "ReadDeadlineH11Protocol_"


def _bound(name: str, read_timeout: float) -> type[H11Protocol]:
    """The subclass named ``name`` (kept in this module, so that pickle finds it by name: ``serve --workers N``
    hands uvicorn's config, this class in it, to each worker process, where :func:`__getattr__` rebuilds it)."""
    found = globals().get(name)
    if found is None:
        found = type(name, (ReadDeadlineH11Protocol,), {"read_timeout": read_timeout, "__module__": __name__})
        found.__qualname__ = name
        globals()[name] = found
    return found


def __getattr__(name: str) -> type[H11Protocol]:
    """``ReadDeadlineH11Protocol_<N>us``: the subclass with a read deadline of N microseconds (a worker process
    unpickling the class the serving process bound; see :func:`_bound`)."""
    digits = name[len(_PREFIX) : -2] if name.startswith(_PREFIX) and name.endswith("us") else ""
    if not digits.isdigit() or int(digits) < 1:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _bound(name, int(digits) / 1e6)


class ReadDeadlineH11Protocol(H11Protocol):
    """H11Protocol that closes a connection whose next request has not arrived whole in time.

    The deadline (``read_timeout`` seconds) is armed when the connection opens and again after each
    response.  When it fires, the connection is closed if it is waiting for a request (none received, or
    only part of one) or if the request's body is still arriving; a request being handled is left alone.
    """

    read_timeout: float = READ_TIMEOUT_S

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)
        self._arm_read_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_read_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_read_deadline()
        super().connection_lost(exc)

    def _arm_read_deadline(self) -> None:
        self._cancel_read_deadline()
        if not self.transport.is_closing():
            self._read_deadline = self.loop.call_later(self.read_timeout, self._read_deadline_passed)

    def _cancel_read_deadline(self) -> None:
        handle = getattr(self, "_read_deadline", None)
        if handle is not None:
            handle.cancel()
            self._read_deadline = None

    def _read_deadline_passed(self) -> None:
        self._read_deadline = None
        cycle = self.cycle
        waiting = cycle is None or cycle.response_complete  # no request in progress: idle or headers partial
        if self.transport.is_closing() or not (waiting or cycle.more_body):
            return
        log.debug("closing %s: no whole request within %g s", self.client, self.read_timeout)
        self.transport.close()
