"""``fsdp-skill plan``: each rank's peak memory by category for a model at any world size, planned on a CPU.

- :mod:`.spec`: what to plan (the built-in transformer's sizes, one run's :class:`~.spec.Setting`), parsed and checked.
- :mod:`.request`: the one request model every door takes (:class:`~.request.PlanRequest` over HTTP and MCP,
  :class:`~.request.LocalPlanRequest` from the CLI), with its settings and its ``fsdp-skill plan`` command line.
- :mod:`.report`: :func:`~.report.plan_request` / :func:`~.report.plan_memory` -> :class:`~.models.PlanReport`
  (runs the child, adds verdicts).
- :mod:`.runner` starts :mod:`.child` (a file run under the target interpreter; it loads :mod:`.transformer`).
- :mod:`.advice`: fit verdicts, estimates of what is not measured, suggestions with their sections.
- :mod:`.hint`: a ready plan command for a question that asks whether a run fits ("will 70B fit on 8 GPUs?").

Importing this package imports nothing: ``ask`` reaches :mod:`.hint` on every question.
"""
