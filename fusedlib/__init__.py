"""fusedlib: a small LLM serving engine (Qwen2, paged KV, chunked vs fused steps)."""
from .config import EngineConfig
from .engine import Engine, RequestsFailed
from .weights import load_model

__all__ = ["Engine", "EngineConfig", "RequestsFailed", "load_model"]
