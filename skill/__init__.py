"""fsdp-skill: expert guidance for PyTorch FSDP and torch.distributed.

The core is :func:`fsdp_skill.core.answer.ask` (question -> :class:`fsdp_skill.core.models.Answer`); the CLI, HTTP and MCP
adapters are thin layers over it. Importing this package never imports torch.
"""

__version__ = "0.1.0"
