"""Typed values of the knowledge base and of answers.

``Answer`` is the ``ask --json`` contract that other tools rely on; HTTP and MCP return the same models.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from fsdp_skill.core.check.models import Finding
from fsdp_skill.runtime.models import Verdict


class SnippetSpec(BaseModel):
    """A runnable code fence of a knowledge card: a complete script plus its harness settings."""

    id: str = Field(description="Stable snippet id, e.g. 'fsdp2/optimizer-order'")
    section_id: str = Field(description="Id of the section the snippet belongs to")
    code: str = Field(description="The complete script, byte-for-byte what is verified and exported")
    world_size: int = Field(2, description="Number of ranks the script is launched with")
    backend: str = Field("auto", description="'auto' (NCCL with enough GPUs, else gloo), 'gloo' or 'nccl'")
    timeout: float = Field(60.0, description="Seconds before the run is killed and reported as timeout")
    requires: list[str] = Field(default_factory=list, description="Host requirements, e.g. ['cuda']")
    line: int = Field(0, description="1-based line of the opening fence in the card file")
    checks: str | None = Field(
        None,
        description="What the script asserts: 'reference' (results equal a single-process "
        "or unsharded reference), 'agree' (ranks agree), 'raises' (the documented error), "
        "'runs' (an API call with nothing to compare)",
    )
    tolerance: float | None = Field(None, description="checks=reference: the largest difference allowed (0 = exact)")
    expects: str | None = Field(None, description="checks=raises: the exception and the start of its message")

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


class SectionDoc(BaseModel):
    """One ``##`` section of a card: the retrieval unit."""

    id: str = Field(description="Stable id 'topic/slug'")
    title: str = Field(description="Section heading")
    topic: str = Field(description="Topic id of the card, e.g. 'mixed-precision'")
    card: str = Field(description="Card file name, e.g. 'mixed-precision.md'")
    line: int = Field(description="1-based line of the heading in the card file")
    text: str = Field(description="Markdown body of the section (prose and all code fences)")
    apis: list[str] = Field(default_factory=list, description="Fully qualified public APIs the section discusses")
    sources: list[str] = Field(default_factory=list, description="Official documentation URLs the section rests on")
    aliases: list[str] = Field(default_factory=list, description="Extra search terms (English and Chinese)")
    zh: str | None = Field(None, description="One-sentence Chinese summary")
    title_zh: str | None = Field(None, description="Chinese heading (knowledge/zh/<card>.md); None: none written")
    text_zh: str | None = Field(
        None,
        description="Full Chinese body, same facts as `text`, its code blocks byte for byte the English ones; None: none written",
    )
    errors: list[str] = Field(
        default_factory=list, description="Error/warning message templates this section explains ('*' = any text)"
    )
    torch: str | None = Field(
        None, description="torch versions the section applies to (PEP 440 specifier, e.g. '>=2.6'); None: no bound declared"
    )
    snippets: list[SnippetSpec] = Field(default_factory=list, description="Runnable scripts of this section")


class Card(BaseModel):
    """A knowledge card (one markdown file, one topic)."""

    id: str
    title: str
    topic: str
    aliases: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    file: str
    sections: list[SectionDoc] = Field(default_factory=list)


class TopicScore(BaseModel):
    """A topic and how strongly the question points at it (sum of its sections' BM25 scores, normalised to 0..1)."""

    id: str = Field(description="Topic id")
    score: float = Field(description="Share of the retrieval mass on this topic, 0..1")


class SnippetOut(BaseModel):
    """A snippet as returned in an answer, with its verification verdict."""

    id: str = Field(description="Snippet id, usable with `fsdp-skill verify` and `export`")
    code: str = Field(description="The complete script")
    launch: str = Field(description="Command that launches it, e.g. 'torchrun --standalone --nproc_per_node=2 x.py'")
    world_size: int = Field(description="Ranks the script is written for")
    requires: list[str] = Field(default_factory=list, description="Host requirements, e.g. ['cuda']")
    checks: str | None = Field(None, description="What the script asserts: 'reference', 'agree', 'raises' or 'runs'")
    proves: str = Field("", description="What a passing run proves, e.g. 'matches a single-process reference to 1e-06'")
    verification: Verdict = Field(description="Verdict of running it on a real process group (or 'unverified')")


