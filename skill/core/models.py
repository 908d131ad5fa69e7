"""Typed values of the knowledge base and of answers: records (:mod:`fsdp_skill.records`), so building an answer
imports no pydantic; each field's attribute docstring is its description in the published schemas.

``Answer`` is the ``ask --json`` contract that other tools rely on; HTTP and MCP return the same records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from fsdp_skill.core.check.models import Finding
from fsdp_skill.records import Record
from fsdp_skill.runtime.models import Verdict


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class VersionNote(Record):
    """What differs on some torch versions, as a section or a card declares it (``versions:`` in its metadata)."""

    torch: str
    """The torch versions the note is about (PEP 440 specifier, e.g. '==2.6.*')"""
    note: str
    """What differs there and what to do instead, in one or two sentences"""
    fails: str | None = None
    """A piece of the recorded failure reason the note explains, e.g. "has no attribute 'record_event'"; None: a
    note about behaviour only (it declares no recorded failure)"""


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class RecordedRun(Record):
    """A snippet's result on one torch in the committed compatibility record (``knowledge/compat/``)."""

    torch_version: str
    """torch.__version__ it ran on, e.g. '2.14.1+cu130'"""
    build: Literal["cpu", "cuda", "rocm"]
    """The build of that torch: 'cpu' (no CUDA in it), 'cuda' or 'rocm'"""
    status: str
    """passed | failed | timeout | skipped"""
    reason: str | None = None
    """The first line of the verdict's reason (why it failed or was skipped); None for a pass"""
    seconds: float | None = None
    """Wall time of the run in seconds"""
    date: str
    """UTC date of the run, YYYY-MM-DD"""
    python: str
    """Python version of that environment, e.g. '3.11.7'"""
    device: str | None = None
    """'cpu' or 'cuda' (with device count): the device kind the ranks used"""
    backend: str | None = None
    """Process-group backend used: 'gloo' or 'nccl'"""


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class SnippetSpec(Record):
    """A runnable code fence of a knowledge card: a complete script plus its harness settings."""

    id: str
    """Stable snippet id, e.g. 'fsdp2/optimizer-order'"""
    section_id: str
    """Id of the section the snippet belongs to"""
    code: str
    """The complete script, byte-for-byte what is verified and exported"""
    world_size: int = 2
    """Number of ranks the script is launched with"""
    backend: str = "auto"
    """'auto' (NCCL with enough GPUs, else gloo), 'gloo' or 'nccl'"""
    timeout: float = 60.0
    """Seconds before the run is killed and reported as timeout"""
    requires: list[str] = field(default_factory=list)
    """Host requirements, e.g. ['cuda']"""
    line: int = 0
    """1-based line of the opening fence in the card file"""
    checks: str | None = None
    (
        "What the script asserts: 'reference' (results equal a single-process or unsharded reference), 'agree' "
        "(ranks agree), 'raises' (the documented error), 'runs' (an API call with nothing to compare)"
    )
    tolerance: float | None = None
    """checks=reference: the largest difference allowed (0 = exact)"""
    expects: str | None = None
    """checks=raises: the exception and the start of its message"""

    @property
    def proves(self) -> str:
        """What a passing run proves, in words, e.g. 'matches a single-process reference to 1e-06'."""
        return proves(self.checks, self.tolerance, self.expects)

    @property
    def launch(self) -> str:
        """The ``torchrun`` command that launches the exported script."""
        return f"torchrun --standalone --nproc_per_node={self.world_size} {self.filename}"

    @property
    def filename(self) -> str:
        """File name used when the snippet is exported, e.g. 'fsdp2_optimizer-order.py'."""
        return self.id.replace("/", "_") + ".py"


