/* cutune — export: C++ text shared by the exported drivers' host parts (the conv driver, export_driver.c, and the
 * GEMM driver, export_gemm_driver.c), as a macro so that each host text stays one string literal. */
#ifndef CUTUNE_POST_EXPORT_TEXT_INT_H
#define CUTUNE_POST_EXPORT_TEXT_INT_H

/* float <-> fp16 / bf16 bits as cutune rounds (to_f16, from_f16, to_bf16, from_bf16), round_to(dt, x), pack(dt, x,
 * bytes) into the storage type and unpack(dt, p, n, x) from it. Needs enum { DT_FP32, DT_TF32, DT_FP16, DT_BF16 },
 * elem_bytes(dt), <cstdint>, <cstring> and <vector> before it. */
#define CUT_EXPORT_DTYPE_TEXT \
    "// float <-> fp16 / bf16 bits, rounding to nearest even (cutune's cut_f32_to_f16 and cut_f32_to_bf16).\n" \
    "static uint32_t f32_bits(float x)\n" \
    "{\n" \
    "    uint32_t u;\n" \
    "    std::memcpy(&u, &x, sizeof u);\n" \
    "    return u;\n" \
    "}\n" \
    "static float bits_f32(uint32_t u)\n" \
    "{\n" \
    "    float x;\n" \
    "    std::memcpy(&x, &u, sizeof x);\n" \
    "    return x;\n" \
    "}\n" \
    "static uint32_t shift_rne(uint32_t m, unsigned s)\n" \
    "{\n" \
    "    if (s > 31)\n" \
    "        return 0;\n" \
    "    const uint32_t kept = m >> s, rest = m & ((1u << s) - 1u), half = 1u << (s - 1);\n" \
    "    return kept + (rest > half || (rest == half && (kept & 1u)));\n" \
    "}\n" \
    "static uint16_t to_f16(float x)\n" \
    "{\n" \
    "    const uint32_t u = f32_bits(x), sign = (u >> 16) & 0x8000u, exp = (u >> 23) & 0xffu, man = u & 0x7fffffu;\n" \
    "    if (exp == 0xffu)\n" \
    "        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0u));\n" \
    "    const int e = (int)exp - 127 + 15;\n" \
    "    if (e >= 31)\n" \
    "        return (uint16_t)(sign | 0x7c00u);\n" \
    "    if (e <= 0) // a subnormal fp16, or zero\n" \
    "        return exp == 0 || e < -10 ? (uint16_t)sign\n" \
    "                                   : (uint16_t)(sign | shift_rne(man | 0x800000u, (unsigned)(14 - e)));\n" \
    "    const uint32_t r = shift_rne(((uint32_t)e << 23) | man, 13);\n" \
    "    return (uint16_t)(sign | (r >= 0x7c00u ? 0x7c00u : r));\n" \
    "}\n" \
    "static float from_f16(uint16_t h)\n" \
    "{\n" \
    "    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;\n" \
    "    if (exp == 0x1fu)\n" \
    "        return bits_f32(sign | 0x7f800000u | (man << 13));\n" \
    "    if (exp == 0)\n" \
    "        return (sign ? -1.0f : 1.0f) * (float)man * 0x1p-24f;\n" \
    "    return bits_f32(sign | ((exp - 15 + 127) << 23) | (man << 13));\n" \
    "}\n" \
    "static uint16_t to_bf16(float x)\n" \
    "{\n" \
    "    const uint32_t u = f32_bits(x);\n" \
    "    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu))\n" \
    "        return (uint16_t)((u >> 16) | 0x40u);\n" \
    "    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n" \
    "}\n" \
    "static float from_bf16(uint16_t h) { return bits_f32((uint32_t)h << 16); }\n" \
    "\n" \
    "// x rounded to the dtype in place: fp16/bf16 to nearest even; fp32 and tf32 unchanged (tf32 data is stored as\n" \
    "// fp32 and rounded inside the tensor cores, which the tolerance covers).\n" \
    "static void round_to(int dt, std::vector<float> &x)\n" \
    "{\n" \
    "    for (float &v : x)\n" \
    "        v = dt == DT_FP16 ? from_f16(to_f16(v)) : dt == DT_BF16 ? from_bf16(to_bf16(v)) : v;\n" \
    "}\n" \
    "// x (rounded) in the dtype's storage type: 4-byte floats, or the 16-bit patterns of __half / __nv_bfloat16.\n" \
    "static void pack(int dt, const std::vector<float> &x, std::vector<unsigned char> &bytes)\n" \
    "{\n" \
    "    bytes.resize(x.size() * elem_bytes(dt));\n" \
    "    for (size_t i = 0; i < x.size(); i++) {\n" \
    "        if (elem_bytes(dt) == 4) {\n" \
    "            std::memcpy(&bytes[4 * i], &x[i], 4);\n" \
    "            continue;\n" \
    "        }\n" \
    "        const uint16_t h = dt == DT_FP16 ? to_f16(x[i]) : to_bf16(x[i]);\n" \
    "        std::memcpy(&bytes[2 * i], &h, 2);\n" \
    "    }\n" \
    "}\n" \
    "// n elements of the dtype's storage type as doubles.\n" \
    "static void unpack(int dt, const unsigned char *p, size_t n, std::vector<double> &x)\n" \
    "{\n" \
    "    x.resize(n);\n" \
    "    for (size_t i = 0; i < n; i++) {\n" \
    "        float f;\n" \
    "        uint16_t h;\n" \
    "        if (elem_bytes(dt) == 2) {\n" \
    "            std::memcpy(&h, p + 2 * i, 2);\n" \
    "            f = dt == DT_FP16 ? from_f16(h) : from_bf16(h);\n" \
    "        } else {\n" \
    "            std::memcpy(&f, p + 4 * i, 4);\n" \
    "        }\n" \
    "        x[i] = f;\n" \
    "    }\n" \
    "}\n"

#endif
