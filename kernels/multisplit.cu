// Multisplit of a batch of keys (and values) into `parts` contiguous parts by the part function
// of kernels/common/multisplit.cuh. Host side: src/table/engine/multisplit.rs, which runs
//   multisplit_count   per-part counts (warp-aggregated atomics),
//   multisplit_scan    exclusive scan of the counts into offsets[parts + 1] and the cursors,
//   multisplit_scatter every key (value) to cursor[part]++ (warp-aggregated claims),
// on one stream. Within a part the order is not the input's (warps claim in any order): the
// split is not stable.
//
// Defines: WM_KEY_BYTES (4, 8 or a larger multiple of 4), WM_VALUE_BYTES (likewise; unset for
// keys only), WM_HASH (WM_HASH_MURMUR or WM_HASH_MUELLER), WM_MS_BLOCK (threads per block of
// count and scatter).

#ifndef WM_HASH
#define WM_HASH WM_HASH_MURMUR
#endif
#ifndef WM_MS_BLOCK
#define WM_MS_BLOCK 256
#endif
static_assert(WM_MS_BLOCK % 32 == 0, "whole warps: the multisplit helpers are warp-collective");

// The scan runs in one block of this many threads (the host launches exactly this).
#define WM_MS_SCAN_BLOCK 1024

#if defined(WM_VALUE_BYTES)
typedef wm_value wm_ms_value;
#else
typedef u32 wm_ms_value;  // unused: the value pointers are null for a keys-only split
#endif

extern "C" __global__ void __launch_bounds__(WM_MS_BLOCK) multisplit_count(
    const wm_key* __restrict__ keys, u64 n, u64 seed, u32 parts, u64* __restrict__ counts) {
  wm_multisplit_for_each<WM_HASH>(keys, n, seed, parts, [&](u64, u32 part, const wm_key&) {
    wm_multisplit_count(counts, part);
  });
}

// offsets[p] = counts[0] + ... + counts[p - 1] for p in [0, parts], cursor[p] = offsets[p].
// One block of WM_MS_SCAN_BLOCK threads, a chunk of that many counts per round.
extern "C" __global__ void __launch_bounds__(WM_MS_SCAN_BLOCK) multisplit_scan(
    const u64* __restrict__ counts, u32 parts, u64* __restrict__ offsets, u64* __restrict__ cursor) {
  __shared__ u64 warp_sums[WM_MS_SCAN_BLOCK / 32];
  __shared__ u64 carry;
  const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (u32 base = 0; base < parts; base += WM_MS_SCAN_BLOCK) {
    const u32 i = base + threadIdx.x;
    const u64 v = i < parts ? counts[i] : 0ull;
    u64 x = v;  // inclusive scan within the warp
#pragma unroll
    for (u32 d = 1; d < 32; d <<= 1) {
      const u64 y = __shfl_up_sync(0xffffffffu, x, d);
      if (lane >= d) x += y;
    }
    if (lane == 31u) warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) {  // inclusive scan of the warp totals
      u64 s = warp_sums[lane];
#pragma unroll
      for (u32 d = 1; d < 32; d <<= 1) {
        const u64 y = __shfl_up_sync(0xffffffffu, s, d);
        if (lane >= d) s += y;
      }
      warp_sums[lane] = s;
    }
    __syncthreads();
    const u64 excl = carry + (warp > 0 ? warp_sums[warp - 1] : 0ull) + x - v;
    if (i < parts) {
      offsets[i] = excl;
      cursor[i] = excl;
    }
    __syncthreads();  // every thread has read `carry`
    if (threadIdx.x == WM_MS_SCAN_BLOCK - 1) carry = excl + v;
    __syncthreads();
  }
  if (threadIdx.x == 0) offsets[parts] = carry;
}

// Moves key i (and value i) to keys_out[cursor[part]++]. `values`/`values_out` are null for a
// keys-only split (and unused when WM_VALUE_BYTES is unset).
extern "C" __global__ void __launch_bounds__(WM_MS_BLOCK) multisplit_scatter(
    const wm_key* __restrict__ keys, const wm_ms_value* __restrict__ values, u64 n, u64 seed,
    u32 parts, u64* __restrict__ cursor, wm_key* __restrict__ keys_out,
    wm_ms_value* __restrict__ values_out) {
  wm_multisplit_for_each<WM_HASH>(keys, n, seed, parts, [&](u64 i, u32 part, const wm_key& k) {
    const u64 slot = wm_multisplit_claim(cursor, part);
    if (part == WM_NO_PART) return;
    keys_out[slot] = k;
#if defined(WM_VALUE_BYTES)
    if (values != nullptr) values_out[slot] = values[i];
#endif
  });
}

