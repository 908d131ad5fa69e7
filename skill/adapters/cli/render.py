"""Human renderings of an Answer: markdown text and a rich terminal view.

Verdict wording is shared by both: a passed snippet says where it ran; a failed or timed-out one is
shown as *not recommended* with the reason instead of being offered; skipped says why it did not run.
"""

from __future__ import annotations

from fsdp_skill.core.models import Answer, SectionDoc, SectionOut, SnippetOut
from fsdp_skill.runtime.models import Verdict


def verdict_line(v: Verdict) -> str:
    """One line describing a verdict, e.g. 'verified: passed on gloo, world_size 2, cpu, torch 2.13.0 (0.21 s, cached)'."""
    if v.status == "passed":
        extra = ", cached" if v.cached else ""
        when = f", {v.checked_at[:10]}" if v.checked_at else ""
        return (
            f"verified: passed on {v.backend}, world_size {v.world_size}, {v.device}, torch {v.torch_version} "
            f"({v.seconds:.2f} s{extra}{when})"
        )
    if v.status == "unverified":
        return f"unverified: {v.reason}" if v.reason else "unverified: not run for this answer"
    if v.status == "skipped":
        return f"skipped: not run on this host — {v.reason}"
    return f"NOT RECOMMENDED: {v.status} verification on this host — {v.reason}"


def record_lines(sn: SnippetOut) -> list[str]:
    """Where the snippet's code ran before release (the compatibility record) and what it says for the torch in use."""
    from fsdp_skill.core.knowledge.compat import summary

    if not sn.recorded:  # one line says it: 'your torch X: this code is not in the compatibility record'
        return [sn.recorded_here or summary([])]
    return [summary(sn.recorded)] + ([sn.recorded_here] if sn.recorded_here else [])


def note_lines(s: SectionOut, torch_version: str | None) -> list[str]:
    """One line per version note of the section, the ones about the torch in use marked 'your torch'."""
    from fsdp_skill.core.knowledge.applicability import contains

    out = []
    for note in s.version_notes:
        mine = bool(torch_version) and contains(note.torch, torch_version or "")
        out.append(f"torch {note.torch}{' (your torch)' if mine else ''}: {note.note}")
    return out


def _proof(sn: SnippetOut) -> str:
    """'Proves: ...' for a passed snippet (what its assertions establish), else ''."""
    return f"Proves: {sn.proves}.  \n" if sn.verification.status == "passed" and sn.proves else ""


def _offered(sn: SnippetOut) -> bool:
    return sn.verification.status not in ("failed", "timeout")


def error_lines(ans: Answer) -> list[str]:
    """One plain line per message found in the question: where torch raises it, and what explains it."""
    lines = []
    for e in ans.errors:
        told = (
            f"explained by {', '.join(e.sections)}"
            if e.sections
            else "no knowledge section explains this message yet; the sections below are the closest matches"
        )
        where = f" (torch {e.torch_version})" if e.torch_version else ""
        lines.append(f"{e.message!r}: {e.explanation}{where}; {told}")
    return lines


def _errors_title(ans: Answer) -> str:
    """Heading of the messages found: located in the target's torch, or only recognised (no torch there)."""
    return "Error located in your torch" if ans.torch_version else "Error message recognised (no torch to locate it in)"


def _api_absent(a) -> str:
    """Why an API has no signature: the reason given (no torch, torch broken) or missing from that torch."""
    return a.reason or "missing from the installed torch"


