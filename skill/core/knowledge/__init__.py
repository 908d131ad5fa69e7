"""Knowledge cards -> typed sections and snippets.

- :mod:`.cards`: parsing the cards (markdown-it-py) into :class:`~.cards.Knowledge`; the parsed-cards cache.
- :mod:`.cache_check`: trusting a parsed-cards cache file only as far as it agrees with the card files.
- :mod:`.zh`: the Chinese bodies (``knowledge/zh/*.md``) and their consistency rules; :mod:`.zh_report` prints
  their drift report.
- :mod:`.applicability`: which torch versions a section applies to.
- :mod:`.catalogue`: the topics, section ids and snippet ids (``show --list``, MCP ``list_sections``).
"""
