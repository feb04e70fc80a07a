// Atomics beyond the built-in ones.

// 128-bit compare-and-swap (Hopper, sm_90+: PTX `atom.global.cas.b128`, PTX ISA 8.3).
// x is the low 8 bytes in memory, y the high 8. Returns the old contents; the swap happened iff
// they equal `cmp`. `addr` must be 16-byte aligned and in global memory.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define WM_HAS_CAS128 1
__device__ __forceinline__ ulonglong2 wm_cas128(ulonglong2* addr, ulonglong2 cmp, ulonglong2 val) {
  ulonglong2 old;
  asm volatile(
      "{\n\t"
      ".reg .b128 wm_cmp, wm_val, wm_old;\n\t"
      "mov.b128 wm_cmp, {%2, %3};\n\t"
      "mov.b128 wm_val, {%4, %5};\n\t"
      "atom.global.cas.b128 wm_old, [%6], wm_cmp, wm_val;\n\t"
      "mov.b128 {%0, %1}, wm_old;\n\t"
      "}"
      : "=l"(old.x), "=l"(old.y)
      : "l"(cmp.x), "l"(cmp.y), "l"(val.x), "l"(val.y), "l"(addr)
      : "memory");
  return old;
}
#else
#define WM_HAS_CAS128 0
#endif
