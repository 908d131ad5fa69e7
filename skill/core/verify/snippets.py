"""Knowledge snippets: selection, the one path from a snippet to a run, verdicts shared between callers.

The HTTP app, the MCP server, the CLI and the export all call these; none of them runs code on its own.

* :func:`job_for` is the one function from a knowledge snippet to a runtime job; :func:`script_job` makes
  the job of a user's own script file (the CLI's ``verify PATH.py``).
* :func:`unverified` is the one builder of an 'unverified' verdict.
* A :class:`Verifier` answers from the cache or runs jobs; :class:`RuntimeVerifier` (the default, used when
  ``verifier`` is None) uses :mod:`fsdp_skill.runtime`; tests pass a fake one.  Every function that may
  look up or run a verdict takes ``verifier``.

Only *knowledge* snippets are ever executed through :func:`shared_verdicts`: it takes snippet specs from
the knowledge base, never code from a caller.  Concurrent callers asking for the same snippet (same id and
same code) while it is being verified share one run: the first caller owns the run, the others wait on its
:class:`concurrent.futures.Future`.  This is per process; across processes (``serve --workers N``) the
runtime's verdict cache takes over once the first run has finished.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from fsdp_skill.core.knowledge.cards import Knowledge, load_knowledge
from fsdp_skill.core.models import RecordedRun, SectionDoc, SectionOut, SnippetOut, SnippetSpec
from fsdp_skill.errors import HarnessError, InvalidArgument, NotFoundError
from fsdp_skill.records import Record
from fsdp_skill.runtime.cache import code_sha256
from fsdp_skill.runtime.models import Verdict

if TYPE_CHECKING:  # the harness (runtime.api) loads only when a job is made: not for an answer without verification
    from concurrent.futures import Future  # (and concurrent.futures, with logging, only when a run is shared)

    from fsdp_skill.runtime.api import Job

Progress = Callable[[int, int, Verdict], None]
# called once, before a batch of runs starts, with the snippets about to run (cache misses this caller owns)
BeforeRun = Callable[[list[SnippetSpec]], None]


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class SnippetInfo(Record):
    """A knowledge snippet with its code and its latest verdict on this host."""

    id: str
    """Snippet id, e.g. 'join/ddp-join'"""
    section_id: str
    """Id of the section the snippet belongs to"""
    section_title: str
    """Heading of that section"""
    sources: list[str] = field(default_factory=list)
    """Official documentation URLs of the section"""
    code: str
    """The complete script, byte-for-byte what is verified and exported"""
    code_sha256: str
    """SHA-256 of the UTF-8 code bytes (equals verification.code_sha256 once verified)"""
    filename: str
    """File name used on export, e.g. 'join_ddp-join.py'"""
    launch: str
    """Command that launches it, e.g. 'torchrun --standalone --nproc_per_node=2 join_ddp-join.py'"""
    world_size: int
    """Ranks the script is written for"""
    backend: str
    """Backend setting of the snippet: 'auto', 'gloo' or 'nccl'"""
    requires: list[str] = field(default_factory=list)
    """Host requirements, e.g. ['cuda']"""
    verification: Verdict
    """Latest verdict: a cached or fresh run, or 'unverified' if never run here"""


# --------------------------------------------------------------------------- jobs
def job_for(spec: SnippetSpec, *, world_size: int | None = None, backend: str | None = None, timeout: float | None = None) -> Job:
    """The runtime job of a knowledge snippet; ``world_size``/``backend``/``timeout`` (seconds) override
    the snippet's own settings when given."""
    from fsdp_skill.runtime.api import Job

    return Job(
        code=spec.code,
        world_size=world_size or spec.world_size,
        backend=backend or spec.backend,
        timeout=spec.timeout if timeout is None else timeout,
        requires=tuple(spec.requires),
        snippet_id=spec.id,
        filename=spec.filename,
        checks=spec.checks,
    )


def script_job(
    path: str,
    *,
    world_size: int | None = None,
    backend: str | None = None,
    timeout: float | None = None,
    args: Iterable[str] = (),
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    dry_run: str | None = None,
) -> Job:
    """The job of a user's own script file, run where it lies (its directory first on ``sys.path``, so
    sibling modules import) from ``cwd`` (default: the caller's working directory), as
    ``torchrun PATH ARGS...`` would, with ``args`` as its arguments and ``env`` added to its environment;
    always run (never answered from the cache); default world_size 2, backend 'auto', timeout 60 s.
    ``dry_run`` 'cpu': a CUDA script run on gloo ranks with CUDA placement mapped to the CPU
    (:mod:`fsdp_skill.runtime.dryrun`).

    Raises InvalidArgument when ``path`` is not a readable ``.py`` file Python could decode (UTF-8, or its coding
    cookie's encoding).
    """
    if not path.endswith(".py"):
        raise InvalidArgument(f"{path} is not a Python script (.py); give a snippet id or a PATH.py")
    code = _read_script(path)
    from fsdp_skill.runtime.api import Job

    return Job(
        code=code,
        world_size=world_size or 2,
        backend=backend or "auto",
        timeout=60.0 if timeout is None else timeout,
        filename=os.path.basename(path),
        debug=True,
        path=os.path.abspath(path),
        cwd=os.path.abspath(cwd or os.getcwd()),
        args=tuple(args),
        env=dict(env or {}),
        dry_run=dry_run,
    )


