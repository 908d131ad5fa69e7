"""A tokenizer made for questions about PyTorch distributed training.

What it does to text (the same to questions and to knowledge sections):

* Code identifiers are kept whole *and* split into parts: ``reshard_after_forward`` gives
  ``reshardafterforward``, ``reshard``, ``after``, ``forward``; ``MixedPrecisionPolicy`` gives
  ``mixedprecisionpolicy``, ``mixed``, ``precision``, ``policy``; dotted names such as
  ``torch.distributed.fsdp.fully_shard`` give every component.  Separators are dropped from the whole
  form, so ``all-gather``, ``all_gather`` and ``allgather`` all meet in ``allgather``.
* English words are lower-cased, light-stemmed (``shards``/``sharding``/``sharded`` -> ``shard``) and
  stop words are dropped.
* Chinese (CJK) runs become character bigrams (a lone character stays a unigram); common
  question words (怎么, 如何, 什么 ...) are dropped.
* Pasted Python tracebacks are reduced to what identifies the problem: the exception lines and the
  names of the functions in the frames, without file paths and line numbers.

All functions are pure and fast (no torch, no I/O).
"""

from __future__ import annotations

import functools
import re

TOKENIZER_VERSION = 1  # bump whenever tokens change, so cached indexes are rebuilt

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_RUN = _CJK_RUN = re.compile(f"[{_CJK}]+")  # runs of Chinese characters (the router indexes them too; one compiled
# class serves every use: compiling a class of these ranges takes milliseconds of each start)
# identifiers, dotted names, hyphenated terms and numbers with letters (bf16, fp32, v1.8)
_WORD = re.compile(r"[A-Za-z0-9_]+(?:[.\-][A-Za-z0-9_]+)*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+[a-z]*")

STOPWORDS_EN = frozenset(
    """a an the and or but if then else of to in on at by for with from into onto about as is are was were be
    been being am do does did doing done have has had having i me my we our you your he she it its they them
    their this that these those there here what which who whom whose when where why how can could should
    would will shall may might must need needs let lets get gets got so than too very just also only not no
    yes any all some each every both few more most other such own same s t don doesn didn isn aren wasn
    weren won wouldn shouldn couldn one use using used want wants way ways make makes made like please
    thank thanks hi hello tell know work works working example examples e g eg ie vs via""".split()
)
# Chinese function words / question words, as bigrams or single characters
STOPWORDS_ZH = frozenset(
    """怎么 什么 如何 为什 么么 是否 可以 能否 一个 一下 哪个 哪些 这个 那个 应该 需要 么样 怎样 有没 没有 有什 么区
    我们 你们 他们 的话 时候 还是 或者 以及 然后 因为 所以 但是 如果 是不 不是 吗 呢 吧 的 了 是 在 和 与 我 你
    么 要 会 能 怎 该 把 被 给 从 对 让 用 都 也 就 还 又 很 有 这 那 哪 啊 呀 后""".split()
)

