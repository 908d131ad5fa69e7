"""HTTP adapter: a FastAPI app over the core (``fsdp-skill serve``).

    POST /v1/ask                          Answer            (the ``ask --json`` contract)
    POST /v1/check                        CheckReport       (static findings for code in the body; never run)
    POST /v1/plan                         PlanReport        (per-rank peak memory of the built-in transformer)
    GET  /v1/sections/{id}                SectionOut        (latest verdicts; runs nothing)
    GET  /v1/snippets/{id}                SnippetInfo       (code + cached verdict, or 'unverified')
    POST /v1/snippets/{id}/verify         SnippetInfo       (cache, shared in-flight run, or a fresh run)
    GET  /v1/snippets/{id}/export         text/x-python     (header + verified code, as an attachment)
    GET  /healthz                         Health
    GET  /docs, /openapi.json             OpenAPI

Ids contain one '/' (``topic/slug``).  Only knowledge snippets are ever executed: ``/v1/check`` parses the
code it is sent (:func:`fsdp_skill.core.check.check_code`) and never imports or runs it; the analysis runs in a worker
process (:mod:`fsdp_skill.adapters.http.check_worker`), so a large check does not hold the server's interpreter lock.
Routes run the core in worker threads (FastAPI's threadpool; at most ``ASK_CONCURRENCY`` answers are
computed at once, the rest wait on a semaphore), so verification never blocks the event loop, except
``/v1/plan``: it checks the body at once and awaits the plan queue, which holds no thread while a plan waits; concurrent requests needing
the same unverified snippet share one run (``ask`` verifies through :func:`fsdp_skill.core.verify.snippets.shared_verdicts`).

Every error is JSON ``{"error": message, "code": code}``: 422 ``invalid_request`` when the body breaks the
published schema (missing or malformed JSON, located by line and column; a body that is not UTF-8 or nested
too deeply; wrong types; unknown fields; ``question`` empty, over 32,768 characters or not valid Unicode (an
unpaired surrogate); ``k`` outside 1..20; ``/v1/check``: ``code`` empty or over 200,000 characters, ``select`` /
``ignore`` not lists of strings; with ``detail``), 400 ``bad_input`` when it is schema-valid but not
a question (whitespace-only, binary) or names an unknown rule code prefix, 404 ``not_found`` (unknown id or route), 405 ``method_not_allowed``, 409
``not_verified`` (export of a snippet that did not pass), 413 ``body_too_large`` (request body over 256 KiB),
429 ``queue_full`` with ``Retry-After`` (``/v1/plan``: the plan queue, :mod:`fsdp_skill.core.plan.queue`, has no
place; ``/v1/check``: one check runs at a time and ``CHECK_WAITING`` wait, without a thread each; nothing was started), 500 ``knowledge_error`` / ``state_error`` / ``internal_error``, 503 ``harness_error`` (also a check whose worker
process died or ran past the checker's budget).
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import threading
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.convertors import Convertor, register_url_convertor
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException

from fsdp_skill.adapters.http.check_worker import CheckWorker, on_parent_exit
from fsdp_skill.adapters.http.check_worker import close_all as close_checks
from fsdp_skill.core.answer import MAX_QUESTION_CHARS
from fsdp_skill.core.check import CheckReport
from fsdp_skill.core.models import Answer, SectionOut
from fsdp_skill.core.plan.models import PlanReport
from fsdp_skill.core.plan.request import PlanRequest
from fsdp_skill.core.toolspec import AskInput, CheckInput
from fsdp_skill.core.verify.snippets import SnippetInfo, stop_runs
from fsdp_skill.errors import (
    ExportRefused,
    HarnessError,
    InputError,
    KnowledgeError,
    MissingDependency,
    NotFoundError,
    QueueFull,
    SkillError,
    StateError,
)

MAX_BODY_BYTES = 256 * 1024
# Answers are CPU-bound Python: more threads than cores only make the GIL hand-offs unfair (long tails).
# Requests beyond this wait on a semaphore (blocked threads do not compete for the GIL).
ASK_CONCURRENCY = max(4, 2 * (os.cpu_count() or 1))
KEEP_ALIVE_S = 30  # uvicorn's default 5 s races with busy clients reusing a connection (reset on read)
# /v1/check: analysis is CPU-bound; it runs in one worker process (check_worker), off this interpreter's lock, which
# it held for whole seconds in a thread (a probe saw /healthz at 0.8 s behind one large check). One runs at a time
# (on a 2-core host more would only share the cores), a few wait without holding a thread, the rest get 429 at once.
CHECK_CONCURRENCY = 1
CHECK_WAITING = 4


class _IdConvertor(Convertor):
    """A knowledge id: exactly 'topic/slug' (so '/v1/snippets/a/b/verify' never matches a bare-id route)."""

    regex = r"[^/]+/[^/]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("kid", _IdConvertor())


class AskRequest(AskInput):
    """Body of ``POST /v1/ask``."""

    # strict: wrong JSON types ("k": "3", "verify": "yes") are a 422, not silently coerced
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={"examples": [{"question": "How do I use FSDP2 mixed precision with bf16?", "k": 3, "verify": True}]},
    )

    # the schema says what the server enforces: an empty or over-long question is a 422 like "k": 6.0
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS, description=AskInput.model_fields["question"].description)


class CheckRequest(CheckInput):
    """Body of ``POST /v1/check``."""

    # strict like AskRequest: "select": "FSD0" (not a list) is a 422, not coerced
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={"examples": [{"code": "import torch\n...", "path": "train.py", "select": ["FSD0"], "ignore": []}]},
    )


class ErrorBody(BaseModel):
    """Body of every error response."""

    error: str = Field(description="What went wrong, in one line")
    code: str = Field(description="Machine-readable code: bad_input, not_found, invalid_request, not_verified, ...")
    detail: list[dict] | None = Field(None, description="Per-field problems for invalid_request")


class Health(BaseModel):
    """Body of ``GET /healthz``."""

    status: Literal["ok"] = Field("ok", description="Always 'ok' when the app answers")
    version: str = Field(description="fsdp-skill version")
    torch_version: str | None = Field(
        None, description="torch version of the target interpreter (package metadata); None when torch is not installed there"
    )
    python: str = Field(
        description="Absolute path of the target interpreter (fsdp-skill's own, or --python / "
        "$FSDP_SKILL_PYTHON): snippets run and API signatures are read under it"
    )
    knowledge_fingerprint: str = Field(description="Hash of the loaded knowledge cards")
    topics: int = Field(description="Number of knowledge cards (topics)")
    sections: int = Field(description="Number of knowledge sections")
    snippets: int = Field(description="Number of runnable snippets")
    in_flight: dict[str, int] = Field(
        default_factory=dict, description="Snippets being verified now, with the number of waiting requests"
    )


class _BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413 ``body_too_large`` (declared length or counted chunks)."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = Headers(scope=scope).get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            return await _error(413, f"request body of {length} bytes is over the {self.limit:,}-byte limit", "body_too_large")(
                scope, receive, send
            )
        seen = 0

        async def limited():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise StarletteHTTPException(413, f"request body is over the {self.limit:,}-byte limit")
            return message

        await self.app(scope, limited, send)


def _error(status: int, message: str, code: str, detail=None, headers=None) -> JSONResponse:
    body = {"error": message, "code": code}
    if detail is not None:
        body["detail"] = detail
    return JSONResponse(body, status_code=status, headers=headers)


_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}


def _line_col(doc, pos: int) -> tuple[int, int]:
    """1-based (line, column) of character ``pos`` in the decoded body ``doc``."""
    text = doc if isinstance(doc, str) else ""
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def _invalid(errors, body=None) -> JSONResponse:
    """422 ``invalid_request`` with per-field ``detail``; malformed JSON is located by line and column."""
    detail, parts = [], []
    for e in errors:
        loc, msg = list(e.get("loc", ())), e.get("msg", "")
        if e.get("type") == "json_invalid" and len(loc) == 2 and isinstance(loc[1], int):
            line, col = _line_col(body, loc[1])
            msg = f"malformed JSON at line {line}, column {col}: {(e.get('ctx') or {}).get('error', msg)}"
            parts.append(msg)
            loc = ["body"]
        else:
            parts.append(f"{'.'.join(str(p) for p in loc)}: {msg}")
        detail.append({"loc": loc, "msg": msg, "type": e.get("type", "")})
    return _error(422, f"invalid request: {'; '.join(parts[:5])}", "invalid_request", detail)


def _unparsable_body(cause: BaseException) -> JSONResponse:
    """The 422 for a body FastAPI could not decode: not UTF-8, or JSON nested too deeply to parse."""
    if isinstance(cause, UnicodeDecodeError):
        msg, kind = f"the body is not UTF-8 text (invalid byte at offset {cause.start})", "json_invalid"
    elif isinstance(cause, RecursionError):
        msg, kind = "the JSON body is nested too deeply to parse", "json_invalid"
    else:
        msg, kind = f"the body could not be parsed as JSON ({type(cause).__name__})", "json_invalid"
    return _error(422, f"invalid request: {msg}", "invalid_request", [{"loc": ["body"], "msg": msg, "type": kind}])


# The error tree -> (HTTP status, JSON "code"); Starlette picks the handler of the most specific class.
ERROR_STATUS: dict[type[SkillError], tuple[int, str]] = {
    NotFoundError: (404, "not_found"),
    InputError: (400, "bad_input"),
    ExportRefused: (409, "not_verified"),
    QueueFull: (429, "queue_full"),  # with Retry-After: _queue_full_handler
    MissingDependency: (503, "missing_dependency"),  # the server's environment lacks it, not the request
    KnowledgeError: (500, "knowledge_error"),
    HarnessError: (503, "harness_error"),
    StateError: (500, "state_error"),
    SkillError: (500, "error"),
}


def _skill_error_handler(status: int, code: str):
    async def handler(request: Request, exc: Exception):
        return _error(status, str(exc), code)

    return handler


async def _queue_full_handler(request: Request, exc: Exception) -> JSONResponse:
    """429 ``queue_full`` with ``Retry-After`` (whole seconds: the queue's estimate of when a place frees up)."""
    retry = exc.retry_after_s if isinstance(exc, QueueFull) else 1
    return _error(429, str(exc), "queue_full", headers={"Retry-After": str(retry)})


def create_app(verifier=None) -> FastAPI:
    """The FastAPI application (uvicorn factory: ``fsdp_skill.adapters.http.app:create_app``); ``verifier``
    (a :class:`fsdp_skill.core.verify.snippets.Verifier`, None: the runtime's) backs every verdict it returns."""
    from importlib.metadata import version

    from fsdp_skill.core.interpreter import target_python, torch_version
    from fsdp_skill.core.knowledge.cards import load_knowledge

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        from fsdp_skill.core.routing.router import get_router

        get_router(load_knowledge())  # fail at startup on a bad card; build the index once
        _exit_with_supervisor()
        yield
        check_worker.close()

    app = FastAPI(
        title="fsdp-skill",
        version=version("fsdp-skill"),
        lifespan=lifespan,
        description="Expert answers on PyTorch FSDP and torch.distributed, with code snippets verified on a real "
        "multi-process process group. Only knowledge snippets are ever executed; no route runs code "
        f"a client sends (/v1/check only parses it). Questions are limited to {MAX_QUESTION_CHARS:,} characters.",
    )

    app.add_middleware(_BodyLimit, limit=MAX_BODY_BYTES)

    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError):
        return _invalid(exc.errors(), exc.body)

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException):
        if exc.status_code == 400 and exc.__cause__ is not None:  # FastAPI could not parse the body at all
            return _unparsable_body(exc.__cause__)
        code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
        message = str(exc.detail) if exc.status_code != 404 else f"no route {request.method} {request.url.path}"
        return _error(exc.status_code, message, code, headers=getattr(exc, "headers", None))

    for exc_type, (status, code) in ERROR_STATUS.items():
        app.add_exception_handler(exc_type, _skill_error_handler(status, code))
    app.add_exception_handler(QueueFull, _queue_full_handler)  # ERROR_STATUS's 429, with Retry-After

    @app.exception_handler(Exception)
    async def on_internal(request: Request, exc: Exception):
        logging.getLogger("fsdp_skill.adapters.http.app").error(
            "internal error on %s %s", request.method, request.url.path, exc_info=(type(exc), exc, exc.__traceback__)
        )
        return _error(500, f"internal error ({type(exc).__name__})", "internal_error")

    # FastAPI's `responses`: status -> OpenAPI response fields (here the body model)
    errors: dict[int | str, dict[str, Any]] = {s: {"model": ErrorBody} for s in (400, 404, 422)}
    ask_slots = threading.BoundedSemaphore(ASK_CONCURRENCY)
    from fsdp_skill.core.plan.queue import PlanQueue  # the bounded queue plans use, here for checks

    check_queue = PlanQueue(running=CHECK_CONCURRENCY, waiting=CHECK_WAITING, label="check", knob=None)
    check_worker = CheckWorker()  # the analysis runs in its process: the server's threads only wait on a pipe

    @app.post(
        "/v1/ask",
        response_model=Answer,
        responses=errors,
        tags=["ask"],
        summary="Answer a question (same body as `fsdp-skill ask --json`)",
    )
    def ask_route(body: AskRequest) -> Answer:
        from fsdp_skill.core.answer import ask

        with ask_slots:
            return ask(body.question, k=body.k, verify=body.verify, verifier=verifier, language=body.language)

    @app.post(
        "/v1/check",
        response_model=CheckReport,
        responses={**errors, 429: {"model": ErrorBody, "description": "Checks are busy (one runs, a few wait): Retry-After"}},
        tags=["check"],
        summary="Find FSDP / torch.distributed mistakes in code, statically (the code is parsed, never run)",
    )
    async def check_route(body: CheckRequest) -> CheckReport:
        return await check_queue.run(
            functools.partial(check_worker.check, body.code, body.path, select=body.select, ignore=body.ignore)
        )

    # Plans go through the process's plan queue (fsdp_skill.core.plan.queue, shared with the MCP tool): one
    # measured at a time, a few waiting as entries (no thread each), the rest refused at once.
    @app.post(
        "/v1/plan",
        response_model=PlanReport,
        responses={
            **errors,
            429: {"model": ErrorBody, "description": "The plan queue is full (Retry-After)"},
            503: {"model": ErrorBody},
        },
        tags=["plan"],
        summary="Per-rank peak memory of FSDP2 training for the built-in transformer (no client code is run)",
    )
    async def plan_route(body: PlanRequest) -> PlanReport:
        from fsdp_skill.core.plan.queue import plan_queued

        # checked at once (400), then queued without a thread: a full queue is a 429 at once (on_queue_full)
        return await plan_queued(body)

    @app.get(
        "/v1/sections/{section_id:kid}",
        response_model=SectionOut,
        responses=errors,
        tags=["knowledge"],
        summary="One knowledge section with its snippets' latest verdicts (runs nothing)",
    )
    def section_route(section_id: str) -> SectionOut:
        from fsdp_skill.core.verify.snippets import get_section

        return get_section(section_id, verifier=verifier)

    @app.post(
        "/v1/snippets/{snippet_id:kid}/verify",
        response_model=SnippetInfo,
        responses={**errors, 503: {"model": ErrorBody}},
        tags=["snippets"],
        summary="Verify a knowledge snippet on a real process group (cache or run)",
    )
    def verify_route(
        snippet_id: str, force: bool = Query(False, description="Ignore the cached verdict and run again")
    ) -> SnippetInfo:
        from fsdp_skill.core.verify.snippets import verify_snippet

        return verify_snippet(snippet_id, use_cache=not force, verifier=verifier)

    @app.post("/v1/snippets/{snippet_id}/verify", include_in_schema=False)
    def verify_bad_id_route(snippet_id: str) -> SnippetInfo:
        """A one-segment id ('x'): 404 naming close ids (without this route, GET /v1/snippets/{x/verify} made it a 405)."""
        from fsdp_skill.core.verify.snippets import verify_snippet

        return verify_snippet(snippet_id, use_cache=True, verifier=verifier)

    @app.get(
        "/v1/snippets/{snippet_id:kid}/export",
        response_class=Response,
        tags=["snippets"],
        responses={
            200: {"content": {"text/x-python": {}}, "description": "The script file"},
            409: {"model": ErrorBody},
            404: {"model": ErrorBody},
        },
        summary="The snippet as a script file: header + the verified code byte for byte",
    )
    def export_route(
        snippet_id: str,
        include_unverified: bool = Query(False, description="Also export a snippet that did not pass, marked NOT VERIFIED"),
    ) -> Response:
        from fsdp_skill.core.verify.export import export_one

        sc = export_one(snippet_id, include_unverified=include_unverified, verifier=verifier)
        return Response(
            sc.script.encode("utf-8"),
            media_type="text/x-python; charset=utf-8",
            headers={
                "Content-Disposition": f'attachment; filename="{sc.filename}"',
                "X-Code-SHA256": sc.code_sha256,
                "X-Verdict": sc.verdict.status,
            },
        )

    @app.get(
        "/v1/snippets/{snippet_id:kid}",
        response_model=SnippetInfo,
        responses=errors,
        tags=["snippets"],
        summary="A knowledge snippet's code and latest verdict (cached, or 'unverified'; runs nothing)",
    )
    def snippet_route(snippet_id: str) -> SnippetInfo:
        from fsdp_skill.core.verify.snippets import get_snippet

        return get_snippet(snippet_id, verifier=verifier)

    @app.get("/healthz", response_model=Health, tags=["meta"], summary="Liveness, knowledge fingerprint and counts")
    def healthz() -> Health:
        from fsdp_skill.core.verify.snippets import in_flight

        kb = load_knowledge()
        return Health(
            version=version("fsdp-skill"),
            torch_version=torch_version(),
            python=target_python(),
            knowledge_fingerprint=kb.fingerprint,
            topics=len(kb.cards),
            sections=len(kb.sections),
            snippets=len(kb.snippets),
            in_flight=in_flight(),
        )

    return app