// ---- The tiled scatter, for many parts ---------------------------------------------------------
// With thousands of parts nearly every key of a warp has a part of its own, so
// multisplit_scatter's claims cost one global atomic with a return per key, and those run at
// about the rate of random CASes (~13 G/s on an H100: 10 ms for 2^27 keys). The tiled scatter
// claims once per (tile, bin) instead: a block ranks its tile of WM_MS_TILE keys by bin in shared
// memory, claims each bin's run with one atomicAdd, and writes the keys of a bin next to each
// other. Bins are either coarse parts (part / fine, for pass 1 of two, or the parts themselves
// when fine is 1) or, for pass 2, parts relative to the coarse part of the tile's first key (the
// input is then pass 1's output, grouped by coarse part, so a tile spans one or two coarse parts
// unless they are small; a key beyond WM_MS_BINS falls back to its own claim). Two passes of
// about sqrt(parts) bins each cost about 2 sqrt(parts) / WM_MS_TILE atomics per key.
#define WM_MS_ITEMS 16
#define WM_MS_TILE (WM_MS_BLOCK * WM_MS_ITEMS)
#define WM_MS_BINS 2048

// coarse_cursor[c] = offsets[min(c * fine, parts)] for c < coarse: where coarse part c starts.
extern "C" __global__ void multisplit_coarse_cursors(const u64* __restrict__ offsets, u32 parts, u32 fine,
                                                     u32 coarse, u64* __restrict__ coarse_cursor) {
  const u32 c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < coarse) coarse_cursor[c] = offsets[min((u64)c * fine, (u64)parts)];
}

// One pass of the tiled scatter over keys/values[0, n). relative = 0: bin = part / fine (fine = 1:
// the part), claimed on cursor[bin]; relative = 1: bin = part - fine * (part of the tile's first
// key / fine), claimed on cursor[part] (the parts' own cursors). Every key is written once, to
// keys_out/values_out at its claim.
extern "C" __global__ void __launch_bounds__(WM_MS_BLOCK) multisplit_tile_scatter(
    const wm_key* __restrict__ keys, const wm_ms_value* __restrict__ values, u64 n, u64 seed,
    u32 parts, u32 fine, u32 relative, u64* __restrict__ cursor, wm_key* __restrict__ keys_out,
    wm_ms_value* __restrict__ values_out) {
  __shared__ u32 s_count[WM_MS_BINS];
  __shared__ u64 s_base[WM_MS_BINS];
  __shared__ u32 s_first_bin;
  for (u64 tile = (u64)blockIdx.x * WM_MS_TILE; tile < n; tile += (u64)gridDim.x * WM_MS_TILE) {
    for (u32 b = threadIdx.x; b < WM_MS_BINS; b += WM_MS_BLOCK) s_count[b] = 0;
    if (threadIdx.x == 0) s_first_bin = relative ? wm_part_of<WM_HASH>(keys[tile], seed, parts) / fine * fine : 0u;
    __syncthreads();
    const u32 first = s_first_bin;
    wm_key k[WM_MS_ITEMS];
    u32 part[WM_MS_ITEMS], rank[WM_MS_ITEMS];
#pragma unroll
    for (u32 q = 0; q < WM_MS_ITEMS; q++) {
      const u64 i = tile + q * WM_MS_BLOCK + threadIdx.x;  // coalesced
      part[q] = WM_NO_PART;
      if (i < n) {
        k[q] = keys[i];
        part[q] = wm_part_of<WM_HASH>(k[q], seed, parts);
        const u32 bin = relative ? part[q] - first : part[q] / fine;
        // A bin out of range claims on its own below (rank WM_NO_PART).
        rank[q] = bin < WM_MS_BINS ? atomicAdd(&s_count[bin], 1u) : WM_NO_PART;
      }
    }
    __syncthreads();
    for (u32 b = threadIdx.x; b < WM_MS_BINS; b += WM_MS_BLOCK) {
      const u32 c = s_count[b];
      if (c != 0) s_base[b] = atomicAdd(cursor + (relative ? first + b : b), (u64)c);
    }
    __syncthreads();
#pragma unroll
    for (u32 q = 0; q < WM_MS_ITEMS; q++) {
      if (part[q] == WM_NO_PART) continue;
      const u64 i = tile + q * WM_MS_BLOCK + threadIdx.x;
      const u32 bin = relative ? part[q] - first : part[q] / fine;
      const u64 slot = rank[q] != WM_NO_PART ? s_base[bin] + rank[q] : atomicAdd(cursor + (relative ? part[q] : bin), 1ull);
      keys_out[slot] = k[q];
#if defined(WM_VALUE_BYTES)
      if (values != nullptr) values_out[slot] = values[i];
#endif
    }
    __syncthreads();  // s_count and s_base are reused by the next tile
  }
}