def _read_script(path: str) -> str:
    """The text of the script file ``path``, decoded as Python decodes a source file (a UTF-8 BOM, a PEP 263 coding
    cookie, else UTF-8: :func:`fsdp_skill.core.check.files.read_source`); raises InvalidArgument when it is not a
    readable regular file Python could decode. Opened without blocking and checked on the open descriptor: a FIFO
    (or a device) named like a script is refused at once, not read forever."""
    import stat

    from fsdp_skill.core.check.files import UndecodableSource, read_source

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InvalidArgument(f"cannot read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InvalidArgument(f"cannot read {path}: not a regular file (a directory, FIFO or device); give a PATH.py file")
    with os.fdopen(fd, "rb") as f:
        try:
            return read_source(f.read())
        except OSError as exc:
            raise InvalidArgument(f"cannot read {path}: {exc.strerror or exc}") from None
        except UndecodableSource as exc:
            raise InvalidArgument(f"cannot read {path}: {exc}") from None


def select_snippets(
    ids: Iterable[str] = (), *, topics: Iterable[str] = (), all_snippets: bool = False, kb: Knowledge | None = None
) -> list[SnippetSpec]:
    """Snippets by id, by topic(s), or all of them (knowledge order first, then ids; no duplicates).

    An id may also be a section id: it means every snippet of that section.  Raises NotFoundError for an
    unknown id or topic (naming close ones), a section without snippets, and an empty selection.
    """
    kb = kb or load_knowledge()
    chosen: dict[str, SnippetSpec] = {}
    if all_snippets:
        chosen.update(kb.snippets)
    for topic in topics:
        if topic not in kb.topics:
            import difflib

            close = difflib.get_close_matches(topic, kb.topics, n=3, cutoff=0.5)
            hint = f"did you mean {', '.join(close)}?" if close else f"known topics: {', '.join(kb.topics)}"
            raise NotFoundError(f"unknown topic {topic!r}; {hint}")
        chosen.update({s.id: s for s in kb.snippets.values() if kb.section(s.section_id).topic == topic})
    for sid in ids:
        of_section = [s for s in kb.snippets.values() if s.section_id == sid]
        if of_section:
            chosen.update({s.id: s for s in of_section})
        elif sid in kb.sections and sid not in kb.snippets:
            raise NotFoundError(f"section {sid!r} has no runnable snippets (see `fsdp-skill show --list --snippets`)")
        else:
            chosen[sid] = kb.snippet(sid)
    if not chosen:
        raise NotFoundError("no snippets selected: give snippet ids, a topic or all")
    return list(chosen.values())


# --------------------------------------------------------------------------- verifiers
class Verifier(Protocol):
    """What answers, exports and the adapters need of verification."""

    def cached(self, job: Job) -> Verdict | None:
        """The verdict known without running (cache hit or host-based skip), else None; never runs."""

    def run(
        self, jobs: list[Job], *, launcher: str = "warm", use_cache: bool = True, progress: Progress | None = None
    ) -> list[Verdict]:
        """One verdict per job, in order (cached or run now); raises HarnessError when runs cannot happen."""


class RuntimeVerifier:
    """The real verifier: :func:`fsdp_skill.runtime.cached_verdict` and :func:`fsdp_skill.runtime.verify_many`
    (imported on first use, so answering from the cache stays light)."""

    def cached(self, job: Job) -> Verdict | None:
        from fsdp_skill.runtime.api import cached_verdict

        return cached_verdict(job.code, world_size=job.world_size, backend=job.backend, requires=tuple(job.requires))

    def run(
        self, jobs: list[Job], *, launcher: str = "warm", use_cache: bool = True, progress: Progress | None = None
    ) -> list[Verdict]:
        from fsdp_skill.runtime.api import verify_many

        return verify_many(jobs, launcher=launcher, use_cache=use_cache, progress=progress)


DEFAULT_VERIFIER = RuntimeVerifier()


def _verifier(verifier: Verifier | None) -> Verifier:
    return DEFAULT_VERIFIER if verifier is None else verifier


def unverified(spec: SnippetSpec, reason: str | None = None) -> Verdict:
    """The 'unverified' verdict of ``spec`` (not run on this host, or not asked for), with its code hash."""
    if reason is None:
        reason = "not verified on this host yet; verify it with `fsdp-skill verify ID` or POST /v1/snippets/ID/verify"
        if in_flight(spec.id):
            reason = "a verification run of this snippet is in progress"
    return Verdict(
        status="unverified",
        reason=reason,
        snippet_id=spec.id,
        code_sha256=code_sha256(spec.code),
        world_size=spec.world_size,
        backend=spec.backend,
        checks=spec.checks,
    )


# --------------------------------------------------------------------------- in-flight runs
_LOCK = threading.Lock()
_INFLIGHT: dict[tuple[str, str], _Run] = {}


class _Run:
    """One verification run in progress; ``joined`` counts callers that wait on it instead of running."""

    def __init__(self) -> None:
        from concurrent.futures import Future

        self.future: Future[Verdict] = Future()
        self.joined = 0


def _key(spec: SnippetSpec) -> tuple[str, str]:
    return (spec.id, code_sha256(spec.code))


def in_flight(snippet_id: str | None = None) -> dict[str, int]:
    """Snippet ids being verified now in this process, with how many extra callers wait on each run."""
    with _LOCK:
        return {k[0]: r.joined for k, r in _INFLIGHT.items() if snippet_id is None or k[0] == snippet_id}


def _cached(spec: SnippetSpec, verifier: Verifier | None) -> Verdict | None:
    hit = _verifier(verifier).cached(job_for(spec))
    return hit.model_copy(update={"snippet_id": spec.id, "checks": spec.checks}) if hit is not None else None


def shared_verdicts(
    specs: list[SnippetSpec],
    *,
    verifier: Verifier | None = None,
    use_cache: bool = True,
    progress: Progress | None = None,
    before_run: BeforeRun | None = None,
) -> dict[str, Verdict]:
    """Verdict per snippet id, running each cache miss at most once across concurrent callers.

    With ``use_cache`` a cached verdict is returned at once; otherwise (or on a miss) the snippet joins a
    run already in flight for the same id and code, or starts one.  All runs this caller owns go to
    ``verifier.run`` as one batch, after ``before_run`` (if given) is told which snippets are about to run.  Raises :class:`fsdp_skill.errors.HarnessError` (from the
    runtime) when the runs could not happen; callers waiting on those runs get the same error.
    """
    out: dict[str, Verdict] = {}
    waiting: dict[str, Future[Verdict]] = {}
    owned: list[tuple[SnippetSpec, _Run]] = []
    for spec in dict((s.id, s) for s in specs).values():
        if use_cache:
            hit = _cached(spec, verifier)
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
        if before_run is not None:
            before_run([s for s, _ in owned])
        try:
            verdicts = _verifier(verifier).run([job_for(s) for s, _ in owned], use_cache=use_cache, progress=progress)
            for (spec, run), verdict in zip(owned, verdicts, strict=True):
                verdict = verdict.model_copy(update={"snippet_id": spec.id, "checks": spec.checks})
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
def snippet_info(spec: SnippetSpec, verdict: Verdict, kb: Knowledge) -> SnippetInfo:
    """The :class:`SnippetInfo` of ``spec`` with ``verdict``."""
    section = kb.section(spec.section_id)
    return SnippetInfo(
        id=spec.id,
        section_id=spec.section_id,
        section_title=section.title,
        sources=section.sources,
        code=spec.code,
        code_sha256=code_sha256(spec.code),
        filename=spec.filename,
        launch=spec.launch,
        world_size=spec.world_size,
        backend=spec.backend,
        requires=spec.requires,
        verification=verdict,
    )


def latest_verdict(spec: SnippetSpec, verifier: Verifier | None = None) -> Verdict:
    """The cached verdict of ``spec`` on this host and torch, or 'unverified'.  Never runs anything."""
    return _cached(spec, verifier) or unverified(spec)


def snippet_verdicts(
    specs: list[SnippetSpec],
    verify: bool,
    *,
    verifier: Verifier | None = None,
    progress: Progress | None = None,
    before_run: BeforeRun | None = None,
) -> dict[str, Verdict]:
    """Verdict per snippet id: with ``verify``, the cache or a fresh run (:func:`shared_verdicts`);
    without, 'unverified' for each (nothing is looked up or run).  When the runs cannot happen at all
    (HarnessError, e.g. the target's torch fails to import), each is 'unverified' with that reason."""
    if not specs:
        return {}
    if not verify:
        return {s.id: unverified(s, "verification was not requested (--no-verify)") for s in specs}
    try:
        return shared_verdicts(specs, verifier=verifier, progress=progress, before_run=before_run)
    except HarnessError as exc:  # e.g. the target's torch does not import: the answer stands, unverified
        return {s.id: unverified(s, f"verification could not run here: {exc}") for s in specs}


def recorded_runs(spec: SnippetSpec, kb: Knowledge) -> list[RecordedRun]:
    """Where this snippet's current code ran in the committed compatibility record (oldest torch first; empty when it
    is not there). Reads the record's files, nothing runs."""
    from fsdp_skill.core.knowledge import compat

    return compat.recorded_runs(kb.directory, spec.id, code_sha256(spec.code))


def recorded_here(spec: SnippetSpec, kb: Knowledge) -> str | None:
    """What the compatibility record says about this snippet for the torch in use (its own result, the same release's,
    or that this torch is outside the record), for telling a reader before a run starts; None without a torch."""
    from fsdp_skill.core.interpreter import torch_version
    from fsdp_skill.core.knowledge import compat

    return compat.for_torch(recorded_runs(spec, kb), torch_version())


def section_out(section: SectionDoc, score: float, verdicts: dict[str, Verdict], kb: Knowledge) -> SectionOut:
    """A SectionOut with its snippets and their verdicts (unverified where no verdict is known), marked
    when the torch in use is outside the section's declared ``torch`` range, with the section's and its card's
    version notes and, per snippet, where this code ran in the compatibility record and what it says for the
    torch in use (:mod:`fsdp_skill.core.knowledge.compat`; read from the committed record, nothing runs)."""
    from fsdp_skill.core.interpreter import torch_version
    from fsdp_skill.core.knowledge import compat
    from fsdp_skill.core.knowledge.applicability import applies

    version = torch_version()
    ok, note = applies(section.torch, version) if section.torch else (None, None)
    recorded = {s.id: recorded_runs(s, kb) for s in section.snippets}
    return SectionOut(
        id=section.id,
        title=section.title,
        topic=section.topic,
        score=round(score, 4),
        text=section.text,
        zh=section.zh,
        title_zh=section.title_zh,
        text_zh=section.text_zh,
        sources=section.sources,
        apis=section.apis,
        torch_requires=section.torch,
        applies=ok,
        applicability=note,
        version_notes=kb.version_notes(section),
        snippets=[
            SnippetOut(
                id=s.id,
                code=s.code,
                launch=s.launch,
                world_size=s.world_size,
                requires=s.requires,
                checks=s.checks,
                proves=s.proves,
                verification=verdicts.get(s.id) or unverified(s),
                recorded=recorded[s.id],
                recorded_here=compat.for_torch(recorded[s.id], version),
            )
            for s in section.snippets
        ],
    )


def get_snippet(snippet_id: str, *, kb: Knowledge | None = None, verifier: Verifier | None = None) -> SnippetInfo:
    """Code and latest verdict (cached or unverified) of a knowledge snippet; NotFoundError for an unknown id."""
    kb = kb or load_knowledge()
    spec = kb.snippet(snippet_id)
    return snippet_info(spec, latest_verdict(spec, verifier), kb)


def verify_snippet(
    snippet_id: str, *, kb: Knowledge | None = None, use_cache: bool = True, verifier: Verifier | None = None
) -> SnippetInfo:
    """Verify a knowledge snippet (cache, a run in flight, or a fresh run) and return it with the verdict.

    ``use_cache=False`` forces a fresh run (unless one is already in flight, which is joined).
    Raises NotFoundError for an unknown id, HarnessError when the run cannot happen.
    """
    kb = kb or load_knowledge()
    spec = kb.snippet(snippet_id)
    verdict = shared_verdicts([spec], verifier=verifier, use_cache=use_cache)[spec.id]
    return snippet_info(spec, verdict, kb)


def get_section(section_id: str, *, kb: Knowledge | None = None, verifier: Verifier | None = None) -> SectionOut:
    """A section as in an answer (``score`` 0), its snippets with their latest verdicts; never runs anything."""
    kb = kb or load_knowledge()
    section = kb.section(section_id)
    return section_out(section, 0.0, {sn.id: latest_verdict(sn, verifier) for sn in section.snippets}, kb)


def stop_runs() -> None:
    """Stop every verification run of this process and start no new one (a server shutting down); callers
    waiting on a run get HarnessError once its processes are reaped."""
    from fsdp_skill.runtime.api import stop_runs as stop

    stop()
