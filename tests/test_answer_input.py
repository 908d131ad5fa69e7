"""The question check's character classes equal what they stand for, over every code point."""

import sys
import unicodedata

from fsdp_skill.core import answer


def test_the_control_class_is_unicode_cc_and_co_but_tab_newline_and_return():
    """_CONTROL matches exactly the code points whose category is Cc or Co, other than tab, LF and CR."""
    wrong = [
        cp
        for cp in range(sys.maxunicode + 1)
        if not 0xD800 <= cp <= 0xDFFF
        and bool(answer._CONTROL.match(chr(cp))) != (unicodedata.category(chr(cp)) in ("Cc", "Co") and chr(cp) not in "\t\n\r")
    ]
    assert wrong == []


def test_the_surrogate_class_is_unicode_cs():
    wrong = [
        cp
        for cp in range(sys.maxunicode + 1)
        if bool(answer._SURROGATE.match(chr(cp))) != (unicodedata.category(chr(cp)) == "Cs")
    ]
    assert wrong == []


def test_control_characters_are_counted_as_before():
    """Counting through the class gives the per-character category count on mixed text."""
    text = "a\x01b\x7f\x9f\ue000\U000f0000\t\n\r é 中 \u200b"
    before = sum(1 for ch in text if unicodedata.category(ch) in ("Cc", "Cs", "Co") and ch not in "\n\r\t")
    assert len(answer._CONTROL.findall(text)) == before == 5
