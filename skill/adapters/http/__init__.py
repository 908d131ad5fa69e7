"""HTTP adapter (FastAPI + uvicorn)."""
