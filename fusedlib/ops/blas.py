"""GEMMs of more than SMALL_M_MAX rows on the cuBLASLt algorithm measured fastest for their shape.

A mixed step multiplies 544 rows (a 512-token chunk beside 32 decode rows, as its graph pads
them) by every weight. cuBLAS picks one kernel per shape by heuristic and runs none to check,
and at this row count its tiles can leave a partial last wave: qkv's 64x144 tiles make 135
programs for 132 SMs. cuBLASLt's heuristic lists several algorithms for a shape (other tiles,
split-K, clusters); TensorRT-LLM's GEMM plugin times them per shape when it builds an engine,
and `linear` does the same at the first call of a shape outside graph capture (a graph warms
every piece eagerly before capturing it): cuBLAS's default and each listed algorithm, timed
round-robin from an L2 that holds none of the operands (in a step the weight comes from HBM),
and the fastest kept if it beats the default by MIN_GAIN. A shape first met during capture,
any CPU tensor and any GPU without cuBLASLt keep F.linear.

cuBLASLt is column-major: out[M, N] = x[M, K] @ W[N, K]^T, all row-major, is the column-major
out^T[N, M] = (W as [K, N])^T (x as [K, M]), so A is the weight, transposed, and B the batch.
"""
from __future__ import annotations

import ctypes
import glob
import os
import statistics
from dataclasses import dataclass

import torch
import torch.nn.functional as F

CANDIDATES = 16  # algorithms asked of the heuristic per shape
MIN_GAIN = 0.02  # a listed algorithm replaces cuBLAS's default only this much faster
ROUNDS = 12  # timed calls per candidate, round-robin over the candidates
WORKSPACE_BYTES = 32 << 20  # cuBLAS's own recommendation for Hopper
FLUSH_BYTES = 256 << 20  # written before each timed call: more than any L2 (H200: 60 MB)

_COMPUTE_32F, _R_32F, _R_16F, _R_16BF = 68, 0, 2, 14
_DESC_TRANSA, _DESC_TRANSB = 3, 4
_PREF_MAX_WORKSPACE = 1
_CONFIG_ATTRS = {"algo_id": 0, "tile_id": 1, "splitk": 2, "stages_id": 6, "cluster_id": 8}
_DTYPES = {torch.float16: _R_16F, torch.bfloat16: _R_16BF}


class _Algo(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64 * 8)]


class _Heuristic(ctypes.Structure):
    _fields_ = [("algo", _Algo), ("workspace_size", ctypes.c_size_t), ("state", ctypes.c_int),
                ("waves", ctypes.c_float), ("reserved", ctypes.c_int * 4)]


@dataclass
class Plan:
    """One shape's descriptors and its choice: `kept` None keeps cuBLAS's default (F.linear)."""
    key: tuple
    descs: tuple  # matmul, A (the weight), B (the batch), D (the output)
    candidates: list  # [(_Heuristic, {attribute: value})], in the heuristic's order
    kept: int | None = None  # index into candidates
    timings_us: dict | None = None  # "default" or a candidate's index -> median µs


