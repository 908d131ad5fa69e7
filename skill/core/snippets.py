"""Knowledge snippets by id: latest verdict, verification with shared in-flight runs, sections with verdicts.

The HTTP app, the MCP server and the CLI all call these; none of them runs code on its own.

Only *knowledge* snippets are ever executed here: every function takes a snippet id, looks the code up
in the knowledge base and hands it to :mod:`runtime`.  Nothing accepts code from a caller.

Concurrent callers asking for the same snippet (same id and same code) while it is being verified share
one run: the first caller owns the run, the others wait on its :class:`concurrent.futures.Future`.
This is per process; across processes (``serve --workers N``) the runtime's verdict cache takes over
once the first run has finished.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Callable

from pydantic import BaseModel, Field

from fsdp_skill.runtime.cache import code_sha256
from fsdp_skill.runtime.models import Verdict
from fsdp_skill.core.knowledge import Knowledge, load_knowledge
from fsdp_skill.core.models import SectionOut, SnippetSpec


class SnippetInfo(BaseModel):
    """A knowledge snippet with its code and its latest verdict on this host."""

    id: str = Field(description="Snippet id, e.g. 'join/ddp-join'")
    section_id: str = Field(description="Id of the section the snippet belongs to")
    section_title: str = Field(description="Heading of that section")
    sources: list[str] = Field(default_factory=list, description="Official documentation URLs of the section")
    code: str = Field(description="The complete script, byte-for-byte what is verified and exported")
    code_sha256: str = Field(description="SHA-256 of the UTF-8 code bytes (equals verification.code_sha256 once verified)")
    filename: str = Field(description="File name used on export, e.g. 'join_ddp-join.py'")
    launch: str = Field(description="Command that launches it, e.g. 'torchrun --standalone --nproc_per_node=2 join_ddp-join.py'")
    world_size: int = Field(description="Ranks the script is written for")
    backend: str = Field(description="Backend setting of the snippet: 'auto', 'gloo' or 'nccl'")
    requires: list[str] = Field(default_factory=list, description="Host requirements, e.g. ['cuda']")
    verification: Verdict = Field(description="Latest verdict: a cached or fresh run, or 'unverified' if never run here")


# --------------------------------------------------------------------------- in-flight runs
_LOCK = threading.Lock()
_INFLIGHT: dict[tuple[str, str], "_Run"] = {}


class _Run:
    """One verification run in progress; ``joined`` counts callers that wait on it instead of running."""

    def __init__(self) -> None:
        self.future: Future = Future()
        self.joined = 0


def _key(spec: SnippetSpec) -> tuple[str, str]:
    return (spec.id, code_sha256(spec.code))


def in_flight(snippet_id: str | None = None) -> dict[str, int]:
    """Snippet ids being verified now in this process, with how many extra callers wait on each run."""
    with _LOCK:
        return {k[0]: r.joined for k, r in _INFLIGHT.items() if snippet_id is None or k[0] == snippet_id}


def _cached(spec: SnippetSpec) -> Verdict | None:
    import fsdp_skill.runtime as runtime

    hit = runtime.cached_verdict(spec.code, world_size=spec.world_size, backend=spec.backend, requires=tuple(spec.requires))
    return hit.model_copy(update={"snippet_id": spec.id}) if hit is not None else None


def shared_verdicts(specs: list[SnippetSpec], *, use_cache: bool = True,
                    progress: Callable | None = None) -> dict[str, Verdict]:
    """Verdict per snippet id, running each cache miss at most once across concurrent callers.

    With ``use_cache`` a cached verdict is returned at once; otherwise (or on a miss) the snippet joins a
    run already in flight for the same id and code, or starts one.  All runs this caller owns go to
    :func:`fsdp_skill.runtime.verify_many` as one batch.  Raises :class:`fsdp_skill.errors.HarnessError` (from the
    runtime) when the runs could not happen; callers waiting on those runs get the same error.
    """
    out: dict[str, Verdict] = {}
    waiting: dict[str, Future] = {}
    owned: list[tuple[SnippetSpec, _Run]] = []
    for spec in dict((s.id, s) for s in specs).values():
        if use_cache:
            hit = _cached(spec)
            if hit is not None:
                out[spec.id] = hit
                continue
        key = _key(spec)
        with _LOCK:
            run = _INFLIGHT.get(key)
            if run is not None:
                run.joined += 1
                waiting[spec.id] = run.future
                continue
            run = _INFLIGHT[key] = _Run()
        owned.append((spec, run))
    if owned:
        import fsdp_skill.runtime as runtime

        try:
            jobs = [runtime.Job(code=s.code, world_size=s.world_size, backend=s.backend, timeout=s.timeout,
                                requires=tuple(s.requires), snippet_id=s.id, filename=s.filename) for s, _ in owned]
            verdicts = runtime.verify_many(jobs, use_cache=use_cache, progress=progress)
            for (spec, run), verdict in zip(owned, verdicts):
                verdict = verdict.model_copy(update={"snippet_id": spec.id})
                out[spec.id] = verdict
                run.future.set_result(verdict)
        except BaseException as exc:
            for _, run in owned:
                if not run.future.done():
                    run.future.set_exception(exc)
            raise
        finally:
            with _LOCK:
                for spec, run in owned:
                    if _INFLIGHT.get(_key(spec)) is run:
                        del _INFLIGHT[_key(spec)]
    for sid, fut in waiting.items():
        out[sid] = fut.result()
    return out


# --------------------------------------------------------------------------- by id
def unverified(spec: SnippetSpec, reason: str | None = None) -> Verdict:
    """An 'unverified' verdict for ``spec`` (never run on this host, or not asked for)."""
    if reason is None:
        reason = "not verified on this host yet; verify it with `fsdp-skill verify ID` or POST /v1/snippets/ID/verify"
        if in_flight(spec.id):
            reason = "a verification run of this snippet is in progress"
    return Verdict(status="unverified", reason=reason, snippet_id=spec.id, code_sha256=code_sha256(spec.code),
                   world_size=spec.world_size, backend=spec.backend)


def snippet_info(spec: SnippetSpec, verdict: Verdict, kb: Knowledge) -> SnippetInfo:
    """The :class:`SnippetInfo` of ``spec`` with ``verdict``."""
    section = kb.section(spec.section_id)
    return SnippetInfo(id=spec.id, section_id=spec.section_id, section_title=section.title, sources=section.sources,
                       code=spec.code, code_sha256=code_sha256(spec.code), filename=spec.filename, launch=spec.launch,
                       world_size=spec.world_size, backend=spec.backend, requires=spec.requires, verification=verdict)


def latest_verdict(spec: SnippetSpec) -> Verdict:
    """The cached verdict of ``spec`` on this host and torch, or 'unverified'.  Never runs anything."""
    return _cached(spec) or unverified(spec)


def get_snippet(snippet_id: str, *, kb: Knowledge | None = None) -> SnippetInfo:
    """Code and latest verdict (cached or unverified) of a knowledge snippet; NotFoundError for an unknown id."""
    kb = kb or load_knowledge()
    spec = kb.snippet(snippet_id)
    return snippet_info(spec, latest_verdict(spec), kb)


def verify_snippet(snippet_id: str, *, kb: Knowledge | None = None, use_cache: bool = True) -> SnippetInfo:
    """Verify a knowledge snippet (cache, a run in flight, or a fresh run) and return it with the verdict.

    ``use_cache=False`` forces a fresh run (unless one is already in flight, which is joined).
    Raises NotFoundError for an unknown id, HarnessError when the run cannot happen.
    """
    kb = kb or load_knowledge()
    spec = kb.snippet(snippet_id)
    verdict = shared_verdicts([spec], use_cache=use_cache)[spec.id]
    return snippet_info(spec, verdict, kb)


def get_section(section_id: str, *, kb: Knowledge | None = None) -> SectionOut:
    """A section as in an answer (``score`` 0), its snippets with their latest verdicts; never runs anything."""
    from fsdp_skill.core.answer import section_out

    kb = kb or load_knowledge()
    section = kb.section(section_id)
    return section_out(section, 0.0, {sn.id: latest_verdict(sn) for sn in section.snippets})
