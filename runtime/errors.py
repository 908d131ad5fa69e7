"""Errors of the verification harness (see fsdp_skill.errors for the whole tree)."""


class SkillError(Exception):
    """Base of every error fsdp-skill raises on purpose."""


class HarnessError(SkillError):
    """A verification run could not happen at all (e.g. the warm launcher failed to start).

    A script that fails is not an error: it is a ``Verdict`` with ``status="failed"``.
    """
