"""Export knowledge snippets as runnable scripts: verified code, a header, a manifest and a pytest runner.

``export_snippets(specs, out_dir) -> Manifest`` verifies the snippets first (cached verdict, a run in
flight, or a fresh run), refuses any that did not pass, then writes into ``out_dir``:

* one ``<topic>_<name>.py`` per snippet: comment lines (the header) followed by the code **byte for
  byte as verified**.  The header ends with :data:`HEADER_END`; everything after that line is the
  code, whose SHA-256 equals the verdict's ``code_sha256`` and the manifest's ``sha256``;
* ``manifest.json`` (:class:`Manifest`);
* ``test_exported.py``: a self-contained pytest file that checks each script's code hash and launches it
  with ``python -m torch.distributed.run --standalone --nproc_per_node=N`` in the user's environment.

Failed, timed-out, skipped (e.g. needs CUDA) and unverified snippets are refused with
:class:`ExportRefused` naming them, unless ``include_unverified=True``, which exports them marked
``NOT VERIFIED`` in the header and ``verified: false`` in the manifest, or ``partial=True`` (``--all`` and
``--topic``), which exports what passed and lists the rest in ``Manifest.skipped`` with the reason.
An earlier manifest in ``out_dir`` is extended, never silently shortened: an entry that does not validate
is kept verbatim under ``unreadable`` and reported in ``Manifest.notes``.
"""

from __future__ import annotations

import datetime as _dt
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from fsdp_skill.core.interpreter import torch_version
from fsdp_skill.core.knowledge.cards import Knowledge, load_knowledge
from fsdp_skill.core.models import SectionDoc, SnippetSpec
from fsdp_skill.core.verify.snippets import Progress, Verifier, shared_verdicts
from fsdp_skill.errors import ExportRefused, InvalidArgument
from fsdp_skill.runtime.cache import code_sha256
from fsdp_skill.runtime.models import Verdict

HEADER_END = "# ---- end of fsdp-skill header: everything below this line is the verified code, byte for byte ----\n"
MANIFEST_NAME = "manifest.json"
RUNNER_NAME = "test_exported.py"
MANIFEST_FORMAT = 1


class ExportedScript(BaseModel):
    """One snippet rendered as a script file (header + verified code)."""

    id: str = Field(description="Snippet id")
    filename: str = Field(description="File name of the script, e.g. 'join_ddp-join.py'")
    section_id: str = Field(description="Id of the knowledge section the snippet comes from")
    section_title: str = Field(description="Heading of that section")
    sources: list[str] = Field(default_factory=list, description="Official documentation URLs of the section")
    verified: bool = Field(description="True only when the verdict is 'passed'")
    code_sha256: str = Field(
        description="SHA-256 of the code body (the bytes after the header), equal to the verdict's code_sha256"
    )
    launch: str = Field(description="torchrun command that launches the script")
    world_size: int = Field(description="Ranks the script is launched with (--nproc_per_node)")
    timeout: float = Field(description="Seconds the harness allowed the run")
    requires: list[str] = Field(default_factory=list, description="Host requirements, e.g. ['cuda']")
    verdict: Verdict = Field(description="The verdict the export rests on")
    script: str = Field(description="Full file text: header comment lines, then the code")


class ManifestEntry(BaseModel):
    """One exported script in ``manifest.json``."""

    id: str = Field(description="Snippet id")
    file: str = Field(description="Script file name, relative to the manifest")
    section: str = Field(description="Source section id")
    section_title: str = Field(description="Heading of the source section")
    sources: list[str] = Field(default_factory=list, description="Official documentation URLs")
    sha256: str = Field(description="SHA-256 of the code body (the file bytes after the header end line)")
    verified: bool = Field(description="True only when the verdict is 'passed'")
    world_size: int = Field(description="--nproc_per_node to launch with")
    timeout: float = Field(description="Seconds the harness allowed the run")
    requires: list[str] = Field(default_factory=list, description="Host requirements, e.g. ['cuda']")
    launch: str = Field(description="torchrun command that launches the script")
    verdict: Verdict = Field(description="Verdict of the code on the exporting host")


class NotExported(BaseModel):
    """A selected snippet that an ``--all`` / ``--topic`` export left out because it did not pass here."""

    id: str = Field(description="Snippet id")
    status: str = Field(
        description="Why: 'skipped' (cannot run on this host, e.g. needs CUDA), 'failed', 'timeout', "
        "'stale' (the verdict is for other code) or another non-passing status"
    )
    reason: str | None = Field(None, description="The verdict's reason, e.g. 'needs 2 CUDA devices, found 0'")


