# GELU (tanh form) of a vector, naive but correct: one program per BLOCK elements, tanh through exp
# (tanh(u) = 1 - 2 / (exp(2u) + 1)), every load masked.
import triton
import triton.language as tl


@triton.jit
def gelu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    t = 1.0 - 2.0 / (tl.exp(2.0 * u) + 1.0)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + t), mask=mask)
