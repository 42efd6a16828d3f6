"""Builds the cutune_conv extension from one exported kernel (see cutune_conv_ext.cpp):

    CUTUNE_EXPORT=out/kernels CUTUNE_CASE=3 CUTUNE_KERNEL=1 python setup.py build_ext --inplace

The shape comes from the export's kernel_metadata.csv. No ninja needed (setuptools drives nvcc)."""
import csv
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

kdir = os.path.abspath(os.environ.get("CUTUNE_EXPORT", "kernels"))
case, kernel = int(os.environ.get("CUTUNE_CASE", "1")), int(os.environ.get("CUTUNE_KERNEL", "1"))
rows = [r for r in csv.DictReader(open(os.path.join(kdir, "kernel_metadata.csv")))
        if int(r["case"]) == case and int(r["kernel_id"]) == kernel]
if len(rows) != 1:
    raise SystemExit(f"{kdir}/kernel_metadata.csv has no case {case} kernel {kernel}")
shape = ",".join(rows[0][c] for c in "n h w co ci kh kw stride pad".split())
defs = [f"-DCUTUNE_LAUNCH=launch_case{case}_k{kernel}", f"-DCUTUNE_SHAPE={shape}"]
arch = os.environ.get("CUTUNE_ARCH", "90")
setup(
    name="cutune_conv",
    ext_modules=[CUDAExtension(
        "cutune_conv",
        ["cutune_conv_ext.cpp", os.path.join(kdir, f"case{case}", f"kernel{kernel}.cu"),
         os.path.join(kdir, "cutune_runtime.cu")],
        include_dirs=[kdir],
        extra_compile_args={"cxx": ["-O2"] + defs,
                            "nvcc": ["-O3", "-std=c++17", f"-gencode=arch=compute_{arch},code=sm_{arch}"]})],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=False)},
)
