// The sharded table's split and its inverse (host side: src/sharded/split.rs). A batch of keys
// (with up to two payload arrays: values, mixed-batch operations) is split into `parts` parts,
// one per shard, by the partition function of kernels/common/multisplit.cuh (`wm_part_of`, a
// seed no table uses). The split is stable (keys keep their input order within a part) and
// costs no atomics in global memory:
//   shard_count    per tile of WM_SH_TILE keys, its count in each part (tile_counts[part][tile]);
//   shard_scan     per part, the exclusive prefix over tiles in place, and the part's total;
//   shard_scatter  every key (and payload element) to part base + tile prefix + its rank among
//                  the tile's keys of its part (ranks from warp matches and per-warp counts);
//   shard_unsplit  the inverse for results: re-reads the keys, recomputes each one's position
//                  in the split, and gathers up to three result arrays (status, values, found)
//                  from the split order back into the input order. No index array is written
//                  or read: the keys are read again instead, which costs the same traffic and
//                  saves the split from writing one.
// The tile ranking is one function (wm_sh_tile_places), so the scatter and the unsplit agree;
// small keys stay in registers through it and each thread's loads go out together.
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

// A key's place in the split, packed: its part (8 bits; parts <= 256) above its rank among the
// tile's keys of that part (24 bits; a tile has fewer keys), or WM_SH_NONE (past the batch).
// Its position is the tile's base of the part plus the rank.
#define WM_SH_NONE 0xffffffffu
static_assert(WM_SH_TILE < (1u << 24), "a tile's ranks fit in 24 bits");

// Keys held in registers across the tile's ranking when they are small, so that all of a
// thread's loads are in flight at once (the ranking's rounds are bound by two barriers each; a
// load per round would add a memory latency to every one). Larger keys are loaded per round.
#if WM_KEY_BYTES <= 8
#define WM_SH_HOLD_KEYS 1
#else
#define WM_SH_HOLD_KEYS 0
#endif

