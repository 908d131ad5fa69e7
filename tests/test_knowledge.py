"""Card parsing: the real knowledge, good fixtures and bad fixtures (each error names file:line)."""

import os
import shutil
import time
from pathlib import Path

import pytest

from fsdp_skill.core.knowledge.cards import load_knowledge, parse_card
from fsdp_skill.errors import KnowledgeError

DATA = Path(__file__).parent / "data"
TOPICS = {
    "sharding",
    "mixed-precision",
    "offload",
    "fsdp2",
    "join",
    "backends",
    "init",
    "checkpoint",
    "debugging",
    "model",
    "recipes",
    "parallelism",
    "launch",
    "data",
}


def test_good_fixture_parses_sections_and_snippets():
    kb = load_knowledge(DATA / "good")
    assert list(kb.sections) == ["join/join-basics", "join/throw-on-early-termination"]
    first = kb.sections["join/join-basics"]
    assert first.line == 12 and first.zh and first.apis == ["torch.distributed.algorithms.Join"]
    assert "```python\nwith Join" in first.text  # illustration fences stay in the text
    assert "name=join-min" not in first.text  # verify fences become snippets
    snip = kb.snippets["join/join-min"]
    assert (snip.world_size, snip.timeout, snip.backend, snip.line) == (2, 30.0, "auto", 29)
    assert snip.launch == "torchrun --standalone --nproc_per_node=2 join_join-min.py"


# expected "file:line" and a phrase of the message for every bad fixture
BAD = {
    "no-front-matter.md": (1, "front matter"),
    "missing-meta.md": (9, "HTML comment with its metadata"),
    "bad-yaml.md": (6, "invalid YAML"),
    "no-sources.md": (10, "cites no official source"),
    "bad-fence.md": (16, "world_size must be an integer"),
    "syntax-error.md": (18, "not valid Python"),
    "dup-slug.md": (16, "duplicate section id"),
    "id-mismatch.md": (1, "must agree"),
    "unknown-setting.md": (16, "unknown fence setting"),
}


@pytest.mark.parametrize("name", sorted(BAD), ids=lambda n: n[:-3])
def test_bad_fixture_names_file_and_line(name):
    path = DATA / "bad" / name
    line, phrase = BAD[name]
    with pytest.raises(KnowledgeError) as err:
        parse_card(path.read_text(encoding="utf-8"), path)
    assert str(err.value).startswith(f"{path}:{line}: "), str(err.value)
    assert phrase in str(err.value)


def test_every_bad_fixture_is_covered():
    assert {p.name for p in (DATA / "bad").glob("*.md")} == set(BAD)


def test_real_knowledge_has_every_topic_and_rules():
    kb = load_knowledge()
    assert set(kb.topics) == TOPICS
    for card in kb.cards:
        assert any(s.snippets for s in card.sections), f"{card.file} has no verify snippet"
        assert any("\u4e00" <= ch <= "\u9fff" for a in card.aliases for ch in a), f"{card.file} lacks Chinese aliases"
    for s in kb.sections.values():
        assert s.sources and all(u.startswith("https://docs.pytorch.org/") for u in s.sources), s.id
        assert s.zh, f"{s.id} lacks a Chinese summary"
        assert any("\u4e00" <= ch <= "\u9fff" for a in s.aliases for ch in a), f"{s.id} lacks Chinese aliases"
        for sn in s.snippets:
            assert "destroy_process_group" in sn.code, f"{sn.id} must destroy its process group"


def test_knowledge_dir_missing_is_a_clear_error(tmp_path):
    with pytest.raises(KnowledgeError, match="does not exist"):
        load_knowledge(tmp_path / "nope")
    with pytest.raises(KnowledgeError, match="no knowledge cards"):
        load_knowledge(tmp_path)


def test_the_package_folder_is_where_importlib_resources_finds_it():
    """The knowledge folder is found beside the package's __init__ without importing importlib.resources; that
    folder is resources.files' (tests/test_wheel.py checks the installed wheel's)."""
    from importlib import resources

    from fsdp_skill.core.knowledge import cards

    assert cards._package_files() == resources.files("fsdp_skill")


def _age(path: Path, seconds_ago: float) -> None:
    """Set ``path``'s mtime (and atime) to ``seconds_ago`` seconds before now."""
    when = time.time_ns() - int(seconds_ago * 1e9)
    os.utime(path, ns=(when, when))


def test_the_memoised_knowledge_follows_cards_edited_added_and_removed_in_place(tmp_path):
    """Each ask checks the cards against the memoised knowledge without listing an old, unchanged folder again:
    an edit in place is seen through the file's own stat, an added or removed card through the folder's mtime
    (a folder changed within the last two seconds is always listed again, as git treats racy entries)."""
    src = Path(__file__).resolve().parent.parent / "knowledge"
    dest = tmp_path / "knowledge"
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "mutations"))
    _age(dest, 60)
    _age(dest / "zh", 60)
    first = load_knowledge(dest)
    assert load_knowledge(dest) is first  # nothing changed: the memo

    card = dest / "join.md"  # an edit in place: the folder's mtime stays, the file's changes
    text = card.read_text(encoding="utf-8")
    card.write_text(text.replace("## ", "## Edited: ", 1), encoding="utf-8")
    _age(card, 30)
    _age(dest, 60)
    edited = load_knowledge(dest)
    assert edited is not first and any(s.title.startswith("Edited: ") for s in edited.sections.values())

    extra = dest / "extra.md"  # a card added: the folder's mtime changes
    extra.write_text(text.replace("id: join", "id: extra").replace("topic: join", "topic: extra"), encoding="utf-8")
    _age(dest, 20)
    added = load_knowledge(dest)
    assert "extra" in added.topics and "extra" not in edited.topics

    extra.unlink()  # removed again, the folder aged past the racy window
    _age(dest, 10)
    removed = load_knowledge(dest)
    assert "extra" not in removed.topics
    assert load_knowledge(dest) is removed
