// The sharded table's split and its inverse (host side: src/sharded/split.rs). A batch of keys
// (with up to two payload arrays: values, mixed-batch operations) is split into `parts` parts,
// one per shard, by the partition function of kernels/common/multisplit.cuh (`wm_part_of`, a
// seed no table uses). The split is stable (keys keep their input order within a part) and
// costs no atomics in global memory:
//   shard_count    per tile of WM_SH_TILE keys, its count in each part (tile_counts[part][tile]);
//   shard_scan     per part, the exclusive prefix over tiles in place, and the part's total;
//   shard_scatter  every key (and payload element) to part base + tile prefix + its rank among
//                  the tile's keys of its part (ranks from warp matches and per-warp counts),
//                  and, where results will come back, each key's position in the split into
//                  an index array in input order (coalesced);
//   shard_unsplit  the inverse for results: a plain gather of up to three result arrays
//                  (status, values, found) from the split order back into the input order by
//                  the index array. (It used to re-read the keys and rank them again, the same
//                  traffic but the ranking's compute: 1.51 ms for a find's values and found
//                  flags of 2^27 keys on an H100; bench/NOTES.md, Issue 14.)
//
// Defines: WM_KEY_BYTES, WM_HASH (WM_HASH_MURMUR / WM_HASH_MUELLER), WM_SH_BLOCK (threads per
// block, a multiple of 32), WM_SH_ITEMS (keys per thread per tile). Payload and result element
// sizes are run-time arguments (1 byte, or a multiple of 4).

#ifndef WM_HASH
#define WM_HASH WM_HASH_MURMUR
#endif
#ifndef WM_SH_BLOCK
#define WM_SH_BLOCK 256
#endif
#ifndef WM_SH_ITEMS
#define WM_SH_ITEMS 16
#endif
#define WM_SH_WARPS (WM_SH_BLOCK / 32)
#define WM_SH_TILE (WM_SH_BLOCK * WM_SH_ITEMS)
static_assert(WM_SH_BLOCK % 32 == 0, "whole warps: the ranking is warp-collective");

// Threads of the per-part scan (the host launches exactly this many per block).
#define WM_SH_SCAN_BLOCK 1024

// Copies element `si` of `src` to element `di` of `dst`, elements of `bytes` bytes (1, or a
// multiple of 4; buffers are allocation-aligned, so wider words are aligned when `bytes` is a
// multiple of their size).
__device__ __forceinline__ void wm_sh_copy(u8* __restrict__ dst, u64 di, const u8* __restrict__ src,
                                           u64 si, u32 bytes) {
  if (bytes == 1u) {
    dst[di] = src[si];
  } else if (bytes % 16u == 0u) {
    const u64* s = (const u64*)(src + si * bytes);
    u64* d = (u64*)(dst + di * bytes);
    for (u32 w = 0; w < bytes / 8u; w += 2) {
      d[w] = s[w];
      d[w + 1] = s[w + 1];
    }
  } else if (bytes % 8u == 0u) {
    const u64* s = (const u64*)(src + si * bytes);
    u64* d = (u64*)(dst + di * bytes);
    for (u32 w = 0; w < bytes / 8u; w++) d[w] = s[w];
  } else {
    const u32* s = (const u32*)(src + si * bytes);
    u32* d = (u32*)(dst + di * bytes);
    for (u32 w = 0; w < bytes / 4u; w++) d[w] = s[w];
  }
}

// Shared memory of the ranking: two buffers of per-warp, per-part counts (alternating rounds,
// so one is cleared while the other is read) and the running count of each part in the tile.
// Sized by the host: (2 * WM_SH_WARPS + 1) * parts words, plus `parts` u64 part bases.
struct wm_sh_smem {
  u32* warp_counts[2];  // [WM_SH_WARPS][parts] each
  u32* running;         // [parts]
  u64* base;            // [parts]: where each part of this tile starts in the split
};

__device__ __forceinline__ wm_sh_smem wm_sh_carve(u32 parts) {
  extern __shared__ u64 wm_sh_dynamic[];
  wm_sh_smem s;
  s.base = wm_sh_dynamic;
  u32* words = (u32*)(wm_sh_dynamic + parts);
  s.warp_counts[0] = words;
  s.warp_counts[1] = words + WM_SH_WARPS * parts;
  s.running = words + 2 * WM_SH_WARPS * parts;
  return s;
}

