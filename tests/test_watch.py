"""fsdp_skill.runtime.watch: the generation moves on every kind of change in a watched folder, never in an
unwatched one, starts only on the second call of a process, survives folders that come and go, and a forked
child does not steal its parent's events; the knowledge and the compatibility record follow edits through it."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from fsdp_skill.core.knowledge import cards, compat
from fsdp_skill.core.knowledge.cards import load_knowledge
from fsdp_skill.runtime import watch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


class _SeenAll(set):
    def issuperset(self, other):  # every folder counts as asked about before: the instance opens at once
        return True


@pytest.fixture
def watcher(monkeypatch):
    """A fresh watcher that opens its instance on its first call, with no backstop (the generation moves only on
    events)."""
    w = watch._Watcher()
    monkeypatch.setattr(watch, "BACKSTOP_S", 1e9)
    w.asked = _SeenAll()
    yield w
    if w.fd >= 0:
        os.close(w.fd)


def _gen(w: watch._Watcher, *folders: Path) -> int:
    g = w.generation([str(f) for f in folders])
    assert g is not None, "inotify should be available on this Linux host"
    return g


def test_a_folders_first_look_opens_nothing_and_its_second_opens_the_instance(tmp_path):
    w = watch._Watcher()
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert w.generation([a]) is None and w.fd == -1  # a one-shot command: no ctypes, no inotify instance
    assert w.generation([b]) is None and w.fd == -1  # another folder's first look
    assert w.generation([a], start=False) is None and w.fd == -1  # a caller that never starts it
    try:
        assert w.generation([a]) is not None and w.fd >= 0  # asked again: a long-lived process
        assert w.generation([str(tmp_path / "d")], start=False) is not None  # and now the others use it
        assert w.generation([str(tmp_path / "c")]) is not None  # open now: any folder is watched at once
    finally:
        os.close(w.fd)


def test_nothing_changed_keeps_the_generation_and_each_kind_of_change_moves_it(watcher, tmp_path):
    (tmp_path / "a.md").write_text("a")
    g = _gen(watcher, tmp_path)
    assert _gen(watcher, tmp_path) == g  # quiet folder
    (tmp_path / "unrelated").mkdir()
    changes = [
        lambda: (tmp_path / "a.md").write_text("edited in place"),
        lambda: os.utime(tmp_path / "a.md", ns=(10**18, 10**18)),  # a timestamp only
        lambda: (tmp_path / "b.md").write_text("new"),
        lambda: (tmp_path / "b.md").rename(tmp_path / "c.md"),
        lambda: (tmp_path / "c.md").unlink(),
        lambda: os.chmod(tmp_path / "a.md", 0o600),
    ]
    for change in changes:
        change()
        moved = _gen(watcher, tmp_path)
        assert moved != g, change
        g = moved
        assert _gen(watcher, tmp_path) == g  # and it settles


def test_a_change_elsewhere_does_not_move_it(watcher, tmp_path):
    watched, other = tmp_path / "watched", tmp_path / "other"
    watched.mkdir()
    other.mkdir()
    g = _gen(watcher, watched)
    (other / "x.md").write_text("x")
    assert _gen(watcher, watched) == g


def test_a_missing_folder_is_watched_through_its_parent_until_it_exists(watcher, tmp_path):
    zh = tmp_path / "zh"
    g = _gen(watcher, tmp_path, zh)
    assert _gen(watcher, tmp_path, zh) == g
    zh.mkdir()
    g2 = _gen(watcher, tmp_path, zh)
    assert g2 != g and watcher.exact[str(zh)]
    (zh / "card.md").write_text("中文")  # now its own watch reports changes inside it
    assert _gen(watcher, tmp_path, zh) != g2


def test_a_folder_deleted_and_made_again_is_watched_again(watcher, tmp_path):
    folder = tmp_path / "compat"
    folder.mkdir()
    g = _gen(watcher, folder)
    shutil.rmtree(folder)
    g2 = _gen(watcher, folder)
    assert g2 != g and not watcher.exact[str(folder)]
    folder.mkdir()
    g3 = _gen(watcher, folder)
    assert g3 != g2
    (folder / "r.json").write_text("{}")
    assert _gen(watcher, folder) != g3


def test_the_backstop_moves_the_generation_after_its_seconds(watcher, tmp_path, monkeypatch):
    g = _gen(watcher, tmp_path)
    clock = [watcher.moved_at + 0.5]
    monkeypatch.setattr(watch.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(watch, "BACKSTOP_S", 1.0)
    assert _gen(watcher, tmp_path) == g
    clock[0] += 1.0
    assert _gen(watcher, tmp_path) != g


def test_without_inotify_every_call_says_check_in_full(tmp_path, monkeypatch):
    w = watch._Watcher()
    assert w.generation([str(tmp_path)]) is None
    monkeypatch.setattr(w, "_open", lambda: False)  # e.g. max_user_instances reached
    assert w.generation([str(tmp_path)]) is None
    w.broken = True
    assert w.generation([str(tmp_path)]) is None


def test_a_forked_child_opens_its_own_instance_and_leaves_the_parents_events(watcher, tmp_path):
    g = _gen(watcher, tmp_path)
    (tmp_path / "a.md").write_text("changed before the fork")  # queued on the parent's instance
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first call drains nothing of the parent's
        try:
            os.close(read)
            watcher.after_fork()
            child = watcher.generation([str(tmp_path)])
            os.write(write, json.dumps([child is not None, watcher.pid == os.getpid()]).encode())
        finally:
            os._exit(0)
    os.close(write)
    reported = json.loads(os.read(read, 100))
    os.close(read)
    os.waitpid(pid, 0)
    assert reported == [True, True]
    assert _gen(watcher, tmp_path) != g  # the parent still sees its event


@pytest.fixture
def knowledge_copy(tmp_path):
    src = Path(__file__).resolve().parent.parent / "knowledge"
    dest = tmp_path / "knowledge"
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "mutations"))
    return dest


def test_the_process_watcher_serves_repeated_loads_and_sees_an_edit_in_place_at_once(knowledge_copy, monkeypatch):
    monkeypatch.setattr(watch, "BACKSTOP_S", 1e9)
    first = load_knowledge(knowledge_copy)
    load_knowledge(knowledge_copy)
    assert cards._CHECKED[str(knowledge_copy)][0] is not None  # the watcher is on: the fast path is the one tested
    stats = []
    monkeypatch.setattr(cards, "_markdown_stats", lambda folder: stats.append(folder) or [])
    assert load_knowledge(knowledge_copy) is first and not stats  # served without one stat
    monkeypatch.undo()
    monkeypatch.setattr(watch, "BACKSTOP_S", 1e9)
    card = knowledge_copy / "join.md"
    text = card.read_text(encoding="utf-8")
    mtime = card.stat().st_mtime_ns
    card.write_text(text.replace("## ", "## Edited: ", 1), encoding="utf-8")
    os.utime(card, ns=(mtime, mtime))  # same mtime; the size changed
    edited = load_knowledge(knowledge_copy)
    assert edited is not first and any(s.title.startswith("Edited: ") for s in edited.sections.values())
    zh = next((knowledge_copy / "zh").glob("*.md"))
    zh.write_text(zh.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # a Chinese body: its own folder's watch
    assert load_knowledge(knowledge_copy) is not edited


def test_the_record_follows_a_file_added_through_the_watcher(knowledge_copy, monkeypatch):
    monkeypatch.setattr(watch, "BACKSTOP_S", 1e9)
    load_knowledge(knowledge_copy)
    load_knowledge(knowledge_copy)  # a long-lived process: the watcher is started
    before = compat.load_record(knowledge_copy)
    assert compat.load_record(knowledge_copy) is before
    assert compat._LOADED[os.path.join(knowledge_copy, "compat")][2] is not None  # through the watcher
    folder = knowledge_copy / "compat"
    record = json.loads(next(folder.glob("*.json")).read_text(encoding="utf-8"))
    record["torch_version"] = "9.9.0"
    sid = next(iter(record["snippets"]))
    (folder / "torch-9.9.0-cpu.json").write_text(json.dumps(record), encoding="utf-8")
    after = compat.load_record(knowledge_copy)
    assert [r.torch_version for _, r in after[sid]][-1] == "9.9.0"
