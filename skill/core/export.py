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
``NOT VERIFIED`` in the header and ``verified: false`` in the manifest.
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path

from pydantic import BaseModel, Field

from fsdp_skill.core.knowledge import Knowledge, load_knowledge
from fsdp_skill.core.models import SectionDoc, SnippetSpec
from fsdp_skill.core.snippets import Progress, Verifier, code_sha256, shared_verdicts
from fsdp_skill.core.state import torch_version
from fsdp_skill.errors import ExportRefused, InvalidArgument
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
    code_sha256: str = Field(description="SHA-256 of the code body (the bytes after the header), equal to the verdict's code_sha256")
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


class Manifest(BaseModel):
    """``manifest.json`` of an export directory."""

    format: int = Field(MANIFEST_FORMAT, description="Manifest format version")
    exported_at: str = Field(description="UTC ISO-8601 time of the export")
    torch_version: str | None = Field(None, description="torch version installed where the export was made")
    knowledge_fingerprint: str | None = Field(None, description="Fingerprint of the knowledge cards exported from")
    include_unverified: bool = Field(False, description="True when snippets that did not pass were allowed in")
    header_end: str = Field(HEADER_END.rstrip("\n"), description="Line that ends each script's header; the code follows it")
    entries: list[ManifestEntry] = Field(default_factory=list, description="One entry per exported script")


def _header(spec: SnippetSpec, section: SectionDoc, verdict: Verdict, exported_at: str) -> str:
    verified = verdict.status == "passed"
    lines = [f"fsdp-skill exported snippet {spec.id}"]
    if not verified:
        lines += ["", "!" * 72, f"!! NOT VERIFIED: status {verdict.status.upper()} on the exporting host",
                  f"!! {verdict.reason or 'no reason recorded'}",
                  "!! exported with --include-unverified; do not rely on it before it passes", "!" * 72, ""]
    lines += [
        f"snippet:     {spec.id}",
        f"section:     {section.id} ({section.title})",
        *[f"source:      {url}" for url in section.sources],
        f"verdict:     {verdict.status}" + (" (cached)" if verdict.cached else "")
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


def render_script(spec: SnippetSpec, verdict: Verdict, *, kb: Knowledge | None = None,
                  exported_at: str | None = None) -> ExportedScript:
    """The script file of ``spec``: header (with ``verdict``) plus the code, unchanged."""
    kb = kb or load_knowledge()
    section = kb.section(spec.section_id)
    exported_at = exported_at or _now()
    return ExportedScript(
        id=spec.id, filename=spec.filename, section_id=section.id, section_title=section.title, sources=section.sources,
        verified=verdict.status == "passed", code_sha256=code_sha256(spec.code), launch=spec.launch,
        world_size=spec.world_size, timeout=spec.timeout, requires=spec.requires, verdict=verdict,
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


def prepare(specs: list[SnippetSpec], *, include_unverified: bool = False, kb: Knowledge | None = None,
            progress: Progress | None = None, exported_at: str | None = None,
            verifier: Verifier | None = None) -> list[ExportedScript]:
    """Verify ``specs`` (cache or run) and render their scripts; ExportRefused if any did not pass."""
    kb = kb or load_knowledge()
    verdicts = shared_verdicts(specs, verifier=verifier, progress=progress)
    refused = [p for s in specs if (p := _problem(s, verdicts[s.id])) is not None]
    if refused and not include_unverified:
        raise ExportRefused(refused)
    exported_at = exported_at or _now()
    return [render_script(s, verdicts[s.id], kb=kb, exported_at=exported_at) for s in specs]


def export_one(snippet_id: str, *, include_unverified: bool = False, kb: Knowledge | None = None,
               verifier: Verifier | None = None) -> ExportedScript:
    """One knowledge snippet as a script (verified first); NotFoundError, ExportRefused."""
    kb = kb or load_knowledge()
    return prepare([kb.snippet(snippet_id)], include_unverified=include_unverified, kb=kb, verifier=verifier)[0]


def export_snippets(specs: list[SnippetSpec], out_dir: str | Path, *, include_unverified: bool = False,
                    kb: Knowledge | None = None, progress: Progress | None = None,
                    verifier: Verifier | None = None) -> Manifest:
    """Verify, then write the scripts, ``manifest.json`` and ``test_exported.py`` into ``out_dir``.

    Nothing is written when the export is refused.  Exporting again into the same directory adds to its
    manifest (entries of earlier exports whose files are still there are kept; re-exported ids are
    replaced).  Returns the manifest that was written.
    """
    kb = kb or load_knowledge()
    exported_at = _now()
    scripts = prepare(specs, include_unverified=include_unverified, kb=kb, progress=progress, exported_at=exported_at,
                      verifier=verifier)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(exported_at=exported_at, torch_version=torch_version(), knowledge_fingerprint=kb.fingerprint,
                        include_unverified=include_unverified)
    previous = _previous_entries(out, {sc.id for sc in scripts})
    manifest.entries.extend(previous)
    manifest.include_unverified = include_unverified or any(not e.verified for e in previous)
    for sc in scripts:
        (out / sc.filename).write_bytes(sc.script.encode("utf-8"))
        manifest.entries.append(ManifestEntry(
            id=sc.id, file=sc.filename, section=sc.section_id, section_title=sc.section_title, sources=sc.sources,
            sha256=sc.code_sha256, verified=sc.verified, world_size=sc.world_size, timeout=sc.timeout,
            requires=sc.requires, launch=sc.launch, verdict=sc.verdict))
    (out / MANIFEST_NAME).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    (out / RUNNER_NAME).write_text(runner_source(), encoding="utf-8")
    return manifest


def _previous_entries(out: Path, replaced: set[str]) -> list[ManifestEntry]:
    """Entries of an earlier export into ``out`` that this one keeps (file still there, id not re-exported)."""
    import json

    try:
        old = Manifest.model_validate(json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return []
    if old.format != MANIFEST_FORMAT or old.header_end + "\n" != HEADER_END:
        return []
    return [e for e in old.entries if e.id not in replaced and (out / e.file).is_file()]


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def runner_source() -> str:
    """Text of the pytest runner written beside exported scripts (the package's ``templates/test_exported.py.tmpl``)."""
    from importlib.resources import files

    return files("fsdp_skill.core").joinpath("templates", "test_exported.py.tmpl").read_text(encoding="utf-8")
