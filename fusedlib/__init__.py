"""fusedlib: a small LLM serving engine (Qwen2, paged KV, chunked vs fused steps).

`from fusedlib import Engine, load_model`. The names load on first use rather than at
`import fusedlib`: importing the engine defines its Triton kernels, and Triton decides
at that moment whether they run compiled or in its CPU interpreter (TRITON_INTERPRET), so
the harness (`fusedlib.bench.use_interpreter_without_gpu`) must be able to choose first.
"""
from importlib import import_module

_EXPORTS = {"Engine": "engine", "RequestsFailed": "engine", "EngineConfig": "config", "load_model": "weights"}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'fusedlib' has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
