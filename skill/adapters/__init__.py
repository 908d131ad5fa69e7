"""Adapters over the core: CLI, HTTP, MCP and function-call tools. No adapter imports another."""
