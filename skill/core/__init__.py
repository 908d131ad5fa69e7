"""The core: knowledge, routing, answers, snippets and their verification (no adapter imports)."""