def answer_markdown(ans: Answer) -> str:
    """The whole answer as markdown (messages located, sections, snippets with verdicts, API signatures)."""
    first, _, rest = ans.query.partition("\n")
    out = [f"# {first}\n"] + ([f"```text\n{rest}\n```\n"] if rest.strip() else [])
    if ans.errors:
        out.append(f"**{_errors_title(ans)}**\n")
        out += [f"- {line}" for line in error_lines(ans)] + [""]
    if ans.findings:
        out.append("**Mistakes found in your code** (`fsdp-skill check`)\n")
        out += [f"- {f.line_text()}" for f in ans.findings] + [""]
    if ans.abstained:
        out.append(f"**Out of scope.** {ans.reason}\n")
    if ans.plan:  # also when abstained: the reason then says "the plan command below measures" it
        out.append(f"**Measure it** (per-GPU peak memory for your setting):\n\n```sh\n{ans.plan}\n```\n")
    if ans.abstained:
        return "\n".join(out)
    for i, s in enumerate(ans.sections, 1):
        title, text, summary = localized(s, ans.language)
        out.append(f"## {i}. {title}  \n`{s.id}` · score {s.score:.2f}\n")
        if summary:
            out.append(f"> 中文摘要：{summary}\n")
        if s.applies is False:
            out.append(f"> **Not for your torch:** {s.applicability}\n")
        out.append(text + "\n")
        notes = note_lines(s, ans.torch_version)
        if notes:
            out.append("**Version notes**\n\n" + "\n".join(f"- {n}" for n in notes) + "\n")
        for sn in s.snippets:
            recorded = "".join(f"{line}  \n" for line in record_lines(sn))
            out.append(
                f"**Snippet `{sn.id}`** — {verdict_line(sn.verification)}  \n{recorded}{_proof(sn)}Launch: `{sn.launch}`\n"
            )
            if _offered(sn):
                out.append(f"```python\n{sn.code}```\n")
        out.append("Sources: " + ", ".join(s.sources) + "\n")
    if ans.api:
        out.append(f"## API in your torch {ans.torch_version or '(not available)'}\n")
        for a in ans.api:
            if a.available:
                out.append(f"- `{a.name}` — `{a.signature or '(no signature)'}`  \n  {a.summary or ''}")
            else:
                out.append(f"- `{a.name}` — **{_api_absent(a)}**")
        out.append("")
    return "\n".join(out)


def localized(s: SectionOut | SectionDoc, language: str) -> tuple[str, str, str | None]:
    """(title, body, short Chinese summary to show or None) of a section for a reader of ``language``.

    'zh' gets the full Chinese body when the section has one (no summary then: the body says it all);
    'mixed' gets the English body with the Chinese summary; 'en' the English body alone.
    """
    if language == "zh" and s.text_zh:
        return s.title_zh or s.title, s.text_zh, None
    return s.title, s.text, s.zh if language != "en" else None


def section_markdown(s: SectionDoc, language: str = "en") -> str:
    """One knowledge section as markdown, with its snippets and metadata (for ``fsdp-skill show``); ``language``
    'zh' gives the Chinese title and body (the English ones when the section has none)."""
    title, text, _ = localized(s, language)
    out = [f"## {title}", f"`{s.id}` · {s.card}:{s.line}", ""]
    if s.zh and text is s.text:
        out += [f"> 中文摘要：{s.zh}", ""]
    out += [text, ""]
    for sn in s.snippets:
        out += [
            f"**Snippet `{sn.id}`** (world_size {sn.world_size}{', requires ' + ','.join(sn.requires) if sn.requires else ''})",
            f"Launch: `{sn.launch}`",
            "",
            f"```python\n{sn.code}```",
            "",
        ]
    if s.apis:
        out.append("APIs: " + ", ".join(f"`{a}`" for a in s.apis))
    out.append("Sources: " + ", ".join(s.sources))
    return "\n".join(out) + "\n"


def _print_plan(console, ans: Answer) -> None:
    """The ``fsdp-skill plan`` command that measures a memory-fit question, if the answer has one."""
    from rich.markup import escape

    if ans.plan:  # not in a panel: its border would be copied with a command that wraps
        console.print("[bold cyan]measure it[/bold cyan] (per-GPU peak memory for your setting):")
        console.print(escape(ans.plan), soft_wrap=True, highlight=False)