class _CublasLt:
    """The library, one handle and one workspace per device, and a Plan per shape."""

    def __init__(self):
        self.lib = _load()
        self.handle = ctypes.c_void_p()
        _check(self.lib.cublasLtCreate(ctypes.byref(self.handle)), "cublasLtCreate")
        self.workspaces: dict[torch.device, torch.Tensor] = {}
        self.plans: dict[tuple, Plan] = {}

    def plan(self, x: torch.Tensor, weight: torch.Tensor) -> Plan:
        (m, k), n = x.shape, weight.shape[0]
        key = _key(x, weight)
        if key not in self.plans:
            lib, dt = self.lib, _DTYPES[x.dtype]
            matmul, a, b, d = (ctypes.c_void_p() for _ in range(4))
            _check(lib.cublasLtMatmulDescCreate(ctypes.byref(matmul), _COMPUTE_32F, _R_32F), "MatmulDescCreate")
            for attr, op in ((_DESC_TRANSA, 1), (_DESC_TRANSB, 0)):  # T for the weight, N for the batch
                value = ctypes.c_int32(op)
                _check(lib.cublasLtMatmulDescSetAttribute(matmul, attr, ctypes.byref(value), 4), "DescSetAttribute")
            for desc, (rows, cols, ld) in ((a, (k, n, weight.stride(0))), (b, (k, m, x.stride(0))), (d, (n, m, n))):
                _check(lib.cublasLtMatrixLayoutCreate(ctypes.byref(desc), dt, rows, cols, ld), "MatrixLayoutCreate")
            pref = ctypes.c_void_p()
            _check(lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "PreferenceCreate")
            ws = ctypes.c_uint64(WORKSPACE_BYTES)
            _check(lib.cublasLtMatmulPreferenceSetAttribute(pref, _PREF_MAX_WORKSPACE, ctypes.byref(ws), 8),
                   "PreferenceSetAttribute")
            found, count = (_Heuristic * CANDIDATES)(), ctypes.c_int()
            _check(lib.cublasLtMatmulAlgoGetHeuristic(self.handle, matmul, a, b, d, d, pref, CANDIDATES, found,
                                                      ctypes.byref(count)), "AlgoGetHeuristic")
            lib.cublasLtMatmulPreferenceDestroy(pref)
            listed = [found[i] for i in range(count.value) if found[i].state == 0]
            self.plans[key] = Plan(key, (matmul, a, b, d), [(h, {**self._describe(h.algo), "waves": round(h.waves, 3), "workspace_bytes": h.workspace_size})
                                                             for h in listed])
        return self.plans[key]

    def _describe(self, algo: _Algo) -> dict:
        out = {}
        for name, attr in _CONFIG_ATTRS.items():
            value, written = ctypes.c_uint32(), ctypes.c_size_t()
            status = self.lib.cublasLtMatmulAlgoConfigGetAttribute(ctypes.byref(algo), attr, ctypes.byref(value), 4,
                                                                   ctypes.byref(written))
            out[name] = value.value if status == 0 else None
        return out

    def matmul(self, plan: Plan, algo: _Algo, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        out = torch.empty(x.shape[0], weight.shape[0], dtype=x.dtype, device=x.device)
        if x.device not in self.workspaces:
            self.workspaces[x.device] = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=x.device)
        matmul, a, b, d = plan.descs
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        _check(self.lib.cublasLtMatmul(
            self.handle, matmul, ctypes.byref(one), ctypes.c_void_p(weight.data_ptr()), a,
            ctypes.c_void_p(x.data_ptr()), b, ctypes.byref(zero), ctypes.c_void_p(out.data_ptr()), d,
            ctypes.c_void_p(out.data_ptr()), d, ctypes.byref(algo),
            ctypes.c_void_p(self.workspaces[x.device].data_ptr()), ctypes.c_size_t(WORKSPACE_BYTES),
            ctypes.c_void_p(torch.cuda.current_stream(x.device).cuda_stream)), "cublasLtMatmul")
        return out

    def choose(self, plan: Plan, x: torch.Tensor, weight: torch.Tensor) -> None:
        """Time cuBLAS's default and every listed algorithm on (x, weight), round-robin, each
        call after a write of FLUSH_BYTES; keep the fastest if it gains MIN_GAIN."""
        calls = {"default": lambda: F.linear(x, weight)}
        calls.update({i: (lambda algo=h.algo: self.matmul(plan, algo, x, weight))
                      for i, (h, _) in enumerate(plan.candidates)})
        flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=x.device)  # freed after choosing
        times = {name: [] for name in calls}
        for round_ in range(ROUNDS + 1):  # the first round warms up and is dropped
            for name, call in calls.items():
                flush.zero_()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                call()
                end.record()
                end.synchronize()
                if round_:
                    times[name].append(start.elapsed_time(end) * 1e3)
        plan.timings_us = {name: statistics.median(t) for name, t in times.items()}
        plan.kept = pick(plan.timings_us)


_LT: _CublasLt | None = None
_UNAVAILABLE = False


