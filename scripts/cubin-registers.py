#!/usr/bin/env python3
"""Registers, stack frame (spills) and static shared memory of each kernel in CUBIN files, read off the ELF: the
`.nv.info` section's EIATTR_REGCOUNT and EIATTR_FRAME_SIZE entries (symbol index, value), and each
`.nv.shared.<name>` section's size. No CUDA tools needed.

    WARPMAP_COMPILE_ONLY=dycuckoo WARPMAP_COMPILE_DUMP=/tmp/cubins \
        cargo test --release --test kernels_compile every_kernel_compiles_for_sm90
    scripts/cubin-registers.py /tmp/cubins/*.cubin [--grep erase]
"""
import struct
import sys


def kernels(path):
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SystemExit(f"{path}: not a 64-bit ELF")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = secs[shstrndx]
    def name(off):
        start = strtab[4] + off
        return data[start:data.index(b"\0", start)].decode()
    shared = {}
    for s in secs:
        n = name(s[0])
        if n.startswith(".nv.shared."):
            shared[n[11:]] = s[5]
    # The symbol table (sh_type 2) and its strings (sh_link).
    symtab = next(s for s in secs if s[1] == 2)
    symstr = secs[symtab[6]]
    def sym_name(i):
        st_name, = struct.unpack_from("<I", data, symtab[4] + i * 24)
        start = symstr[4] + st_name
        return data[start:data.index(b"\0", start)].decode()
    regs = {}
    for s in secs:
        if name(s[0]) != ".nv.info":
            continue
        at, end = s[4], s[4] + s[5]
        while at + 4 <= end:
            fmt, attr, size = struct.unpack_from("<BBH", data, at)
            if fmt == 0x04 and attr in (0x2F, 0x11):  # EIFMT_SVAL: EIATTR_REGCOUNT, _FRAME_SIZE
                sym, count = struct.unpack_from("<II", data, at + 4)
                regs.setdefault(sym_name(sym), [0, 0])[0 if attr == 0x2F else 1] = count
            at += 4 + (size if fmt == 0x04 else 0)
    return {k: (r, f, shared.get(k, 0)) for k, (r, f) in regs.items()}


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    grep = None
    if "--grep" in sys.argv:
        grep = sys.argv[sys.argv.index("--grep") + 1]
        args.remove(grep)
    for path in args:
        print(path)
        for k, (r, frame, sh) in sorted(kernels(path).items()):
            if not k.startswith("$") and (grep is None or grep in k):
                print(f"  {k:40s} {r:4d} registers, {frame:5d} B frame (spills, local arrays), {sh:6d} B static shared")


if __name__ == "__main__":
    main()