_SUFFIXES = (
    ("ization", "ize"),
    ("ations", "ate"),
    ("ation", "ate"),
    ("ings", ""),
    ("ing", ""),
    ("edly", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("es", ""),
    ("ed", ""),
    ("s", ""),
)
_KEEP = frozenset({"always", "aliases", "does", "this", "bytes", "series", "species"})
_STOP_CHARS = frozenset("的了吗呢吧么什怎哪们我你他她它是")


def stem(word: str) -> str:
    """Strip one common English suffix (``sharding`` -> ``shard``); short and listed words stay as they are."""
    if len(word) <= 4 or word in _KEEP or not word.isalpha():
        return word
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word[-2] in "siu":
                return word  # process, bias, status
            base = word[: -len(suffix)] + repl
            if suffix in ("ing", "ed", "ings", "edly") and len(base) > 3 and base[-1] == base[-2] and base[-1] not in "ls":
                base = base[:-1]  # stopped -> stop, mapped -> map
            if suffix == "es" and not re.search(r"(ss|x|z|sh|tch)$", base):
                base = word[:-1]  # caches -> cache (not cach)
            return base
    return word


@functools.lru_cache(maxsize=8192)
def _identifier_tokens(raw: str) -> tuple[str, ...]:
    """Tokens of one identifier-like word: whole (separators removed), components, camel/snake parts.
    Kept per word (words repeat across questions and sections), so tokenizing a question costs little."""
    if raw.isalpha() and (raw.islower() or raw[0].isupper() and raw[1:].islower()):
        # a plain word (most of any text): no separators, no camel parts; what the general path gives it
        word = raw.lower()
        return () if word in STOPWORDS_EN or len(word) == 1 else (stem(word),)
    out: list[str] = []
    whole = re.sub(r"[._\-]", "", raw).lower()
    pieces = [p for p in re.split(r"[.\-]", raw) if p]
    compound = (
        len(pieces) > 1 or "_" in raw.strip("_") or len(_CAMEL.findall(raw)) > 1 and raw != raw.lower() and raw != raw.upper()
    )
    if compound and whole and not whole.isdigit():
        out.append(whole)
    for piece in pieces:
        parts = [p for p in piece.split("_") if p]
        if len(parts) > 1 or (parts and re.search(r"[a-z][A-Z]", parts[0])):
            joined = "".join(parts).lower()
            if joined != whole:
                out.append(joined)
        for part in parts:
            sub = _CAMEL.findall(part) if re.search(r"[a-z][A-Z]|[A-Z][A-Z][a-z]", part) else [part]
            if len(sub) > 1:
                low = part.lower()
                if low != whole:
                    out.append(low)
            for s in sub:
                w = s.lower()
                if w in STOPWORDS_EN or (len(w) == 1 and not w.isdigit()):
                    continue
                out.append(stem(w))
    return tuple(dict.fromkeys(out))


def _cjk_tokens(run: str) -> list[str]:
    """Character bigrams of a CJK run, dropping question words; a single character stays a unigram."""
    if len(run) == 1:
        return [] if run in STOPWORDS_ZH else [run]
    return [bg for bg in (run[i : i + 2] for i in range(len(run) - 1)) if bg not in STOPWORDS_ZH and not (_STOP_CHARS & set(bg))]


def tokenize(text: str) -> list[str]:
    """Split text into search tokens (see the module docstring).

    >>> tokenize("reshard_after_forward")
    ['reshardafterforward', 'reshard', 'after', 'forward']
    """
    tokens: list[str] = []
    pos = 0
    for m in _CJK_RUN.finditer(text):
        tokens.extend(_latin_tokens(text[pos : m.start()]))
        tokens.extend(_cjk_tokens(m.group()))
        pos = m.end()
    tokens.extend(_latin_tokens(text[pos:]))
    return tokens


_PLURAL_ACRONYM = re.compile(r"\b([A-Z]{2,})s\b")  # GPUs, APIs -> GPU, API


def _latin_tokens(text: str) -> list[str]:
    text = _PLURAL_ACRONYM.sub(r"\1", text)
    out: list[str] = []
    for m in _WORD.finditer(text):
        out.extend(_identifier_tokens(m.group().strip("._-")))
    return out


_TB_FRAME = re.compile(r'^\s*File "([^"]*)", line \d+, in (\S+)', re.M)
_TB_HEADER = re.compile(r"Traceback \(most recent call last\):")
_EXC_LINE = re.compile(r"^\s*(?:[\w.]+\.)?(\w*(?:Error|Exception|Warning|Interrupt|Exit))(?:: (.*))?$", re.M)


def is_traceback(text: str) -> bool:
    """True when the text looks like a pasted Python traceback or error log."""
    return bool(_TB_HEADER.search(text) or _TB_FRAME.search(text) or len(_EXC_LINE.findall(text)) >= 1 and "\n" in text.strip())


def reduce_traceback(text: str) -> str:
    """Keep what identifies an error: exception lines (twice, they matter most), frame function names,
    and prose lines; drop file paths, line numbers and source echo lines of frames."""
    keep: list[str] = []
    lines = text.splitlines()
    skip_next = False
    for line in lines:
        frame = _TB_FRAME.match(line)
        if frame:
            path, func = frame.groups()
            if "torch" in path or "site-packages" not in path:
                keep.append(func)
            skip_next = True  # the next line echoes source code
            continue
        if skip_next:
            skip_next = False
            if line.startswith("    "):
                continue
        if _TB_HEADER.search(line) or re.match(r"^\s*[\^~]+\s*$", line):
            continue
        keep.append(line)
        if _EXC_LINE.match(line):
            keep.append(line)
    return "\n".join(keep)


def language_of(text: str) -> str:
    """The question's main language: 'en' (no Chinese), 'zh' or 'mixed' (English carrying a few Chinese words).

    Only the lines that hold Chinese are weighed (the asker's own sentences; a pasted traceback or log has
    none): they are 'zh' when their Chinese characters number at least 1.5 times their Latin words, which
    keeps ``FSDP2 怎么用 bf16 训练？`` Chinese and ``How do I combine fully_shard with 梯度累积?`` English.
    Answers are written in Chinese for 'zh' only.
    """
    lines = [line for line in text.splitlines() if _CJK_RUN.search(line)]
    if not lines:
        return "en"
    own = "\n".join(lines)
    cjk = sum(map(len, _CJK_RUN.findall(own)))
    latin_words = len(re.findall(r"[A-Za-z]{2,}", own))
    return "zh" if cjk >= 1.5 * latin_words else "mixed"


def has_cjk(text: str) -> bool:
    """True when the text holds at least one CJK character (an ASCII text is answered without the regex: the
    router asks this of every token of a question)."""
    return not text.isascii() and bool(_CJK_RUN.search(text))