def lt() -> _CublasLt | None:
    """The process's cuBLASLt, or None where it cannot be loaded."""
    global _LT, _UNAVAILABLE
    if _LT is None and not _UNAVAILABLE:
        try:
            _LT = _CublasLt()
        except OSError:
            _UNAVAILABLE = True
    return _LT


def linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x @ weight.T: on the algorithm chosen for this shape (see the module's docstring), else F.linear."""
    if not x.is_cuda or x.dtype not in _DTYPES or x.stride(-1) != 1 or weight.stride(-1) != 1 \
            or x.shape[0] == 0 or (lib := lt()) is None:
        return F.linear(x, weight)
    capturing = torch.cuda.is_current_stream_capturing()
    plan = lib.plans.get(_key(x, weight)) if capturing else lib.plan(x, weight)
    if plan is None:
        return F.linear(x, weight)
    if plan.timings_us is None and not capturing:
        lib.choose(plan, x, weight)
    return F.linear(x, weight) if plan.kept is None else lib.matmul(plan, plan.candidates[plan.kept][0].algo,
                                                                     x, weight)


def pick(timings_us: dict) -> int | None:
    """The candidate to keep from median times ("default": cuBLAS's own, ints: the listed
    algorithms): the fastest, if it beats the default by MIN_GAIN; else None."""
    listed = {name: t for name, t in timings_us.items() if name != "default"}
    best = min(listed, key=listed.get, default=None)
    return best if best is not None and listed[best] < (1 - MIN_GAIN) * timings_us["default"] else None


def choices() -> list[dict]:
    """Every shape this process has planned: its candidates' timings and the one kept."""
    lib = _LT
    return [] if lib is None else [
        {"m": plan.key[0], "n": plan.key[1], "k": plan.key[2], "candidates": len(plan.candidates),
         "default_us": (plan.timings_us or {}).get("default"),
         "kept": plan.kept, "kept_us": None if plan.kept is None else plan.timings_us[plan.kept],
         **({} if plan.kept is None else plan.candidates[plan.kept][1])}
        for plan in lib.plans.values()]


def _key(x: torch.Tensor, weight: torch.Tensor) -> tuple:
    return (x.shape[0], weight.shape[0], x.shape[1], x.stride(0), weight.stride(0), x.dtype, x.device)


def _load() -> ctypes.CDLL:
    """cuBLASLt as PyTorch loaded it (its soname matches the loaded library), else from the
    nvidia wheels beside torch."""
    torch.cuda.current_blas_handle()  # makes PyTorch load cuBLAS (and with it cuBLASLt)
    names = ["libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"]
    site = os.path.dirname(os.path.dirname(torch.__file__))
    names += sorted(glob.glob(os.path.join(site, "nvidia", "**", "libcublasLt.so*"), recursive=True))
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        ptr, i32, size = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
        for fn, args in (("cublasLtCreate", [ptr]), ("cublasLtMatmulDescCreate", [ptr, i32, i32]),
                         ("cublasLtMatmulDescSetAttribute", [ptr, i32, ptr, size]),
                         ("cublasLtMatrixLayoutCreate", [ptr, i32, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64]),
                         ("cublasLtMatmulPreferenceCreate", [ptr]),
                         ("cublasLtMatmulPreferenceSetAttribute", [ptr, i32, ptr, size]),
                         ("cublasLtMatmulPreferenceDestroy", [ptr]),
                         ("cublasLtMatmulAlgoGetHeuristic", [ptr] * 7 + [i32, ptr, ptr]),
                         ("cublasLtMatmulAlgoConfigGetAttribute", [ptr, i32, ptr, size, ptr]),
                         ("cublasLtMatmul", [ptr] * 14 + [size, ptr])):
            getattr(lib, fn).argtypes, getattr(lib, fn).restype = args, i32
        return lib
    raise OSError("cuBLASLt not found beside torch")


def _check(status: int, call: str) -> None:
    if status != 0:
        raise RuntimeError(f"cuBLASLt {call} failed with status {status}")
