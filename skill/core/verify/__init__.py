"""Knowledge snippets and scripts -> verdicts, through the runtime; what a verdict points at.

- :mod:`.snippets`: selecting snippets, the one path from a snippet to a runtime job, verdicts shared between callers.
- :mod:`.sent_scripts`: code an agent sends (MCP ``verify_script``), run in a named working directory.
- :mod:`.export`: verified snippets written out as scripts with a manifest and a pytest runner.
- :mod:`.hints`: the knowledge sections that explain a failed or timed-out verdict.
"""
