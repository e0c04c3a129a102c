"""ragdoctor's pipeline: ingest -> chunk -> embed -> index (faiss) -> retrieve -> generate."""
from rag.offline import set_offline_env

set_offline_env()