def proves(checks: str | None, tolerance: float | None = None, expects: str | None = None) -> str:
    """Words for what a passing run of a snippet with these fence settings proves."""
    if checks == "reference":
        return "matches a single-process reference " + ("exactly" if not tolerance else f"to {tolerance:g}")
    if checks == "agree":
        return "every rank ends with the same results"
    if checks == "raises":
        return f"raises {expects}"
    if checks == "runs":
        return "runs to completion on every rank (nothing is compared)"
    return "runs to completion on every rank (its checks are not declared)"


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class SectionDoc(Record):
    """One ``##`` section of a card: the retrieval unit."""

    id: str
    """Stable id 'topic/slug'"""
    title: str
    """Section heading"""
    topic: str
    """Topic id of the card, e.g. 'mixed-precision'"""
    card: str
    """Card file name, e.g. 'mixed-precision.md'"""
    line: int
    """1-based line of the heading in the card file"""
    text: str
    """Markdown body of the section (prose and all code fences)"""
    apis: list[str] = field(default_factory=list)
    """Fully qualified public APIs the section discusses"""
    sources: list[str] = field(default_factory=list)
    """Official documentation URLs the section rests on"""
    aliases: list[str] = field(default_factory=list)
    """Extra search terms (English and Chinese)"""
    zh: str | None = None
    """One-sentence Chinese summary"""
    title_zh: str | None = None
    """Chinese heading (knowledge/zh/<card>.md); None: none written"""
    text_zh: str | None = None
    """Full Chinese body, same facts as `text`, its code blocks byte for byte the English ones; None: none written"""
    errors: list[str] = field(default_factory=list)
    """Error/warning message templates this section explains ('*' = any text)"""
    torch: str | None = None
    """torch versions the section applies to (PEP 440 specifier, e.g. '>=2.6'); None: no bound declared"""
    versions: list[VersionNote] = field(default_factory=list)
    """What differs on some of those versions (the section's own notes; the card's are in Card.versions)"""
    snippets: list[SnippetSpec] = field(default_factory=list)
    """Runnable scripts of this section"""


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class Card(Record):
    """A knowledge card (one markdown file, one topic)."""

    id: str
    title: str
    topic: str
    aliases: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    file: str
    versions: list[VersionNote] = field(default_factory=list)
    """Version notes that hold for every section of the card (front matter ``versions:``)"""
    sections: list[SectionDoc] = field(default_factory=list)


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class TopicScore(Record):
    """A topic and how strongly the question points at it (sum of its sections' BM25 scores, normalised to 0..1)."""

    id: str
    """Topic id"""
    score: float
    """Share of the retrieval mass on this topic, 0..1"""


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class SnippetOut(Record):
    """A snippet as returned in an answer, with its verification verdict."""

    id: str
    """Snippet id, usable with `fsdp-skill verify` and `export`"""
    code: str
    """The complete script"""
    launch: str
    """Command that launches it, e.g. 'torchrun --standalone --nproc_per_node=2 x.py'"""
    world_size: int
    """Ranks the script is written for"""
    requires: list[str] = field(default_factory=list)
    """Host requirements, e.g. ['cuda']"""
    checks: str | None = None
    """What the script asserts: 'reference', 'agree', 'raises' or 'runs'"""
    proves: str = ""
    """What a passing run proves, e.g. 'matches a single-process reference to 1e-06'"""
    verification: Verdict
    """Verdict of running it on a real process group (or 'unverified')"""
    recorded: list[RecordedRun] = field(default_factory=list)
    """Where this exact code ran before release: one result per torch in the compatibility record, oldest first"""
    recorded_here: str | None = None
    """What the record says for the torch in use, e.g. 'recorded: passed on torch 2.14.1+cu130 (CUDA build)', or
    that this torch is outside the record; None when the torch in use is unknown"""


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class SectionOut(Record):
    """A retrieved section as returned in an answer."""

    id: str
    """Section id 'topic/slug'"""
    title: str
    """Section heading"""
    topic: str
    """Topic id"""
    score: float
    """BM25 score of the section for this question (higher is better)"""
    text: str
    """Markdown body of the section"""
    zh: str | None = None
    """One-sentence Chinese summary of the section"""
    title_zh: str | None = None
    """Chinese heading of the section"""
    text_zh: str | None = None
    (
        "Full Chinese markdown body of the section: the same facts, steps, caveats and numbers as `text`, code "
        "blocks identical (snippets are in `snippets`)"
    )
    sources: list[str] = field(default_factory=list)
    """Official documentation URLs"""
    apis: list[str] = field(default_factory=list)
    """APIs the section discusses"""
    torch_requires: str | None = None
    """torch versions the section applies to, e.g. '>=2.6' (None: no bound declared)"""
    applies: bool | None = None
    """False when the torch in use is outside torch_requires; None when either is unknown"""
    applicability: str | None = None
    """What to know on this torch, e.g. 'needs torch >=2.6; yours is 2.4.1'"""
    version_notes: list[VersionNote] = field(default_factory=list)
    """What differs on some torch versions (the section's notes, then its card's)"""
    snippets: list[SnippetOut] = field(default_factory=list)
    """Verified (or unverified) scripts"""


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class ApiInfo(Record):
    """Live signature of an API in the target interpreter's torch (the tool's own, or --python PATH)."""

    name: str
    """Fully qualified name, e.g. 'torch.distributed.fsdp.fully_shard'"""
    signature: str | None = None
    """inspect.signature of the object, or None if unavailable"""
    summary: str | None = None
    """First paragraph of its docstring"""
    available: bool
    """False when the name does not resolve in the target interpreter's torch, or torch is not installed there"""
    reason: str | None = None
    """Why it is not available when torch is missing, and how to fix it (install torch or pass --python PATH); None otherwise"""


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class RaisedAt(Record):
    """Where the installed torch raises or warns a message."""

    path: str
    """File relative to the torch package's parent, e.g. 'torch/distributed/distributed_c10d.py'"""
    line: int | None = None
    """1-based line of the raise / warn call"""
    function: str | None = None
    """Enclosing 'Class.method' or function, None at module level"""


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class ErrorInfo(Record):
    """An error or warning message found in the question, located in the installed torch."""

    message: str
    """The message template ('*' = a formatted-in value)"""
    kind: Literal["python", "native", "declared"]
    (
        "'python': raised/warned in torch's Python source; 'native': a string of torch's shared libraries (c10d, "
        "gloo, NCCL); 'declared': not catalogued here, matched a section's declared message"
    )
    exception: str | None = None
    """Exception or warning class, e.g. 'ValueError'; None if unknown"""
    raised_at: RaisedAt | None = None
    """Source location; None for native and declared messages"""
    condition: str | None = None
    """Source text of the guard that leads to the raise, e.g. 'not is_initialized()'"""
    torch_version: str | None = None
    """torch version whose source was catalogued"""
    sections: list[str] = field(default_factory=list)
    """Ids of the knowledge sections that explain it (may be empty)"""
    explanation: str
    """One line: where it is raised and when"""
    how: str
    """'template' (whole message found), 'fuzzy' (truncated or wrapped paste) or 'section'"""


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class Answer(Record):
    """Answer to one question: the ``ask --json`` contract."""

    query: str
    """The question as received (trimmed)"""
    language: str
    (
        "The reader's language: 'en', 'zh' or 'mixed' (English with a few Chinese words), detected from the "
        "question's main language unless set (--lang, HTTP/MCP 'language'). Renderers show sections[].text_zh for "
        "'zh', sections[].text otherwise"
    )
    abstained: bool
    """True when the question is outside FSDP / torch.distributed"""
    reason: str | None = None
    """Why the assistant abstained, or None"""
    topics: list[TopicScore] = field(default_factory=list)
    """Topics ranked by score"""
    sections: list[SectionOut] = field(default_factory=list)
    """Top-k sections, best first"""
    api: list[ApiInfo] = field(default_factory=list)
    """Live signatures of the APIs those sections list"""
    errors: list[ErrorInfo] = field(default_factory=list)
    """Error/warning messages found in the question, located in the installed torch, with the sections that explain them"""
    findings: list[Finding] = field(default_factory=list)
    (
        "Mistakes `check` found in Python code pasted in the question (a fenced block, or a question that is a "
        "script); their sections come first. Lines are counted within each block ('path' names the block)"
    )
    torch_version: str | None = None
    """torch version of the target interpreter (from package metadata); None when torch is not installed there"""
    python: str | None = None
    (
        "Absolute path of the target interpreter whose torch answered (signatures, verdicts): the tool's own, or "
        "--python / $FSDP_SKILL_PYTHON"
    )
    plan: str | None = None
    (
        "For a 'will it fit' / 'how much memory' question: a ready `fsdp-skill plan` command line that measures "
        "per-GPU peak memory (else None)"
    )
    elapsed_ms: float = 0.0
    """Time spent answering, in milliseconds"""
