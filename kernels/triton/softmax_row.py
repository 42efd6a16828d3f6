# Row softmax, naive but correct: one program per row, the whole row in one block (BLOCK >= COLS), max and sum in
# fp32, no online normalisation and no several rows per program.
import triton
import triton.language as tl


@triton.jit
def softmax_row(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(y_ptr + row * n_cols + offs, num / tl.sum(num, axis=0), mask=mask)