class SectionOut(BaseModel):
    """A retrieved section as returned in an answer."""

    id: str = Field(description="Section id 'topic/slug'")
    title: str = Field(description="Section heading")
    topic: str = Field(description="Topic id")
    score: float = Field(description="BM25 score of the section for this question (higher is better)")
    text: str = Field(description="Markdown body of the section")
    zh: str | None = Field(None, description="One-sentence Chinese summary of the section")
    title_zh: str | None = Field(None, description="Chinese heading of the section")
    text_zh: str | None = Field(
        None,
        description="Full Chinese markdown body of the section: the same facts, steps, "
        "caveats and numbers as `text`, code blocks identical (snippets are in `snippets`)",
    )
    sources: list[str] = Field(default_factory=list, description="Official documentation URLs")
    apis: list[str] = Field(default_factory=list, description="APIs the section discusses")
    torch_requires: str | None = Field(
        None, description="torch versions the section applies to, e.g. '>=2.6' (None: no bound declared)"
    )
    applies: bool | None = Field(
        None, description="False when the torch in use is outside torch_requires; None when either is unknown"
    )
    applicability: str | None = Field(None, description="What to know on this torch, e.g. 'needs torch >=2.6; yours is 2.4.1'")
    snippets: list[SnippetOut] = Field(default_factory=list, description="Verified (or unverified) scripts")


class ApiInfo(BaseModel):
    """Live signature of an API in the target interpreter's torch (the tool's own, or --python PATH)."""

    name: str = Field(description="Fully qualified name, e.g. 'torch.distributed.fsdp.fully_shard'")
    signature: str | None = Field(None, description="inspect.signature of the object, or None if unavailable")
    summary: str | None = Field(None, description="First paragraph of its docstring")
    available: bool = Field(
        description="False when the name does not resolve in the target interpreter's torch, or torch is not installed there"
    )
    reason: str | None = Field(
        None,
        description="Why it is not available when torch is missing, and how to fix it "
        "(install torch or pass --python PATH); None otherwise",
    )


class RaisedAt(BaseModel):
    """Where the installed torch raises or warns a message."""

    path: str = Field(description="File relative to the torch package's parent, e.g. 'torch/distributed/distributed_c10d.py'")
    line: int | None = Field(None, description="1-based line of the raise / warn call")
    function: str | None = Field(None, description="Enclosing 'Class.method' or function, None at module level")


class ErrorInfo(BaseModel):
    """An error or warning message found in the question, located in the installed torch."""

    message: str = Field(description="The message template ('*' = a formatted-in value)")
    kind: Literal["python", "native", "declared"] = Field(
        description="'python': raised/warned in torch's Python source; 'native': a string of torch's shared "
        "libraries (c10d, gloo, NCCL); 'declared': not catalogued here, matched a section's declared message"
    )
    exception: str | None = Field(None, description="Exception or warning class, e.g. 'ValueError'; None if unknown")
    raised_at: RaisedAt | None = Field(None, description="Source location; None for native and declared messages")
    condition: str | None = Field(
        None, description="Source text of the guard that leads to the raise, e.g. 'not is_initialized()'"
    )
    torch_version: str | None = Field(None, description="torch version whose source was catalogued")
    sections: list[str] = Field(default_factory=list, description="Ids of the knowledge sections that explain it (may be empty)")
    explanation: str = Field(description="One line: where it is raised and when")
    how: str = Field(description="'template' (whole message found), 'fuzzy' (truncated or wrapped paste) or 'section'")


class Answer(BaseModel):
    """Answer to one question: the ``ask --json`` contract."""

    query: str = Field(description="The question as received (trimmed)")
    language: str = Field(
        description="The reader's language: 'en', 'zh' or 'mixed' (English with a few Chinese words), "
        "detected from the question's main language unless set (--lang, HTTP/MCP 'language'). "
        "Renderers show sections[].text_zh for 'zh', sections[].text otherwise"
    )
    abstained: bool = Field(description="True when the question is outside FSDP / torch.distributed")
    reason: str | None = Field(None, description="Why the assistant abstained, or None")
    topics: list[TopicScore] = Field(default_factory=list, description="Topics ranked by score")
    sections: list[SectionOut] = Field(default_factory=list, description="Top-k sections, best first")
    api: list[ApiInfo] = Field(default_factory=list, description="Live signatures of the APIs those sections list")
    errors: list[ErrorInfo] = Field(
        default_factory=list,
        description="Error/warning messages found in the question, "
        "located in the installed torch, with the sections that explain them",
    )
    findings: list[Finding] = Field(
        default_factory=list,
        description="Mistakes `check` found in Python code pasted in "
        "the question (a fenced block, or a question that is a script); their sections "
        "come first. Lines are counted within each block ('path' names the block)",
    )
    torch_version: str | None = Field(
        None,
        description="torch version of the target interpreter (from package metadata); None when torch is not installed there",
    )
    python: str | None = Field(
        None,
        description="Absolute path of the target interpreter whose torch answered "
        "(signatures, verdicts): the tool's own, or --python / $FSDP_SKILL_PYTHON",
    )
    plan: str | None = Field(
        None,
        description="For a 'will it fit' / 'how much memory' question: a ready "
        "`fsdp-skill plan` command line that measures per-GPU peak memory (else None)",
    )
    elapsed_ms: float = Field(0.0, description="Time spent answering, in milliseconds")