// Ranks the keys of tile `tile` (of n keys): thread t's item r is key tile * WM_SH_TILE +
// r * WM_SH_BLOCK + t, and place[r] receives its packed place (see WM_SH_NONE); with
// WM_SH_HOLD_KEYS, held[r] receives the key. Stable: the tile's keys of one part in input order,
// after the earlier tiles' keys of that part (`tile_prefix[p * tiles + t]`, tile t's exclusive
// prefix within part p, and `totals[p]`, part p's size: shard_scan's outputs). Afterwards
// s.base[p] holds where part p of this tile starts in the split. Block-collective.
__device__ __forceinline__ void wm_sh_tile_places(const wm_key* __restrict__ keys, u64 n, u64 seed,
                                                  u32 parts, u64 tile, u64 tiles,
                                                  const u32* __restrict__ tile_prefix,
                                                  const u64* __restrict__ totals,
                                                  wm_key (&held)[WM_SH_ITEMS],
                                                  u32 (&place)[WM_SH_ITEMS]) {
  const wm_sh_smem s = wm_sh_carve(parts);
  const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const u64 first = tile * WM_SH_TILE + threadIdx.x;
#if WM_SH_HOLD_KEYS
#pragma unroll
  for (u32 r = 0; r < WM_SH_ITEMS; r++) {
    const u64 i = first + (u64)r * WM_SH_BLOCK;
    if (i < n) held[r] = keys[i];
  }
#endif
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
#pragma unroll
  for (u32 r = 0; r < WM_SH_ITEMS; r++) {
    u32* counts = s.warp_counts[r & 1u];
    u32* other = s.warp_counts[(r & 1u) ^ 1u];
    const u64 i = first + (u64)r * WM_SH_BLOCK;
    u32 part = WM_NO_PART;
    if (i < n) {
#if !WM_SH_HOLD_KEYS
      held[r] = keys[i];
#endif
      part = wm_part_of<WM_HASH>(held[r], seed, parts);
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
    place[r] = part != WM_NO_PART ? (part << 24) | (counts[warp * parts + part] + rank) : WM_SH_NONE;
  }
}

// The position in the split of a key placed at `place` (not WM_SH_NONE), after
// wm_sh_tile_places.
__device__ __forceinline__ u64 wm_sh_position(u32 parts, u32 place) {
  return wm_sh_carve(parts).base[place >> 24] + (place & 0xffffffu);
}

// For every item r of this thread placed in the split: dst[position] = src[index] (`to_split`)
// or dst[index] = src[position] (back), elements of `bytes` bytes; `keep(r, position)` says
// whether to copy. Elements of 4 or 8 bytes are all loaded before any is stored, so a
// thread's loads are in flight at once.
template <typename Keep>
__device__ __forceinline__ void wm_sh_move(u8* __restrict__ dst, const u8* __restrict__ src,
                                           u32 bytes, bool to_split, u32 parts, u64 first,
                                           const u32 (&place)[WM_SH_ITEMS], Keep keep) {
#define WM_SH_MOVE_WORDS(T)                                                                  \
  {                                                                                          \
    T w[WM_SH_ITEMS];                                                                        \
    _Pragma("unroll") for (u32 r = 0; r < WM_SH_ITEMS; r++) {                                \
      if (place[r] == WM_SH_NONE) continue;                                                  \
      const u64 pos = wm_sh_position(parts, place[r]), i = first + (u64)r * WM_SH_BLOCK;     \
      if (keep(r, pos)) w[r] = ((const T*)src)[to_split ? i : pos];                          \
    }                                                                                        \
    _Pragma("unroll") for (u32 r = 0; r < WM_SH_ITEMS; r++) {                                \
      if (place[r] == WM_SH_NONE) continue;                                                  \
      const u64 pos = wm_sh_position(parts, place[r]), i = first + (u64)r * WM_SH_BLOCK;     \
      if (keep(r, pos)) ((T*)dst)[to_split ? pos : i] = w[r];                                \
    }                                                                                        \
  }
  if (bytes == 4u) {
    WM_SH_MOVE_WORDS(u32)
  } else if (bytes == 8u) {
    WM_SH_MOVE_WORDS(u64)
  } else {
#pragma unroll
    for (u32 r = 0; r < WM_SH_ITEMS; r++) {
      if (place[r] == WM_SH_NONE) continue;
      const u64 pos = wm_sh_position(parts, place[r]), i = first + (u64)r * WM_SH_BLOCK;
      if (keep(r, pos)) {
        if (to_split) wm_sh_copy(dst, pos, src, i, bytes);
        else wm_sh_copy(dst, i, src, pos, bytes);
      }
    }
  }
#undef WM_SH_MOVE_WORDS
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

// Moves key i (and element i of each payload that is not null) to its position in the split.
extern "C" __global__ void __launch_bounds__(WM_SH_BLOCK) shard_scatter(const wm_key* __restrict__ keys, u64 n, u64 seed, u32 parts, u64 tiles,
                  const u32* __restrict__ tile_prefix, const u64* __restrict__ totals,
                  wm_key* __restrict__ keys_out, const u8* __restrict__ payload0,
                  u8* __restrict__ payload0_out, u32 payload0_bytes, const u8* __restrict__ payload1,
                  u8* __restrict__ payload1_out, u32 payload1_bytes) {
  wm_key held[WM_SH_ITEMS];
  u32 place[WM_SH_ITEMS];
  wm_sh_tile_places(keys, n, seed, parts, blockIdx.x, tiles, tile_prefix, totals, held, place);
  const u64 first = (u64)blockIdx.x * WM_SH_TILE + threadIdx.x;
  const auto all = [](u32, u64) { return true; };
#pragma unroll
  for (u32 r = 0; r < WM_SH_ITEMS; r++) {
    if (place[r] != WM_SH_NONE) keys_out[wm_sh_position(parts, place[r])] = held[r];
  }
  if (payload0 != nullptr) wm_sh_move(payload0_out, payload0, payload0_bytes, true, parts, first, place, all);
  if (payload1 != nullptr) wm_sh_move(payload1_out, payload1, payload1_bytes, true, parts, first, place, all);
}

// The inverse for results: element i of each non-null `out` array receives the element of its
// `split` array at key i's position in the split (the keys, seed, parts and prefixes of the
// shard_scatter that made it), except where the operation left that output alone:
// - with `ops` (the mixed batch's operations in split order): statuses only for inserts (op
//   0), values only for finds (op 1; the host also sets `values_where_found`), found flags only
//   for finds and erases;
// - with `values_where_found`, values only where the found flag (array 2, split order) is set.
// Those outputs keep what the caller had in them, as the tables' own kernels do.
extern "C" __global__ void __launch_bounds__(WM_SH_BLOCK) shard_unsplit(const wm_key* __restrict__ keys, u64 n, u64 seed, u32 parts, u64 tiles,
                  const u32* __restrict__ tile_prefix, const u64* __restrict__ totals,
                  const u8* __restrict__ ops, u32 values_where_found,
                  const u8* __restrict__ split0, u8* __restrict__ out0, u32 bytes0,
                  const u8* __restrict__ split1, u8* __restrict__ out1, u32 bytes1,
                  const u8* __restrict__ split2, u8* __restrict__ out2, u32 bytes2) {
  wm_key held[WM_SH_ITEMS];
  u32 place[WM_SH_ITEMS];
  wm_sh_tile_places(keys, n, seed, parts, blockIdx.x, tiles, tile_prefix, totals, held, place);
  const u64 first = (u64)blockIdx.x * WM_SH_TILE + threadIdx.x;
  // The operation of each item (mixed batches), 0xff where there are none; read once.
  u8 op[WM_SH_ITEMS];
#pragma unroll
  for (u32 r = 0; r < WM_SH_ITEMS; r++) {
    op[r] = ops != nullptr && place[r] != WM_SH_NONE ? ops[wm_sh_position(parts, place[r])] : 0xffu;
  }
  if (split0 != nullptr) {
    wm_sh_move(out0, split0, bytes0, false, parts, first, place,
               [&](u32 r, u64) { return op[r] == 0xffu || op[r] == 0u; });
  }
  if (split1 != nullptr) {
    wm_sh_move(out1, split1, bytes1, false, parts, first, place, [&](u32 r, u64 pos) {
      return (op[r] == 0xffu || op[r] == 1u) && (!values_where_found || split2 == nullptr || split2[pos] != 0);
    });
  }
  if (split2 != nullptr) {
    wm_sh_move(out2, split2, bytes2, false, parts, first, place,
               [&](u32 r, u64) { return op[r] != 0u; });
  }
}