// For every key of tile `tile` (of n keys): calls f(i, key, position) with the key's index, the
// key and its position in the split (stable: the tile's keys of one part in input order, after
// the earlier tiles' keys of that part). `tile_prefix[p * tiles + t]` is tile t's exclusive
// prefix within part p and `totals[p]` part p's size (shard_scan's outputs). Block-collective.
template <typename F>
__device__ __forceinline__ void wm_sh_tile_ranks(const wm_key* __restrict__ keys, u64 n, u64 seed,
                                                 u32 parts, u64 tile, u64 tiles,
                                                 const u32* __restrict__ tile_prefix,
                                                 const u64* __restrict__ totals, F f) {
  const wm_sh_smem s = wm_sh_carve(parts);
  const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) {
    u64 b = 0;  // parts are few (the host bounds them): one thread sums the part bases
    for (u32 p = 0; p < parts; p++) {
      s.base[p] = b;
      b += totals[p];
    }
  }
  __syncthreads();
  for (u32 p = threadIdx.x; p < parts; p += WM_SH_BLOCK) {
    s.base[p] += tile_prefix[(u64)p * tiles + tile];
    s.running[p] = 0;
    for (u32 w = 0; w < WM_SH_WARPS; w++) {
      s.warp_counts[0][w * parts + p] = 0;
      s.warp_counts[1][w * parts + p] = 0;
    }
  }
  __syncthreads();
  const u64 first = tile * WM_SH_TILE;
  for (u32 round = 0; round < WM_SH_ITEMS; round++) {
    u32* counts = s.warp_counts[round & 1u];
    u32* other = s.warp_counts[(round & 1u) ^ 1u];
    const u64 i = first + (u64)round * WM_SH_BLOCK + threadIdx.x;
    u32 part = WM_NO_PART;
    wm_key k{};
    if (i < n) {
      k = keys[i];
      part = wm_part_of<WM_HASH>(k, seed, parts);
    }
    const u32 peers = __match_any_sync(0xffffffffu, part);
    const u32 rank = __popc(peers & ((1u << lane) - 1u));
    if (part != WM_NO_PART && rank == 0u) counts[warp * parts + part] = __popc(peers);
    __syncthreads();
    // Per part: the warps' counts become their exclusive bases; the other buffer is cleared
    // for the next round (its last reader, the previous round, is past the barrier above).
    for (u32 p = threadIdx.x; p < parts; p += WM_SH_BLOCK) {
      u32 run = s.running[p];
      for (u32 w = 0; w < WM_SH_WARPS; w++) {
        const u32 c = counts[w * parts + p];
        counts[w * parts + p] = run;
        other[w * parts + p] = 0;
        run += c;
      }
      s.running[p] = run;
    }
    __syncthreads();
    const u64 pos = part != WM_NO_PART ? s.base[part] + counts[warp * parts + part] + rank : n;
    if (pos < n) f(i, k, pos);  // always below n for the split's own keys; a bound regardless
  }
}

// tile_counts[p * tiles + t] = the number of keys of tile t in part p.
extern "C" __global__ void __launch_bounds__(WM_SH_BLOCK) shard_count(const wm_key* __restrict__ keys, u64 n, u64 seed, u32 parts, u64 tiles,
                u32* __restrict__ tile_counts) {
  extern __shared__ u64 wm_sh_dynamic[];
  u32* counts = (u32*)wm_sh_dynamic;
  const u32 lane = threadIdx.x & 31u;
  for (u32 p = threadIdx.x; p < parts; p += WM_SH_BLOCK) counts[p] = 0;
  __syncthreads();
  const u64 first = (u64)blockIdx.x * WM_SH_TILE;
  for (u32 round = 0; round < WM_SH_ITEMS; round++) {
    const u64 i = first + (u64)round * WM_SH_BLOCK + threadIdx.x;
    const u32 part = i < n ? wm_part_of<WM_HASH>(keys[i], seed, parts) : WM_NO_PART;
    const u32 peers = __match_any_sync(0xffffffffu, part);
    if (part != WM_NO_PART && lane == (u32)(__ffs(peers) - 1)) atomicAdd(counts + part, __popc(peers));
  }
  __syncthreads();
  for (u32 p = threadIdx.x; p < parts; p += WM_SH_BLOCK) tile_counts[(u64)p * tiles + blockIdx.x] = counts[p];
}

