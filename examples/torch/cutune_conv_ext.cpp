// A PyTorch extension around one kernel exported by `cutune export`: conv2d(x, w) for the shape it was tuned for,
// on PyTorch's current CUDA stream. The launcher comes from the export's cutune_kernels.h; setup.py compiles the
// kernel's .cu and cutune_runtime.cu beside this file and names the launcher and the shape with -D flags:
//   CUTUNE_LAUNCH   the launcher, e.g. launch_case3_k1
//   CUTUNE_SHAPE    N,H,W,CO,CI,KH,KW,stride,pad of that case (kernel_metadata.csv)
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "cutune_kernels.h"

namespace {
constexpr int kShape[9] = {CUTUNE_SHAPE};

torch::Tensor conv2d(const torch::Tensor &x, const torch::Tensor &w)
{
    const int n = kShape[0], h = kShape[1], wd = kShape[2], co = kShape[3], ci = kShape[4], kh = kShape[5],
              kw = kShape[6], s = kShape[7], p = kShape[8];
    TORCH_CHECK(x.is_cuda() && w.is_cuda(), "cutune conv2d: x and w must be CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat && w.scalar_type() == torch::kFloat,
                "cutune conv2d: the kernel is fp32");
    TORCH_CHECK(x.sizes() == torch::IntArrayRef({n, ci, h, wd}), "cutune conv2d: x must be [", n, ", ", ci, ", ", h,
                ", ", wd, "], the shape the kernel was tuned for; got ", x.sizes());
    TORCH_CHECK(w.sizes() == torch::IntArrayRef({co, ci, kh, kw}), "cutune conv2d: w must be [", co, ", ", ci, ", ",
                kh, ", ", kw, "]; got ", w.sizes());
    const c10::cuda::CUDAGuard guard(x.device());
    const torch::Tensor xc = x.contiguous(), wc = w.contiguous(); // NCHW, dense
    const int oh = (h + 2 * p - kh) / s + 1, ow = (wd + 2 * p - kw) / s + 1;
    torch::Tensor y = torch::empty({n, co, oh, ow}, x.options());
    const int err = CUTUNE_LAUNCH(xc.data_ptr<float>(), wc.data_ptr<float>(), y.data_ptr<float>(),
                                  at::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(err == 0, "cutune conv2d: launch failed: ", cudaGetErrorString(static_cast<cudaError_t>(err)));
    return y;
}
} // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.def("conv2d", &conv2d, "cutune's tuned fp32 NCHW conv2d for one shape (x, w) -> y");
}
