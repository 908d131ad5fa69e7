"""The catalogue of the knowledge base: its topics, section ids and titles, and the snippet ids of each section.

One function, :func:`catalogue`, behind ``fsdp-skill show --list [--snippets] [--topic T] [--json]`` and the
MCP tool ``list_sections``.  Nothing is verified or run here.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from fsdp_skill.core.knowledge.cards import Knowledge, load_knowledge


class SnippetEntry(BaseModel):
    """One runnable snippet as listed (no code)."""

    id: str = Field(description="Snippet id, e.g. 'join/ddp-join', for verify_snippet / export_snippet")
    world_size: int = Field(description="Ranks the script is written for")
    requires: list[str] = Field(default_factory=list, description="Host requirements, e.g. ['cuda']")


class SectionEntry(BaseModel):
    """One knowledge section as listed (no text)."""

    id: str = Field(description="Section id 'topic/slug', for get_section")
    title: str = Field(description="Heading of the section")
    topic: str = Field(description="Topic (knowledge card) the section belongs to")
    snippets: list[SnippetEntry] = Field(default_factory=list, description="Its runnable snippets, in card order")


class Catalogue(BaseModel):
    """Every topic, and the sections (with their snippet ids) of the requested topics."""

    topics: list[str] = Field(description="Every topic of the knowledge base (values for the topic filter)")
    sections: list[SectionEntry] = Field(description="Sections of the requested topics (all when none), in card order")


def catalogue(topics: Iterable[str] = (), *, kb: Knowledge | None = None) -> Catalogue:
    """The sections of ``topics`` (all sections when empty), each with its snippet ids.

    Raises NotFoundError for an unknown topic, naming close ones.
    """
    kb = kb or load_knowledge()
    topics = list(topics)
    if topics:
        from fsdp_skill.core.verify.snippets import select_snippets

        select_snippets(topics=topics, all_snippets=True, kb=kb)  # an unknown topic names close ones
    by_section: dict[str, list[SnippetEntry]] = {}
    for sp in kb.snippets.values():
        by_section.setdefault(sp.section_id, []).append(
            SnippetEntry(id=sp.id, world_size=sp.world_size, requires=list(sp.requires))
        )
    sections = [
        SectionEntry(id=s.id, title=s.title, topic=s.topic, snippets=by_section.get(s.id, []))
        for s in kb.sections.values()
        if not topics or s.topic in topics
    ]
    return Catalogue(topics=list(kb.topics), sections=sections)