class UnreadableEntry(BaseModel):
    """An entry of an earlier ``manifest.json`` that does not validate, kept verbatim so nothing is lost."""

    index: int = Field(description="Its position in the earlier manifest's entries (0-based)")
    entry: Any = Field(description="The entry exactly as it was")
    error: str = Field(description="The first validation problem, e.g. 'sha256: Field required'")


class Manifest(BaseModel):
    """``manifest.json`` of an export directory."""

    format: int = Field(MANIFEST_FORMAT, description="Manifest format version")
    exported_at: str = Field(description="UTC ISO-8601 time of the export")
    torch_version: str | None = Field(None, description="torch version installed where the export was made")
    knowledge_fingerprint: str | None = Field(None, description="Fingerprint of the knowledge cards exported from")
    include_unverified: bool = Field(False, description="True when snippets that did not pass were allowed in")
    header_end: str = Field(HEADER_END.rstrip("\n"), description="Line that ends each script's header; the code follows it")
    entries: list[ManifestEntry] = Field(default_factory=list, description="One entry per exported script")
    exported: list[str] = Field(default_factory=list, description="Ids written by the latest export")
    skipped: list[NotExported] = Field(
        default_factory=list,
        description="Snippets the latest export selected but left out because they did not pass here, with the reason",
    )
    unreadable: list[UnreadableEntry] = Field(
        default_factory=list,
        description="Entries of an earlier manifest that do not validate, kept verbatim (test_exported.py ignores them)",
    )
    notes: list[str] = Field(default_factory=list, description="What the latest export noticed in the earlier manifest")


def _header(spec: SnippetSpec, section: SectionDoc, verdict: Verdict, exported_at: str) -> str:
    verified = verdict.status == "passed"
    lines = [f"fsdp-skill exported snippet {spec.id}"]
    if not verified:
        lines += [
            "",
            "!" * 72,
            f"!! NOT VERIFIED: status {verdict.status.upper()} on the exporting host",
            f"!! {verdict.reason or 'no reason recorded'}",
            "!! exported with --include-unverified; do not rely on it before it passes",
            "!" * 72,
            "",
        ]
    lines += [
        f"snippet:     {spec.id}",
        f"section:     {section.id} ({section.title})",
        *[f"source:      {url}" for url in section.sources],
        f"verdict:     {verdict.status}"
        + (" (cached)" if verdict.cached else "")
        + (f" at {verdict.checked_at}" if verdict.checked_at else ""),
        f"torch:       {verdict.torch_version or torch_version() or 'unknown'}",
        f"backend:     {verdict.backend or spec.backend}",
        f"world_size:  {spec.world_size}",
        f"device:      {verdict.device or 'unknown'}",
        f"code sha256: {code_sha256(spec.code)}",
        f"exported:    {exported_at}",
        f"launch:      {spec.launch}",
        f"   (or: python -m torch.distributed.run --standalone --nproc_per_node={spec.world_size} {spec.filename})",
    ]
    return "".join(f"# {line}".rstrip() + "\n" for line in lines) + HEADER_END


def render_script(
    spec: SnippetSpec, verdict: Verdict, *, kb: Knowledge | None = None, exported_at: str | None = None
) -> ExportedScript:
    """The script file of ``spec``: header (with ``verdict``) plus the code, unchanged."""
    kb = kb or load_knowledge()
    section = kb.section(spec.section_id)
    exported_at = exported_at or _now()
    return ExportedScript(
        id=spec.id,
        filename=spec.filename,
        section_id=section.id,
        section_title=section.title,
        sources=section.sources,
        verified=verdict.status == "passed",
        code_sha256=code_sha256(spec.code),
        launch=spec.launch,
        world_size=spec.world_size,
        timeout=spec.timeout,
        requires=spec.requires,
        verdict=verdict,
        script=_header(spec, section, verdict, exported_at) + spec.code,
    )


def split_script(text: str) -> tuple[str, str]:
    """Split an exported script into (header, code); raises InvalidArgument when the header end line is missing."""
    head, sep, code = text.partition(HEADER_END)
    if not sep:
        raise InvalidArgument("not an fsdp-skill exported script (header end line not found)")
    return head + sep, code


