// Multisplit: partitioning a batch of keys into `parts` parts by a function of their hash, with
// warp-aggregated per-part counters (one atomic per distinct part in a warp, lanes grouped by
// __match_any_sync). Used by kernels/multisplit.cu (the stand-alone pass of
// src/table/engine/multisplit.rs); the two-level cuckoo table (bucketing) and the sharded
// table (one part per GPU) use the same part function. Host twin: `PartFunction::part_of`.
//
// The warp functions are collective: all 32 lanes of the warp call them together (a lane with
// nothing to count passes WM_NO_PART), so they use the full mask and no __activemask().

// A lane that takes no part (past the end of the batch). No real part equals it: parts < 2^32 - 1.
#define WM_NO_PART 0xffffffffu

// Adds, for every lane of the warp, 1 to counts[part] (not for WM_NO_PART): the lanes of each
// distinct part elect their lowest lane, which adds the group's size.
__device__ __forceinline__ void wm_multisplit_count(u64* counts, u32 part) {
  const u32 lane = threadIdx.x & 31u;
  const u32 peers = __match_any_sync(0xffffffffu, part);
  if (part != WM_NO_PART && lane == (u32)(__ffs(peers) - 1)) {
    atomicAdd(counts + part, (u64)__popc(peers));
  }
}

// Claims one slot per lane in its part: returns cursor[part] as it was before the warp's lanes
// of that part claimed theirs, plus the lane's rank among them (lanes in lane order). One
// atomic per distinct part in the warp. The result of a WM_NO_PART lane is meaningless.
__device__ __forceinline__ u64 wm_multisplit_claim(u64* cursor, u32 part) {
  const u32 lane = threadIdx.x & 31u;
  const u32 peers = __match_any_sync(0xffffffffu, part);
  const int leader = __ffs(peers) - 1;
  u64 base = 0;
  if (part != WM_NO_PART && (int)lane == leader) base = atomicAdd(cursor + part, (u64)__popc(peers));
  // Every lane reads its own leader's base (one shuffle over the full warp).
  base = __shfl_sync(0xffffffffu, base, leader);
  return base + (u64)__popc(peers & ((1u << lane) - 1u));
}

// One block of BLOCK threads (all of them call it): store(i, in[0] + ... + in[i - 1]) for every
// i < n, a chunk of BLOCK values per round; returns the total to every thread. `store` may write
// over `in` (each thread reads its value before it stores).
template <typename T, u32 BLOCK, typename F>
__device__ __forceinline__ T wm_block_exclusive_scan(const T* in, u64 n, F store) {
  __shared__ T warp_sums[BLOCK / 32];
  __shared__ T carry;
  const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (u64 base = 0; base < n; base += BLOCK) {
    const u64 i = base + threadIdx.x;
    const T v = i < n ? in[i] : (T)0;
    T x = v;  // inclusive scan within the warp
#pragma unroll
    for (u32 d = 1; d < 32; d <<= 1) {
      const T y = __shfl_up_sync(0xffffffffu, x, d);
      if (lane >= d) x += y;
    }
    if (lane == 31u) warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) {  // inclusive scan of the warp totals
      T s = lane < BLOCK / 32 ? warp_sums[lane] : (T)0;
#pragma unroll
      for (u32 d = 1; d < 32; d <<= 1) {
        const T y = __shfl_up_sync(0xffffffffu, s, d);
        if (lane >= d) s += y;
      }
      if (lane < BLOCK / 32) warp_sums[lane] = s;
    }
    __syncthreads();
    const T excl = carry + (warp > 0 ? warp_sums[warp - 1] : (T)0) + x - v;
    if (i < n) store(i, excl);
    __syncthreads();  // every thread has read `carry`
    if (threadIdx.x == BLOCK - 1) carry = excl + v;
    __syncthreads();
  }
  return carry;
}

// The part of a key: the first 32-bit hash of the key under `seed` (wm_hash_pair's x for keys
// of 4 and 8 bytes, the low half of wm_hash_words for wider ones), mapped onto [0, parts) by
// its high bits ((h * parts) >> 32). Use a seed that no table the parts go into uses: with the
// same hash and seed, a part's keys would all fall into 1/parts of that table's windows.
#if defined(WM_KEY_BYTES)
template <int HASH>
__device__ __forceinline__ u32 wm_part_of(const wm_key& k, u64 seed, u32 parts) {
#if defined(WM_KEY_WIDE)
  const u32 h = (u32)wm_hash_words<HASH, WM_KEY_BYTES / 4>(k.w, seed);
#else
  const u32 h = wm_hash_pair<HASH, WM_KEY_BYTES>((u64)k, seed).x;
#endif
  return wm_map_to_range(h, parts);
}

// Calls f(i, part, key) for every index i of [0, n) with its key and part, and f(i, WM_NO_PART,
// {}) for lanes past the end: a grid-stride loop by whole warps, which every lane of a warp runs
// the same number of times, so f may call the warp-collective helpers above.
template <int HASH, typename F>
__device__ __forceinline__ void wm_multisplit_for_each(const wm_key* __restrict__ keys, u64 n,
                                                       u64 seed, u32 parts, F f) {
  const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
  const u32 lane = threadIdx.x & 31u;
  for (u64 base = warp * 32; base < n; base += warps * 32) {
    const u64 i = base + lane;
    u32 part = WM_NO_PART;
    wm_key k{};
    if (i < n) {
      k = keys[i];
      part = wm_part_of<HASH>(k, seed, parts);
    }
    f(i, part, k);
  }
}
#endif
