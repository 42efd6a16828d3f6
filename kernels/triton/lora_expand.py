# LoRA expand (seed 002's lora_expand): y = base + x @ w, x the rank-R activations (M x R), w the LoRA B matrix
# (R x N). Naive but correct: one program per BM x BN tile, R walked in BR steps, every load masked, fp32 throughout.
import triton
import triton.language as tl


@triton.jit
def lora_expand(x_ptr, w_ptr, base_ptr, y_ptr, M, N, R, BM: tl.constexpr, BN: tl.constexpr, BR: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rr = tl.arange(0, BR)
    out = (rm[:, None] < M) & (rn[None, :] < N)
    acc = tl.load(base_ptr + rm[:, None] * N + rn[None, :], mask=out, other=0.0)
    for r0 in range(0, R, BR):
        kr = r0 + rr
        x = tl.load(x_ptr + rm[:, None] * R + kr[None, :], mask=(rm[:, None] < M) & (kr[None, :] < R), other=0.0)
        w = tl.load(w_ptr + kr[:, None] * N + rn[None, :], mask=(kr[:, None] < R) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, w, input_precision="ieee")
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=out)