def _problem(spec: SnippetSpec, verdict: Verdict) -> tuple[str, str, str | None] | None:
    if verdict.code_sha256 and verdict.code_sha256 != code_sha256(spec.code):
        return (spec.id, "stale", "the verdict is for different code")
    if verdict.status != "passed":
        return (spec.id, verdict.status, verdict.reason)
    return None


def prepare(
    specs: list[SnippetSpec],
    *,
    include_unverified: bool = False,
    kb: Knowledge | None = None,
    progress: Progress | None = None,
    exported_at: str | None = None,
    verifier: Verifier | None = None,
) -> list[ExportedScript]:
    """Verify ``specs`` (cache or run) and render their scripts; ExportRefused if any did not pass."""
    kb = kb or load_knowledge()
    verdicts = shared_verdicts(specs, verifier=verifier, progress=progress)
    refused = [p for s in specs if (p := _problem(s, verdicts[s.id])) is not None]
    if refused and not include_unverified:
        raise ExportRefused(refused)
    exported_at = exported_at or _now()
    return [render_script(s, verdicts[s.id], kb=kb, exported_at=exported_at) for s in specs]


def export_one(
    snippet_id: str, *, include_unverified: bool = False, kb: Knowledge | None = None, verifier: Verifier | None = None
) -> ExportedScript:
    """One knowledge snippet as a script (verified first); NotFoundError, ExportRefused."""
    kb = kb or load_knowledge()
    return prepare([kb.snippet(snippet_id)], include_unverified=include_unverified, kb=kb, verifier=verifier)[0]


def export_snippets(
    specs: list[SnippetSpec],
    out_dir: str | Path,
    *,
    include_unverified: bool = False,
    partial: bool = False,
    kb: Knowledge | None = None,
    progress: Progress | None = None,
    verifier: Verifier | None = None,
) -> Manifest:
    """Verify, then write the scripts, ``manifest.json`` and ``test_exported.py`` into ``out_dir``.

    Snippets that did not pass are refused with ExportRefused (nothing written) unless
    ``include_unverified`` (written, marked NOT VERIFIED) or ``partial`` (the ``--all`` / ``--topic``
    selections: what passed is written, the rest is listed in ``Manifest.skipped`` with the reason; nothing
    is written when nothing passed).  Exporting again into the same directory adds to its manifest: earlier
    entries are kept (re-exported ids are replaced; an entry whose file is gone is dropped and noted), and an
    earlier entry that does not validate is kept verbatim under ``unreadable`` and noted, never dropped.

    Raises InvalidArgument before verifying anything when ``out_dir`` is empty, a file, not creatable or not
    writable, or holds a ``manifest.json`` that is not one this version can extend.  Returns the manifest
    (written, unless ``exported`` is empty).
    """
    kb = kb or load_knowledge()
    out = check_out_dir(out_dir)
    earlier = _read_earlier(out)
    exported_at = _now()
    verdicts = shared_verdicts(specs, verifier=verifier, progress=progress)
    refused = [p for s in specs if (p := _problem(s, verdicts[s.id])) is not None]
    if refused and not (include_unverified or partial):
        raise ExportRefused(refused)
    left_out = set() if include_unverified else {sid for sid, _, _ in refused}
    scripts = [render_script(s, verdicts[s.id], kb=kb, exported_at=exported_at) for s in specs if s.id not in left_out]
    manifest = Manifest(
        exported_at=exported_at,
        torch_version=torch_version(),
        knowledge_fingerprint=kb.fingerprint,
        include_unverified=include_unverified,
        exported=[sc.id for sc in scripts],
        skipped=[NotExported(id=sid, status=status, reason=reason) for sid, status, reason in refused if sid in left_out],
    )
    previous, manifest.unreadable, manifest.notes = earlier.keep(out, {sc.id for sc in scripts})
    manifest.entries.extend(previous)
    manifest.include_unverified = include_unverified or any(not e.verified for e in previous)
    if not scripts:
        return manifest
    try:
        _write(out, scripts, manifest)
    except OSError as exc:
        raise InvalidArgument(f"cannot write into --out {out}: {exc.strerror or exc}") from exc
    return manifest