// One block per part: row p of tile_counts becomes its exclusive prefix (in place), and
// totals[p] the row's sum. Exactly WM_SH_SCAN_BLOCK threads.
extern "C" __global__ void __launch_bounds__(WM_SH_SCAN_BLOCK) shard_scan(u32* __restrict__ tile_counts, u64 tiles, u64* __restrict__ totals) {
  u32* row = tile_counts + (u64)blockIdx.x * tiles;
  const u32 total =
      wm_block_exclusive_scan<u32, WM_SH_SCAN_BLOCK>(row, tiles, [&](u64 t, u32 excl) { row[t] = excl; });
  if (threadIdx.x == 0) totals[blockIdx.x] = total;
}

// Moves key i (and element i of each payload that is not null) to its position in the split,
// and writes that position to positions[i] (if not null; n < 2^32, the host checks).
extern "C" __global__ void __launch_bounds__(WM_SH_BLOCK) shard_scatter(const wm_key* __restrict__ keys, u64 n, u64 seed, u32 parts, u64 tiles,
                  const u32* __restrict__ tile_prefix, const u64* __restrict__ totals,
                  wm_key* __restrict__ keys_out, const u8* __restrict__ payload0,
                  u8* __restrict__ payload0_out, u32 payload0_bytes, const u8* __restrict__ payload1,
                  u8* __restrict__ payload1_out, u32 payload1_bytes, u32* __restrict__ positions) {
  wm_sh_tile_ranks(keys, n, seed, parts, blockIdx.x, tiles, tile_prefix, totals,
                   [&](u64 i, const wm_key& k, u64 pos) {
                     keys_out[pos] = k;
                     if (positions != nullptr) positions[i] = (u32)pos;
                     if (payload0 != nullptr) wm_sh_copy(payload0_out, pos, payload0, i, payload0_bytes);
                     if (payload1 != nullptr) wm_sh_copy(payload1_out, pos, payload1, i, payload1_bytes);
                   });
}

// The inverse for results: element i of each non-null `out` array receives the element of its
// `split` array at positions[i] (where shard_scatter put key i), except where the operation
// left that output alone:
// - with `ops` (the mixed batch's operations in split order): statuses only for inserts (op
//   0), values only for finds (op 1; the host also sets `values_where_found`), found flags only
//   for finds and erases;
// - with `values_where_found`, values only where the found flag (array 2, split order) is set.
// Those outputs keep what the caller had in them, as the tables' own kernels do.
extern "C" __global__ void __launch_bounds__(WM_SH_BLOCK) shard_unsplit(const u32* __restrict__ positions, u64 n,
                  const u8* __restrict__ ops, u32 values_where_found,
                  const u8* __restrict__ split0, u8* __restrict__ out0, u32 bytes0,
                  const u8* __restrict__ split1, u8* __restrict__ out1, u32 bytes1,
                  const u8* __restrict__ split2, u8* __restrict__ out2, u32 bytes2) {
  for (u64 i = (u64)blockIdx.x * WM_SH_BLOCK + threadIdx.x; i < n; i += (u64)gridDim.x * WM_SH_BLOCK) {
    const u64 pos = positions[i];
    if (pos >= n) continue;  // always below n for a split of these n keys; a bound regardless
    const u32 op = ops != nullptr ? ops[pos] : 0xffu;
    const bool any = op == 0xffu;
    const bool found = split2 == nullptr || split2[pos] != 0;
    if (split0 != nullptr && (any || op == 0u)) wm_sh_copy(out0, i, split0, pos, bytes0);
    if (split1 != nullptr && (any || op == 1u) && (!values_where_found || found))
      wm_sh_copy(out1, i, split1, pos, bytes1);
    if (split2 != nullptr && (any || op != 0u)) wm_sh_copy(out2, i, split2, pos, bytes2);
  }
}
