/* cutune — what a cubin says about its kernels: the register count the linker recorded in the ELF's .nv.info
 * section (attribute EIATTR_REGCOUNT), the ground truth behind ptxas's "Used N registers" line.
 *
 * Why: NVRTC's verbose ptxas report sometimes lacks that line when many programs compile at once (on the 16-core
 * GPU hosts: 82 of 560 trials of the H100 seed-001 run, 709 of 8,640 of the H200 ResNet-18 run, all of them valid
 * kernels), and the cost model then sees -1 for a feature it leans on. The cubin cannot disagree with itself.
 *
 * Layout (little-endian ELF64, as NVRTC writes for every sm_XX): section headers at e_shoff, names in section
 * e_shstrndx. A ".nv.info" section is a list of attributes {u8 format, u8 attribute, u16 value-or-size}; format 4
 * (EIFMT_SVAL) is followed by `size` bytes of value, the other formats carry their value in the u16. EIATTR_REGCOUNT
 * (0x2f, format 4) holds {u32 function symbol, u32 registers}. Every read is bounds-checked: a truncated or foreign
 * image gives -1, never a read past its end. */
#include "cutune/compile.h"

#include <stdint.h>
#include <string.h>

#define EIFMT_SVAL 4
#define EIATTR_REGCOUNT 0x2f

static uint64_t rd(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* 1 if [off, off + len) lies inside an image of n bytes. */
static int inside(uint64_t off, uint64_t len, size_t n) { return off <= n && len <= n - off; }

/* The largest register count among the attributes of one .nv.info section, or -1. */
static int section_regs(const unsigned char *s, uint64_t len)
{
    int best = -1;
    uint64_t off = 0;
    while (off + 4 <= len) {
        const unsigned fmt = s[off], attr = s[off + 1];
        const uint64_t v = rd(s + off + 2, 2);
        off += 4;
        if (fmt != EIFMT_SVAL)
            continue;
        if (v > len - off)
            return -1; /* an attribute running past its section: not a cubin we understand */
        if (attr == EIATTR_REGCOUNT && v == 8) {
            const uint64_t regs = rd(s + off + 4, 4);
            if (regs <= 65535 && (int)regs > best)
                best = (int)regs;
        }
        off += v;
    }
    return best;
}

/* The section table of an ELF64 little-endian image: where it is, and the section-name strings. 0, or -1 when the
 * image is not one or its tables run past it. */
typedef struct elf_tables {
    uint64_t shoff, shentsize, shnum, str_off, str_len;
} elf_tables;

static int elf_open(const unsigned char *d, size_t n, elf_tables *t)
{
    /* ELF64 little-endian: magic, class 2, data 1. */
    if (!d || n < 64 || memcmp(d, "\x7f" "ELF", 4) != 0 || d[4] != 2 || d[5] != 1)
        return -1;
    t->shoff = rd(d + 0x28, 8), t->shentsize = rd(d + 0x3a, 2), t->shnum = rd(d + 0x3c, 2);
    const uint64_t shstrndx = rd(d + 0x3e, 2);
    if (t->shentsize < 64 || shstrndx >= t->shnum || !inside(t->shoff, t->shnum * t->shentsize, n))
        return -1;
    const unsigned char *strh = d + t->shoff + shstrndx * t->shentsize;
    t->str_off = rd(strh + 0x18, 8), t->str_len = rd(strh + 0x20, 8);
    return inside(t->str_off, t->str_len, n) ? 0 : -1;
}

int cut_cubin_regs(const void *image, size_t n)
{
    const unsigned char *d = image;
    elf_tables t;
    if (elf_open(d, n, &t) != 0)
        return -1;
    const uint64_t shoff = t.shoff, shentsize = t.shentsize, shnum = t.shnum, str_off = t.str_off,
                   str_len = t.str_len;
    int best = -1;
    for (uint64_t i = 0; i < shnum; i++) {
        const unsigned char *h = d + shoff + i * shentsize;
        const uint64_t name = rd(h, 4), off = rd(h + 0x18, 8), len = rd(h + 0x20, 8);
        static const char want[] = ".nv.info";
        if (name >= str_len || str_len - name < sizeof want || !inside(off, len, n))
            continue;
        if (memcmp(d + str_off + name, want, sizeof want) != 0) /* exactly ".nv.info", with its NUL */
            continue;
        const int r = section_regs(d + off, len);
        if (r > best)
            best = r;
    }
    return best;
}

/* ---- writable module variables ---- */

#define SHT_SYMTAB 2
#define STT_OBJECT 1

/* Section i's header fields. */
static const unsigned char *section(const unsigned char *d, uint64_t shoff, uint64_t shentsize, uint64_t i)
{
    return d + shoff + i * shentsize;
}

int cut_cubin_globals(const void *image, size_t n, cut_cubin_global_fn fn, void *ctx)
{
    const unsigned char *d = image;
    elf_tables t;
    if (elf_open(d, n, &t) != 0)
        return -1;
    const uint64_t shoff = t.shoff, shentsize = t.shentsize, shnum = t.shnum, shstr_off = t.str_off,
                   shstr_len = t.str_len;
    int count = 0;
    for (uint64_t i = 0; i < shnum; i++) {
        const unsigned char *h = section(d, shoff, shentsize, i);
        if (rd(h + 4, 4) != SHT_SYMTAB)
            continue;
        const uint64_t off = rd(h + 0x18, 8), len = rd(h + 0x20, 8), link = rd(h + 0x28, 4), ent = rd(h + 0x38, 8);
        if (ent < 24 || !inside(off, len, n) || link >= shnum)
            return -1;
        const unsigned char *sh = section(d, shoff, shentsize, link);
        const uint64_t str_off = rd(sh + 0x18, 8), str_len = rd(sh + 0x20, 8);
        if (!inside(str_off, str_len, n))
            return -1;
        for (uint64_t s = 0; s + ent <= len; s += ent) {
            const unsigned char *sym = d + off + s;
            const uint64_t name = rd(sym, 4), shndx = rd(sym + 6, 2), size = rd(sym + 16, 8);
            if ((sym[4] & 0xf) != STT_OBJECT || shndx == 0 || shndx >= shnum || size == 0 || name >= str_len)
                continue;
            /* the symbol's section must be global memory: ".nv.global" (zeroed) or ".nv.global.init" */
            const uint64_t sname = rd(section(d, shoff, shentsize, shndx), 4);
            static const char want[] = ".nv.global";
            if (sname >= shstr_len || shstr_len - sname < sizeof want ||
                memcmp(d + shstr_off + sname, want, sizeof want - 1) != 0)
                continue;
            const char *rest = (const char *)d + shstr_off + sname + sizeof want - 1;
            if (!memchr(rest, '\0', shstr_len - sname - (sizeof want - 1)) || (*rest && strcmp(rest, ".init") != 0))
                continue;
            /* the name must end inside its string table */
            const char *nm = (const char *)d + str_off + name;
            if (!memchr(nm, '\0', str_len - name))
                continue;
            if (fn)
                fn(ctx, nm, size);
            count++;
        }
    }
    return count;
}
