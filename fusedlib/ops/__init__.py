"""Fused small ops (Triton): the elementwise and row-reduction work between a decoder
layer's GEMMs, a few kernels where plain PyTorch launches dozens.

`Qwen2Model.fused_ops` switches the model between these and its PyTorch reference path;
`Qwen2Model.gate_up_silu` adds, on the fused path, the GEMMs of `gemm.py` for
decode-sized batches: gate_up with the activation in its epilogue, qkv, o_proj and down
split over K and summed by the kernel that reads them.
Each op states its arithmetic in the same order as the reference (fp32 statistics for the
norm, values rounded to the model dtype where the reference rounds them), so the two paths
agree to rounding and both match transformers in fp32.
"""
from .activation import silu_mul
from .gemm import DOWN_SPLIT_K, O_PROJ_SPLIT_K, QKV_SPLIT_K, gate_up_silu, linear
from .norm import add_rms_norm, rms_norm_rows
from .rotary import rotary_to_cache
