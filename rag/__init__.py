"""ragdoctor's pipeline: ingest -> chunk -> embed -> index (faiss) -> retrieve -> generate.

Importing it changes no environment variable: each entry point calls rag.offline.set_offline_env() itself (the
CLI at start, the Python API on its first call that runs work), so a host application that only imports ragdoctor,
or records its own engine's traces with it, keeps its own hub and telemetry settings."""
