"""Knowledge snippets and scripts -> verdicts, through the runtime; what a verdict points at.

- :mod:`.snippets`: selecting snippets, the one path from a snippet to a runtime job, verdicts shared between callers.
- :mod:`.sent_scripts`: code an agent sends (MCP ``verify_script``), run in a named working directory.
- :mod:`.workdirs`: those working directories: the files a run left (listed, read back by MCP ``read_run_file``)
  and the session directory's size cap; no symbolic link in them is followed.
- :mod:`.export`: verified snippets written out as scripts with a manifest and a pytest runner.
- :mod:`.hints`: the knowledge sections that explain a failed or timed-out verdict.
"""
