"""fusedlib: a small LLM serving engine (Qwen2, paged KV, chunked vs fused steps)."""
from .engine import Engine
from .weights import load_model

__all__ = ["Engine", "load_model"]
