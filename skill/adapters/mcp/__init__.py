"""MCP adapter (the MCP SDK over stdio)."""