def _exit_with_supervisor() -> None:
    """In a worker of ``serve --workers N`` (a process uvicorn's supervisor started with multiprocessing): once the
    supervisor is gone (a SIGKILL gives it no time to stop its workers), stop this worker's runs, plans and check
    worker and shut down as on SIGTERM, rather than serve on with nobody owning it (probe 29 N3). A no-op in a
    process that multiprocessing did not start (``serve`` without workers, a test client)."""

    def stop() -> None:
        _stop_all()
        os.kill(os.getpid(), signal.SIGTERM)

    on_parent_exit(stop, "fsdp-skill-supervisor-watch")


def _stop_all() -> None:
    """Stop the verification runs and the plans in flight (their requests get the harness error), for a shutdown."""
    stop_runs()
    close_checks()  # a check in flight gets a 503
    runner = sys.modules.get("fsdp_skill.core.plan.runner")  # loaded only once a plan ran: nothing to stop otherwise
    if runner is not None:
        runner.abort_all()


def serve(
    host: str = "127.0.0.1", port: int = 8000, workers: int = 1, log_level: str = "info", read_timeout: float | None = None
) -> None:
    """Run the app with uvicorn (blocks until interrupted).

    ``read_timeout`` (seconds; default :data:`~fsdp_skill.adapters.http.protocol.READ_TIMEOUT_S`): a
    connection whose next request has not arrived whole that long after it opened or after its previous
    response is closed (see :mod:`fsdp_skill.adapters.http.protocol`).

    SIGTERM is a clean shutdown (returns; the caller exits 0): verification runs and plans in flight are killed and
    reaped at once (their requests get the harness error), then uvicorn stops.  SIGINT stops it the same
    way and is re-raised (KeyboardInterrupt, exit 130).  With several workers uvicorn's own supervisor
    handles signals; a worker's runs die with it (their shepherds and zygotes see it exit).
    """
    import uvicorn

    from fsdp_skill.adapters.http.protocol import READ_TIMEOUT_S, protocol_class

    kwargs = dict(
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        timeout_keep_alive=KEEP_ALIVE_S,
        http=protocol_class(read_timeout or READ_TIMEOUT_S),
    )
    if workers > 1:
        uvicorn.run("fsdp_skill.adapters.http.app:create_app", **kwargs)
        return
    kwargs.pop("workers")

    class _Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:
            super().handle_exit(sig, frame)
            threading.Thread(target=_stop_all, name="fsdp-skill-stop-runs", daemon=True).start()
            if sig == signal.SIGTERM:  # a requested stop, not an interrupt: exit 0 once shut down
                # uvicorn.Server's list of signals to re-raise after shutdown (uvicorn is not analysed: declared here)
                self._captured_signals: list[int] = [s for s in self._captured_signals if s != signal.SIGTERM]

    _Server(uvicorn.Config("fsdp_skill.adapters.http.app:create_app", **kwargs)).run()