def _write(out: Path, scripts: list[ExportedScript], manifest: Manifest) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for sc in scripts:
        (out / sc.filename).write_bytes(sc.script.encode("utf-8"))
        manifest.entries.append(
            ManifestEntry(
                id=sc.id,
                file=sc.filename,
                section=sc.section_id,
                section_title=sc.section_title,
                sources=sc.sources,
                sha256=sc.code_sha256,
                verified=sc.verified,
                world_size=sc.world_size,
                timeout=sc.timeout,
                requires=sc.requires,
                launch=sc.launch,
                verdict=sc.verdict,
            )
        )
    (out / MANIFEST_NAME).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    (out / RUNNER_NAME).write_text(runner_source(), encoding="utf-8")


def check_out_dir(out_dir: str | Path) -> Path:
    """``out_dir`` as a Path when it is (or can be made) a writable directory; creates nothing.

    Raises InvalidArgument (one line) when it is empty, a file, under a file, or not writable (an entry is made in
    its nearest existing folder and removed at once, to be sure)."""
    if not str(out_dir).strip():
        raise InvalidArgument("--out is empty: give the directory to export into, e.g. --out fsdp_scripts")
    out = Path(out_dir)
    probe = out
    while not probe.exists():
        if probe.is_symlink():  # a dangling link
            raise InvalidArgument(f"--out {out}: {probe} is a broken symbolic link")
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        where = "is a file, not a directory" if probe == out else f"cannot be created: {probe} is not a directory"
        raise InvalidArgument(f"--out {out} {where}")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InvalidArgument(f"--out {out} is not writable: no write permission on {probe}")
    try:  # access() says yes to root everywhere, and nothing can be created in /proc or a read-only mount: try it
        os.rmdir(tempfile.mkdtemp(prefix=".fsdp-skill-", dir=probe))
    except OSError as exc:
        raise InvalidArgument(
            f"--out {out} cannot be written: creating an entry in {probe} fails ({exc.strerror or exc})"
        ) from None
    return out


class _Earlier:
    """What an earlier ``manifest.json`` in the export directory holds (validated entries and the rest)."""

    def __init__(self, entries: list[ManifestEntry], unreadable: list[UnreadableEntry]):
        self.entries, self.unreadable = entries, unreadable

    def keep(self, out: Path, replaced: set[str]) -> tuple[list[ManifestEntry], list[UnreadableEntry], list[str]]:
        """(entries kept, unreadable entries kept verbatim, notes for the user)."""
        kept, notes = [], []
        for e in self.entries:
            if e.id in replaced:
                continue
            if (out / e.file).is_file():
                kept.append(e)
            else:
                notes.append(f"dropped the manifest entry {e.id}: its file {e.file} is gone")
        notes += [
            f"kept unreadable manifest entry #{u.index} as is under 'unreadable' ({u.error}); fix or delete it"
            for u in self.unreadable
        ]
        return kept, self.unreadable, notes


def _read_earlier(out: Path) -> _Earlier:
    """The earlier manifest of ``out`` (none: empty); InvalidArgument when it cannot be extended safely."""
    import json

    path = out / MANIFEST_NAME
    if not path.exists():
        return _Earlier([], [])
    refuse = "; move it away or export into another directory (nothing was written)"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidArgument(f"{path} cannot be read as JSON ({exc}){refuse}") from exc
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT or not isinstance(data.get("entries"), list):
        raise InvalidArgument(f"{path} is not an fsdp-skill manifest of format {MANIFEST_FORMAT}{refuse}")
    if data.get("header_end", HEADER_END.rstrip("\n")) + "\n" != HEADER_END:
        raise InvalidArgument(f"{path} was written with another header end line{refuse}")
    raw = [(i, e) for i, e in enumerate(data["entries"])]
    raw += [(u.get("index", -1), u.get("entry")) for u in data.get("unreadable") or [] if isinstance(u, dict)]
    entries, unreadable = [], []
    for index, item in raw:
        try:
            entries.append(ManifestEntry.model_validate(item))
        except ValueError as exc:
            first = exc.errors()[0] if hasattr(exc, "errors") else {}
            where = ".".join(str(p) for p in first.get("loc", ())) or "entry"
            unreadable.append(UnreadableEntry(index=index, entry=item, error=f"{where}: {first.get('msg', exc)}"))
    return _Earlier(entries, unreadable)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def runner_source() -> str:
    """Text of the pytest runner written beside exported scripts (the package's ``templates/test_exported.py.tmpl``)."""
    from importlib.resources import files

    # one part per step: Traversable.joinpath takes a single part before Python 3.11
    return (files("fsdp_skill.core.verify") / "templates" / "test_exported.py.tmpl").read_text(encoding="utf-8")
