"""Fused Triton ops between a layer's GEMMs, and its GEMMs where cuBLAS's leave time on the
table: the model's `fused_ops` path."""
# Each op states its arithmetic in the reference's order (fp32 norm statistics, rounding to the
# model dtype where the reference rounds), so both paths agree to rounding and match
# transformers in fp32.
from .gemm import (DOWN_SPLIT_K, O_PROJ_SPLIT_K, QKV_SPLIT_K, gate_up_silu, interleave_gate_up, linear, silu_mul,
                   split_gate_up)
from .norm import add_rms_norm, rms_norm_rows
from .rotary import rotary_to_cache
