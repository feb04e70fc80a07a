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
