// Coalesced groups of G consecutive lanes of a warp (G in {1,2,4,8,16,32}), with raw warp
// intrinsics instead of <cooperative_groups.h> (which costs ~0.7 s of NVRTC time per module).
// Every lane of a group must reach each collective together; groups of one warp may diverge.

template <int G>
struct wm_group {
  u32 lane;      // lane index within the warp
  u32 rank;      // lane index within the group, 0..G-1
  u32 base;      // warp lane of the group's rank 0
  u32 mask;      // the group's lanes, as a warp lane mask

  __device__ __forceinline__ wm_group() {
    lane = threadIdx.x & 31u;
    rank = lane & (G - 1);
    base = lane - rank;
    mask = (G == 32) ? 0xffffffffu : (((1u << G) - 1u) << base);
  }
  // Bit r of the result is pred of group rank r.
  __device__ __forceinline__ u32 ballot(bool pred) const {
    return (__ballot_sync(mask, pred) & mask) >> base;
  }
  __device__ __forceinline__ bool any(bool pred) const { return ballot(pred) != 0u; }
  template <typename T>
  __device__ __forceinline__ T shfl(T v, u32 src_rank) const {
    return __shfl_sync(mask, v, base + src_rank);
  }
  __device__ __forceinline__ void sync() const { __syncwarp(mask); }
};

// Warp-aggregated atomic add of 1 for each calling lane whose pred is set; returns the slot
// of this lane (meaningful where pred). One atomic per warp instead of one per lane.
__device__ __forceinline__ u64 wm_aggregated_inc(u64* counter, bool pred) {
  u32 active = __activemask();
  u32 want = __ballot_sync(active, pred);
  u32 lane = threadIdx.x & 31u;
  u64 first = 0;
  if (want == 0u) return 0;
  int leader = __ffs(want) - 1;
  if ((int)lane == leader) first = atomicAdd(counter, (u64)__popc(want));
  first = __shfl_sync(active, first, leader);
  return first + __popc(want & ((1u << lane) - 1u));
}

// The index of the n-th (from 0) set bit of mask (which has more than n), by halving.
__device__ __forceinline__ u32 wm_nth_set_bit(u32 mask, u32 n) {
  u32 pos = 0;
#pragma unroll
  for (u32 w = 16; w != 0u; w >>= 1) {
    const u32 below = __popc((mask >> pos) & ((1u << w) - 1u));
    if (n >= below) {
      n -= below;
      pos += w;
    }
  }
  return pos;
}

#if defined(WM_BLOCK)
// Loads E consecutive 16-byte chunks from each calling lane's own `row` (16-byte aligned) into
// out[0..E). The lanes calling it together load their rows in E turns, E consecutive lanes per
// row, and hand each lane its row through shared memory: a row goes to L2 as one request of E / 2
// sectors instead of E requests of one sector (an insert in the order of its table's stretches
// is bound by L2 requests, not by DRAM: bench/NOTES.md, issue 18, session AB). Where only some
// lanes call it (the others done, or elsewhere: an insert's rescan), those lanes share the turns
// the same way, each row staged in its owner's slots (so that two groups of one warp never
// meet there). `coherent`: from L2 (not L1). Blocks of at most WM_BLOCK threads.
template <int E, bool coherent>
__device__ __forceinline__ void wm_warp_load_rows(const ulonglong2* row, ulonglong2 (&out)[E]) {
  static_assert(E == 1 || E == 2 || E == 4 || E == 8, "rows of 1, 2, 4 or 8 chunks of 16 bytes");
  const u32 active = __activemask();
  if (E == 1 || __popc(active) == 1) {
#pragma unroll
    for (int j = 0; j < E; j++) out[j] = coherent ? __ldcg(row + j) : row[j];
    return;
  }
  // A row's chunk p sits at p ^ swizzle in its owner's slots, so that neither the turns' stores
  // (8 consecutive chunks of 8 / E rows) nor the lanes' reads of their rows (chunk j of 8 rows)
  // meet twice in one of shared memory's 8 groups of 16-byte banks.
  __shared__ ulonglong2 stage[WM_BLOCK / 32][32 * E];
  ulonglong2* s = stage[threadIdx.x >> 5];
  const u32 lane = threadIdx.x & 31u;
  ulonglong2 v[E];
  if (active == 0xffffffffu) {
#pragma unroll
    for (int j = 0; j < E; j++) {  // turn j: chunk e = 32 j + lane, chunk e % E of row e / E
      const u32 e = (u32)j * 32u + lane;
      const ulonglong2* from = reinterpret_cast<const ulonglong2*>(
          __shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(row), e / E));
      v[j] = coherent ? __ldcg(from + e % E) : from[e % E];
    }
#pragma unroll
    for (int j = 0; j < E; j++) {
      const u32 e = (u32)j * 32u + lane, o = e / E;
      s[o * E + ((e % E) ^ ((o / (8 / E)) & (E - 1)))] = v[j];
    }
  } else {
    // The c calling lanes, ranked: turn j's chunk e = j c + rank is chunk e % E of the row of
    // the lane ranked e / E.
    const u32 c = __popc(active);
    const u32 rank = __popc(active & ((1u << lane) - 1u));
    u32 owner[E];
#pragma unroll
    for (int j = 0; j < E; j++) {
      const u32 e = (u32)j * c + rank;
      owner[j] = wm_nth_set_bit(active, e / E);
      const ulonglong2* from = reinterpret_cast<const ulonglong2*>(
          __shfl_sync(active, reinterpret_cast<unsigned long long>(row), owner[j]));
      v[j] = coherent ? __ldcg(from + e % E) : from[e % E];
    }
#pragma unroll
    for (int j = 0; j < E; j++) {
      const u32 e = (u32)j * c + rank, o = owner[j];
      s[o * E + ((e % E) ^ ((o / (8 / E)) & (E - 1)))] = v[j];
    }
  }
  __syncwarp(active);
#pragma unroll
  for (int j = 0; j < E; j++) out[j] = s[lane * E + ((u32)j ^ ((lane / (8 / E)) & (E - 1)))];
  __syncwarp(active);  // every lane has its row before the next call's stores
}
#endif
