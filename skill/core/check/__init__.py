"""``check``: find FSDP / torch.distributed mistakes in a training script statically, each linked to the
knowledge section that explains it and the verified snippet that shows the fix.

The code is parsed with :mod:`ast`, never imported or run, and torch is never imported.  This package
re-exports the public names (each loads its module on first use); what lives where:

- :mod:`.engine`: :func:`check_source` (one source text; ``# noqa`` applies) and :func:`check_tree` (an already
  parsed module, what a flake8 plugin gets). A file that does not parse is a finding (``FSD000``), so is a
  file the checker itself fails on.
- :mod:`.files`: :func:`check_paths` (files, directories, ``'-'`` for standard input; bad paths raise
  :class:`fsdp_skill.errors.InvalidArgument`).
- :mod:`.report`: :func:`check_code` (code a caller sent over HTTP / MCP, at most :data:`MAX_CHECK_CHARS`
  characters) and the :class:`CheckReport` with counts.
- :mod:`.noqa`: ``# noqa`` / ``# noqa: FSD003,FSD011`` comments; :mod:`.selection`: ``select`` / ``ignore``
  by code prefix (:func:`validate_codes`).
- :mod:`.rules`: the rule table :data:`RULES` (README's table mirrors it) and :data:`RULE_RANGE`; :mod:`.finders`,
  :mod:`.calls_rules` (framework saves, device ordinals, FSDP1 ``generate``), :mod:`.divergence` (rank-divergent control
  flow, DDP misuse), :mod:`.flow_rules` (the same in frameworks' and training loops' shapes, FSD054-FSD060), :mod:`.data_rules` (what each rank trains on, reductions, the step around the wrapper: FSD061-FSD068; the rank given to ``init_process_group``: FSD073), :mod:`.checkpoint_rules` (checkpoint save / load
  mistakes, FSD069-FSD072), :mod:`.setup_rules` (how a script sets the model up: a hard-coded CUDA device, weights
  loaded on some ranks then sharded without a broadcast, CPU offload of a module moved to the GPU: FSD074-FSD076;
  weights drawn from a per-rank seed, then replicated without a broadcast: FSD084; DDP given device_ids for a
  module on the CPU: FSD085),
  :mod:`.step_rules` (what the ranks do differently step to step, FSD077-FSD080), :mod:`.metric_rules` (metrics and
  results of this rank's share of the data: FSD086-FSD088), :mod:`.accelerate_rules` (Accelerate contexts around the
  wrong code: FSD089, FSD090) and
  :mod:`.rank_conditional`: the code that finds each rule's mistake (:data:`FINDERS` maps code -> finder);
  :mod:`.facts`: what the finders know about one parsed file; :mod:`.paths`: which files a call writes or reads,
  directly or through a function of the file given the path (FSD055); :mod:`.frozen`: which modules are partly
  frozen where FSDP1 wraps them (FSD031); :mod:`.models`: :class:`Rule`,
  :class:`Finding`, :class:`CheckReport`.

A new rule is a :class:`Rule` in :mod:`.rules` (the next code: :data:`RULE_RANGE` follows), a finder registered
with ``@finder(code)`` in :mod:`.finders` (a rank-conditional one: a case of ``collective_kind`` in
:mod:`.rank_conditional`), its two fixtures ``tests/data/check/FSDxxx_bad.py`` / ``_good.py`` and
its row of README's rule table (``tests/test_check_rules.py`` holds each to the others).
The Python code pasted in a question (``ask``) is found by :mod:`fsdp_skill.core.code_blocks`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fsdp_skill.core.check.engine import check_source, check_tree
    from fsdp_skill.core.check.files import check_paths
    from fsdp_skill.core.check.finders import FINDERS
    from fsdp_skill.core.check.models import CheckReport, Finding, Rule
    from fsdp_skill.core.check.report import MAX_CHECK_CHARS, check_code, report
    from fsdp_skill.core.check.rules import NOT_ANALYSED, RULE_RANGE, RULES
    from fsdp_skill.core.check.selection import validate_codes

# Where each public name lives.  Importing the package imports none of them: a name loads its module on first
# access (PEP 562), so ``fsdp_skill.core.check.models`` (the records an answer holds) does not bring the checker
# onto the path of an ask without code.
_HOME = {
    "check_source": "engine",
    "check_tree": "engine",
    "check_paths": "files",
    "FINDERS": "finders",
    "CheckReport": "models",
    "Finding": "models",
    "Rule": "models",
    "MAX_CHECK_CHARS": "report",
    "check_code": "report",
    "report": "report",
    "NOT_ANALYSED": "rules",
    "RULE_RANGE": "rules",
    "RULES": "rules",
    "validate_codes": "selection",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first access; AttributeError for any other."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later accesses skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "CheckReport",
    "FINDERS",
    "Finding",
    "MAX_CHECK_CHARS",
    "NOT_ANALYSED",
    "RULE_RANGE",
    "RULES",
    "Rule",
    "check_code",
    "check_paths",
    "check_source",
    "check_tree",
    "report",
    "validate_codes",
]
