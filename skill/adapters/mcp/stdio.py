"""The stdio transport of ``fsdp-skill mcp``: the SDK's ``stdio_server`` behind a small JSON-RPC gate.

The SDK (mcp 2.x) drops what it cannot parse without a reply and cancels requests still running when
stdin closes.  JSON-RPC 2.0 asks for more, so every line passes :class:`Gate` first:

* a line that is not JSON (or not UTF-8) gets ``-32700 Parse error`` (id null);
* valid JSON that is not a JSON-RPC message gets ``-32600 Invalid Request`` (its id when it has one), a
  request whose ``params`` is not an object ``-32602 Invalid params``, one whose id is null (or not a
  string or integer) ``-32600``, one holding a string that is not valid Unicode (an escaped unpaired
  surrogate) ``-32602`` (in ``params``) or ``-32600``; a malformed notification gets nothing, as
  notifications never do;
* at the end of stdin the gate waits until every request it let through has been answered (or cancelled
  by the client) before it reports EOF to the SDK, so a request written just before the client closes
  stdin still gets its reply.

Everything else is the SDK's: it parses the lines the gate lets through and writes every reply, through
:class:`Wire`, which notes the ids answered.  While serving, fd 0 reads /dev/null and fd 1 writes to
stderr, so ranks and other children cannot read the protocol or corrupt it with their output.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, BinaryIO

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


def _id(value: object) -> str | int | None:
    """A JSON-RPC id usable in a reply (a string or an integer), else None."""
    return value if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)) else None


def _valid_unicode(obj: object) -> bool:
    """Whether every string (keys included) in parsed JSON ``obj`` is valid Unicode, i.e. encodable as UTF-8
    (JSON's ``\\ud800`` escapes can carry unpaired surrogates)."""
    if isinstance(obj, str):
        try:
            obj.encode("utf-8")
            return True
        except UnicodeEncodeError:
            return False
    if isinstance(obj, dict):
        return all(_valid_unicode(k) and _valid_unicode(v) for k, v in obj.items())
    if isinstance(obj, list):
        return all(_valid_unicode(v) for v in obj)
    return True


def classify(obj: object) -> tuple[int, str] | None:
    """None when ``obj`` (parsed JSON) is a JSON-RPC message the SDK accepts, else (code, message) of the error."""
    try:
        types.jsonrpc_message_adapter.validate_python(obj, by_name=False)
        return None
    except ValueError:
        pass
    if isinstance(obj, list):
        return INVALID_REQUEST, "Invalid Request: batches are not supported"
    if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message object"
    if isinstance(obj.get("method"), str) and "params" in obj and not isinstance(obj["params"], dict):
        return INVALID_PARAMS, f"Invalid params: params must be an object, not {type(obj['params']).__name__}"
    return INVALID_REQUEST, "Invalid Request: not a valid JSON-RPC request, notification or response"


class Wire:
    """The protocol side of stdout: one line per message, written under a lock; notes the replies."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._lock = threading.Lock()
        self.pending: set[str | int] = set()  # ids of requests let through and not yet answered
        self.settled = threading.Condition(self._lock)

    def _write_sync(self, text: str) -> None:
        with self._lock:
            self._out.write(text.encode("utf-8"))
            self._out.flush()

    async def write(self, text: str) -> None:
        """Write SDK output (one JSON message per line) and mark the requests it answers."""
        for line in text.splitlines():
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict) and ("result" in msg or "error" in msg):
                self.settle(msg.get("id"))
        await anyio.to_thread.run_sync(self._write_sync, text)

    async def flush(self) -> None:
        """Nothing to do: :meth:`write` flushes."""

    def settle(self, rid: object) -> None:
        """Request ``rid`` (an id as a message holds it) needs no more waiting for (answered or cancelled)."""
        with self._lock:
            if isinstance(rid, (str, int)):  # only those are ever pending
                self.pending.discard(rid)
            self.settled.notify_all()

    async def error(self, rid: str | int | None, code: int, message: str) -> None:
        """Reply with a JSON-RPC error."""
        reply = {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
        await anyio.to_thread.run_sync(self._write_sync, json.dumps(reply, separators=(",", ":")) + "\n")

    def wait_settled(self) -> None:
        """Block until no request let through is waiting for its reply."""
        with self._lock:
            while self.pending:
                self.settled.wait()


class Gate:
    """The lines of the real stdin the SDK should see, as an async iterator of str (see the module doc)."""

    def __init__(self, inp: BinaryIO, wire: Wire) -> None:
        self._inp = anyio.wrap_file(inp)
        self._wire = wire

    def __aiter__(self) -> Gate:
        return self

    async def __anext__(self) -> str:
        while True:
            raw = await self._inp.readline()
            if not raw:
                await anyio.to_thread.run_sync(self._wire.wait_settled)
                raise StopAsyncIteration
            if not raw.strip():
                continue
            line = await self._admit(raw)
            if line is not None:
                return line

    async def _admit(self, raw: bytes) -> str | None:
        """The line as text when the SDK should see it; else None, after replying with the error."""
        try:
            text = raw.decode("utf-8")
            obj = json.loads(text)
        except (ValueError, RecursionError) as exc:
            await self._wire.error(None, PARSE_ERROR, f"Parse error: {str(exc)[:200]}")
            return None
        problem = classify(obj)
        is_request = isinstance(obj, dict) and isinstance(obj.get("method"), str) and "id" in obj
        if is_request and _id(obj["id"]) is None:  # the SDK would take {"id": null, ...} for a notification
            problem = INVALID_REQUEST, "Invalid Request: id must be a string or an integer"
        elif problem is None and not _valid_unicode(obj):  # the SDK never answers these
            where = "params" if isinstance(obj, dict) and not _valid_unicode(obj.get("params")) else "message"
            problem = (
                INVALID_PARAMS if where == "params" else INVALID_REQUEST,
                f"Invalid {'params' if where == 'params' else 'Request'}: a string is not valid Unicode "
                f"(an unpaired surrogate such as \\ud800)",
            )
        if problem is not None:
            if is_request or not (isinstance(obj, dict) and "method" in obj):  # notifications get no reply
                await self._wire.error(_id(obj.get("id")) if isinstance(obj, dict) else None, *problem)
            return None
        if is_request:
            with self._wire.settled:
                self._wire.pending.add(obj["id"])
        elif obj.get("method") == "notifications/cancelled":  # a cancelled request is never answered
            self._wire.settle((obj.get("params") or {}).get("requestId"))
        return text


@contextmanager
def _claim_std_fds() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """Private duplicates of fd 0 and fd 1 (binary files) while fd 0 reads /dev/null and fd 1 writes to
    stderr; restored on exit."""
    saved = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        sys.stdout.flush()
        os.dup2(devnull, 0)
        os.dup2(2, 1)
        with os.fdopen(saved[0], "rb", closefd=False) as inp, os.fdopen(saved[1], "wb", closefd=False) as out:
            yield inp, out
    finally:
        os.dup2(saved[0], 0)
        os.dup2(saved[1], 1)
        for fd in (*saved, devnull):
            os.close(fd)


async def serve(server: MCPServer, inp: BinaryIO, out: BinaryIO) -> None:
    """Serve ``server`` (an MCPServer) on the binary files ``inp``/``out`` until ``inp`` ends and every
    request read has been answered."""
    wire = Wire(out)
    # stdio_server only iterates stdin and calls stdout.write/flush, but declares anyio.AsyncFile[str] for both
    async with stdio_server(stdin=Gate(inp, wire), stdout=wire) as (read_stream, write_stream):  # type: ignore[arg-type]
        lowlevel = server._lowlevel_server  # the SDK's MCPServer.run_stdio_async does the same
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def run(server: MCPServer) -> None:
    """Serve ``server`` over this process's stdin/stdout (see the module doc)."""
    with _claim_std_fds() as (inp, out):
        anyio.run(serve, server, inp, out)
