// L2 cache hints (sm_80+). Bulk batches stream keys, values and results through L2 once, and a
// table's windows are read at random with no reuse; a small structure that many operations
// consult (WarpDrive's overflow filter) is worth keeping in L2 against that stream.

// A cache policy that makes the lines it touches the last to be evicted from L2.
__device__ __forceinline__ u64 wm_l2_keep_policy() {
  u64 policy;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));  // pure: may be hoisted
  return policy;
}

// Loads a word from L2 (not L1: other SMs may change it in the same launch) under `policy`.
__device__ __forceinline__ u32 wm_ldcg_hint(const u32* addr, u64 policy) {
  u32 v;
  asm volatile("ld.global.cg.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(v) : "l"(addr), "l"(policy));
  return v;
}

// Loads a word (through L1) under `policy`.
__device__ __forceinline__ u32 wm_ld_hint(const u32* addr, u64 policy) {
  u32 v;
  asm volatile("ld.global.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(v) : "l"(addr), "l"(policy));
  return v;
}

// *addr |= v at L2 under `policy`, without waiting for the result.
__device__ __forceinline__ void wm_red_or_hint(u32* addr, u32 v, u64 policy) {
  asm volatile("red.global.or.L2::cache_hint.b32 [%0], %1, %2;" ::"l"(addr), "r"(v), "l"(policy) : "memory");
}
