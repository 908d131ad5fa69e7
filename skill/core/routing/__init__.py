"""Question -> ranked knowledge sections, or an abstention with its reason.

- :mod:`.router`: the BM25 router (:class:`~.router.Router`, :func:`~.router.get_router`).
- :mod:`.tokenize`: the field's tokenizer (questions and sections alike; English and Chinese).
- :mod:`.scope`: whether a question belongs to the field at all.
"""