def print_answer(ans: Answer, console=None) -> None:
    """Print an Answer to the terminal with rich (panels, syntax-highlighted code, verdict colours)."""
    from rich.console import Console
    from rich.markdown import Markdown
    from rich.markup import escape
    from rich.panel import Panel
    from rich.syntax import Syntax

    class _Console(Console):
        def on_broken_pipe(self) -> None:  # rich exits 1 itself; let main() stop quietly with 0 instead
            raise BrokenPipeError

    console = console or _Console()
    if ans.abstained:
        console.print(Panel(escape(ans.reason or ""), title="out of scope", border_style="yellow"))
        _print_plan(console, ans)  # the reason says "the plan command below measures" it
        return
    for line in error_lines(ans):
        console.print(Panel(escape(line), title=_errors_title(ans).lower(), border_style="magenta", title_align="left"))
    if ans.findings:
        console.print(
            Panel(
                escape("\n".join(f.line_text() for f in ans.findings)),
                title="mistakes found in your code",
                border_style="red",
                title_align="left",
            )
        )
    _print_plan(console, ans)
    topics = ", ".join(f"{t.id} {t.score:.2f}" for t in ans.topics[:3])
    console.print(f"[dim]topics: {topics} · torch {ans.torch_version or 'not available'} · {ans.elapsed_ms:.1f} ms[/dim]")
    for i, s in enumerate(ans.sections, 1):
        title, text, summary = localized(s, ans.language)
        body = [Markdown(text)]
        if summary:
            body.insert(0, Markdown(f"> 中文摘要：{summary}"))
        if s.applies is False:
            body.insert(0, Markdown(f"> **Not for your torch:** {s.applicability}"))
        notes = note_lines(s, ans.torch_version)
        if notes:
            body.append(Markdown("**Version notes**\n\n" + "\n".join(f"- {n}" for n in notes)))
        from rich.console import Group

        console.print(
            Panel(
                Group(*body),
                title=f"{i}. {escape(title)}",
                subtitle=f"{s.id} · score {s.score:.2f}",
                title_align="left",
                subtitle_align="right",
            )
        )
        for sn in s.snippets:
            _print_snippet(console, sn, Syntax, Panel)
        console.print("[dim]sources: " + escape(" ".join(s.sources)) + "[/dim]\n")
    if ans.api:
        console.print(f"[bold]API in your torch {ans.torch_version or '(not available)'}[/bold]")
        for a in ans.api:
            if a.available:
                console.print(
                    f"  [cyan]{escape(a.name)}[/cyan]\n    {escape(a.signature or '')}\n    [dim]{escape(a.summary or '')}[/dim]"
                )
            else:
                console.print(f"  [red]{escape(a.name)} — {escape(_api_absent(a))}[/red]")


def _print_snippet(console, sn: SnippetOut, Syntax, Panel) -> None:
    v = sn.verification
    colour = {"passed": "green", "skipped": "yellow", "unverified": "blue"}.get(v.status, "red")
    from rich.markup import escape

    line = escape(verdict_line(v))
    if _offered(sn):
        # word_wrap: a narrow terminal wraps code lines instead of cutting them (copied code stays whole)
        console.print(
            Panel(
                Syntax(sn.code, "python", line_numbers=False, word_wrap=True),
                title=f"snippet {sn.id}",
                border_style=colour,
                title_align="left",
            )
        )
        console.print(f"  [{colour}]{line}[/{colour}]")
        for recorded in record_lines(sn):
            console.print(f"  [dim]{escape(recorded)}[/dim]")
        if v.status == "passed" and sn.proves:
            console.print(f"  [{colour}]proves: {escape(sn.proves)}[/{colour}]")
        console.print(f"  launch: [bold]{escape(sn.launch)}[/bold]")
    else:
        console.print(f"[{colour}]snippet {sn.id}: {line}[/{colour}]")
        for recorded in record_lines(sn):
            console.print(f"  [dim]{escape(recorded)}[/dim]")
