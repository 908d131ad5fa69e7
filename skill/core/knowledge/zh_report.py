"""``python -m fsdp_skill.core.knowledge.zh_report``: the drift report of the Chinese bodies, for whoever writes them.

Lists, per section, what :func:`fsdp_skill.core.knowledge.zh.problems` finds (the same checks ``tests/test_zh.py``
runs) and the sections that have no Chinese body; ``--dump`` prints the English text a Chinese body must
follow. Kept apart from :mod:`fsdp_skill.core.knowledge.zh`, which the knowledge loader imports.
"""

from __future__ import annotations

from fsdp_skill.core.knowledge.zh import load_glossary, load_zh, problems


def main(argv: list[str] | None = None) -> int:
    """``python -m fsdp_skill.core.knowledge.zh_report [--dump] [ID_PREFIX...]``: list every problem of the Chinese bodies.

    Prints ``path:line: id: problem`` lines and the sections still missing a Chinese body (only those
    under the given id prefixes, e.g. ``fsdp2/``); exit 1 when anything is listed, else 0. ``--dump``
    prints the English text of those sections instead, as the Chinese body must follow it (verified
    snippets are not part of it: they are shown after the body, in every language).
    """
    import sys

    from fsdp_skill.core.knowledge.cards import load_knowledge

    args = list(argv if argv is not None else sys.argv[1:])
    dump = "--dump" in args
    prefixes = tuple(a for a in args if a != "--dump") or ("",)
    kb = load_knowledge()
    if dump:
        for sid, sec in kb.sections.items():
            if sid.startswith(prefixes):
                print(f"## {sec.title}\n<!-- id: {sid} -->\n\n{sec.text}\n")
        return 0
    zh, glossary = load_zh(kb.directory), load_glossary(kb.directory)
    bad = 0
    for sid, sec in kb.sections.items():
        if not sid.startswith(prefixes):
            continue
        if sid not in zh:
            print(f"{sid}: no Chinese body")
            bad += 1
            continue
        for p in problems(sec.text, zh[sid], glossary):
            print(f"{zh[sid].path}:{zh[sid].line}: {sid}: {p}")
            bad += 1
    for sid, zsec in zh.items():
        if sid not in kb.sections and sid.startswith(prefixes):
            print(f"{zsec.path}:{zsec.line}: {sid}: no English section has this id")
            bad += 1
    print(f"{bad} problem(s)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
