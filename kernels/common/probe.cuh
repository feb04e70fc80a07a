// Double hashing over a table of n positions (n prime, so every step is coprime with it and n
// probes visit every position): start at umulhi(h1, n), step by 1 + umulhi(h2, n - 1). The
// positions are buckets (Stadium) or windows of slots (WarpDrive). Overflow-safe for any
// n < 2^32 - 1: pos + step may wrap past 2^32, and the wrap is undone.
struct wm_double_hash {
  u32 pos;
  u32 step;
  __device__ __forceinline__ wm_double_hash() {}
  __device__ __forceinline__ wm_double_hash(uint2 h, u32 n)
      : pos(wm_map_to_range(h.x, n)), step(1u + wm_map_to_range(h.y, n - 1u)) {}
  __device__ __forceinline__ void next(u32 n) {
    const u32 dh = pos + step;  // pos, step < n: the sum may wrap only past 2^32
    pos = (dh >= n || dh < pos) ? dh - n : dh;
  }
};
