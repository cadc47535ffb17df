"""fusedlib: a small LLM serving engine (Qwen2, paged KV, chunked vs fused steps)."""
# Names load on first use, not at `import fusedlib`: importing the engine defines its Triton
# kernels, and Triton decides then whether they run compiled or in its CPU interpreter
# (TRITON_INTERPRET), so the harness must be able to choose first.
from importlib import import_module

_EXPORTS = {"Engine": "engine", "RequestsFailed": "engine", "EngineConfig": "config", "PARTS": "config",
            "load_model": "weights"}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'fusedlib' has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
