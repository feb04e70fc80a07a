// Multisplit of a batch of keys (and values) into `parts` contiguous parts by the part function
// of kernels/common/multisplit.cuh. Host side: src/table/engine/multisplit.rs, which runs
//   multisplit_count   per-part counts (warp-aggregated atomics),
//   multisplit_scan    exclusive scan of the counts into offsets[parts + 1] and the cursors,
//   multisplit_scatter every key (value) to cursor[part]++ (warp-aggregated claims),
// on one stream (the claiming split: one atomic with a return per distinct part in a warp, which
// runs at the rate of random atomics once a warp's keys rarely share a part), or the counting
// split below (the default up to 2^20 parts; no global atomics: per-block histograms, scans,
// and tiles moved through shared memory). Within a part the order is not the input's: the
// split is not stable.
//
// Defines: WM_KEY_BYTES (4, 8 or a larger multiple of 4), WM_VALUE_BYTES (likewise; unset for
// keys only), WM_HASH (WM_HASH_MURMUR or WM_HASH_MUELLER), WM_MS_BLOCK (threads per block of
// count and scatter), WM_MS_CBLOCK (threads per block of the counting split's moves),
// WM_MS_COUNT_BLOCK (threads per block of its count),
// WM_MS_ITEMS (items per thread of a counting tile), WM_MS_STAGED (1: tiles go through shared
// memory; 0, for pairs too wide for it: each item is written from registers).

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
  const u64 total = wm_block_exclusive_scan<u64, WM_MS_SCAN_BLOCK>(counts, parts, [&](u64 i, u64 excl) {
    offsets[i] = excl;
    cursor[i] = excl;
  });
  if (threadIdx.x == 0) offsets[parts] = total;
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

// ---------------------------------------------------------------------------------------------
// The counting split, the default up to 2^20 parts (host: `Method::Counting` in
// src/table/engine/multisplit.rs).
//
// A part p (bits = ceil(log2 parts) bits) is a coarse group p >> fine_bits and a fine bin
// p & (2^fine_bits - 1); groups and fine bins are each at most WM_MS_MAX_BINS.
//   1. multisplit_coarse_count:   block c counts the groups of its chunk of the batch into
//                                  counts[group][c] (shared-memory histogram);
//   2. multisplit_scan_rows:       one block per group scans its row over the chunks (the place
//                                  of chunk c within the group) and writes the group's total;
//      multisplit_scan:            the totals into group offsets;
//   3. multisplit_coarse_scatter:  block c moves its chunk, a tile at a time, to its groups;
//   4. multisplit_fine (when fine_bits > 0): block g counts the fine bins of group g, writes
//                                  the offsets of the group's parts, and moves the group's keys
//                                  to their parts.
// With fine_bits = 0 the groups are the parts and step 3 writes the result.
//
// A tile (WM_MS_TILE items) is ranked by shared-memory atomics per bin, staged in shared memory
// in bin order, and written out by consecutive threads, so each bin's run of the tile goes out
// as one coalesced write rather than one scattered sector per key (WM_MS_STAGED; otherwise each
// item goes out from its thread).
#ifndef WM_MS_ITEMS
#define WM_MS_ITEMS 1
#endif
#ifndef WM_MS_STAGED
#define WM_MS_STAGED 0
#endif
#ifndef WM_MS_CBLOCK
#define WM_MS_CBLOCK 256
#endif
#ifndef WM_MS_COUNT_BLOCK
#define WM_MS_COUNT_BLOCK 1024
#endif
static_assert(WM_MS_COUNT_BLOCK % 32 == 0 && WM_MS_COUNT_BLOCK <= 1024, "whole warps, at most 1024");
static_assert(WM_MS_CBLOCK % 32 == 0 && WM_MS_CBLOCK <= 1024, "whole warps, at most 1024");
#define WM_MS_MAX_BINS 1024
#define WM_MS_TILE (WM_MS_CBLOCK * WM_MS_ITEMS)
static_assert(WM_MS_TILE <= 65536, "a rank within a tile fits 16 bits (wm_ms_move)");
#define WM_MS_NO_BIN 0xffffffffu

// WM_MS_ASYNC (staged tiles only): the moves bulk-copy the next tile's keys (and values) from
// memory into a second tile buffer in shared memory (sm_90: cp.async.bulk, one thread a tile)
// while this tile is ranked, staged and written out, so that the loads' trip overlaps the
// shared-memory phases without holding registers or issue slots; a tile that does not fit a
// bulk copy (not 16-byte aligned: a batch at an odd offset, a tail of odd length) is loaded into
// registers when its turn comes, as without WM_MS_ASYNC (item-by-item cp.async cost more than
// that for 4-byte items: bench/NOTES.md, session AC, calls 6 and 10). (The register prefetch
// below spills where a thread's items take more than ~64 bytes: one block of 512 a
// multiprocessor leaves 128 registers a thread.) The host sets it on sm_90, for splits of one
// pass (two passes ran faster without it: session AD), where the second buffer fits beside a
// tile of the same size.
#ifndef WM_MS_ASYNC
#define WM_MS_ASYNC 0
#endif
#if WM_MS_ASYNC && !WM_MS_STAGED
#error "WM_MS_ASYNC needs staged tiles"
#endif
#define WM_MS_BUFFERS (1 + WM_MS_ASYNC)

struct wm_ms_tile_smem {
  u32 count[WM_MS_MAX_BINS];   // items of the tile in each bin (then zeroed for the next tile)
  u32 start[WM_MS_MAX_BINS];   // exclusive scan of count: where a bin's items begin in the tile
  u64 cursor[WM_MS_MAX_BINS];  // where the bin's next item goes in the output
#if WM_MS_ASYNC
  u64 tile_bar[2];  // the tile buffers' mbarriers (bulk copies)
#endif
  u32 warp_sums[WM_MS_CBLOCK / 32];
  u32 clip;  // the slack split: some bin's run of this tile passes the end of its region
#if WM_MS_STAGED
  unsigned short bin[WM_MS_TILE];
  // WM_MS_BUFFERS tiles: with WM_MS_ASYNC the next tile lands in one while this one is ranked,
  // staged and written out through the other.
  __align__(16) wm_key key[WM_MS_BUFFERS][WM_MS_TILE];  // 16-byte aligned: bulk copies
#if defined(WM_VALUE_BYTES)
  __align__(16) wm_ms_value value[WM_MS_BUFFERS][WM_MS_TILE];
#endif
#endif
};

// The moving kernels' shared memory: dynamic (the host passes at least its size and opts in
// beyond 48 KiB), so that tiles may be larger than static shared memory allows.
extern __shared__ __align__(16) unsigned char wm_ms_dynamic_smem[];
__device__ __forceinline__ wm_ms_tile_smem& wm_ms_smem() {
  u32 given;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(given));
  if (given < sizeof(wm_ms_tile_smem)) __trap();  // the host's size formula is out of date
  return *reinterpret_cast<wm_ms_tile_smem*>(wm_ms_dynamic_smem);
}

// Where a slack split's output is {key, value} pairs (SlackLayout::Pairs, multisplit_slack_
// scatter_pairs), a staged tile's place `at` holds its pair in one 8- or 16-byte word: places
// [0, WM_MS_TILE / 2) over the tile buffer's key array and the rest over its value array (the
// two arrays' bytes are exactly the tile's pairs, and each starts 16-byte aligned), so that the
// pair is staged and read back in one shared-memory access each. H200, 2^27 u64 pairs at load
// 0.5 (bench/NOTES.md, session AL call 1): the scatter 1.27 -> 1.18 ms, inserts +1.0 %.
#if defined(WM_HAS_PAIRS) && WM_MS_STAGED
static_assert(WM_MS_TILE % 2 == 0, "a tile's pairs fill its key and value arrays in halves");
__device__ __forceinline__ wm_pair* wm_ms_pair_at(wm_ms_tile_smem& s, u32 cur, u32 at) {
  return at < WM_MS_TILE / 2 ? reinterpret_cast<wm_pair*>(&s.key[cur][0]) + at
                             : reinterpret_cast<wm_pair*>(&s.value[cur][0]) + (at - WM_MS_TILE / 2);
}
#endif

// start[i] = count[0] + ... + count[i - 1] for i < bins (shared arrays; all threads call it, and
// the caller synchronises before reading `start`).
__device__ __forceinline__ void wm_ms_scan_bins(wm_ms_tile_smem& s, u32 bins) {
  constexpr u32 PER = (WM_MS_MAX_BINS + WM_MS_CBLOCK - 1) / WM_MS_CBLOCK;
  const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const u32 first = threadIdx.x * PER;
  u32 local[PER];
  u32 sum = 0;
#pragma unroll
  for (u32 q = 0; q < PER; ++q) {
    local[q] = first + q < bins ? s.count[first + q] : 0u;
    sum += local[q];
  }
  u32 x = sum;  // inclusive scan of the threads' sums within the warp
#pragma unroll
  for (u32 d = 1; d < 32; d <<= 1) {
    const u32 y = __shfl_up_sync(0xffffffffu, x, d);
    if (lane >= d) x += y;
  }
  if (lane == 31u) s.warp_sums[warp] = x;
  __syncthreads();
  if (warp == 0) {
    u32 w = lane < WM_MS_CBLOCK / 32 ? s.warp_sums[lane] : 0u;
#pragma unroll
    for (u32 d = 1; d < 32; d <<= 1) {
      const u32 y = __shfl_up_sync(0xffffffffu, w, d);
      if (lane >= d) w += y;
    }
    if (lane < WM_MS_CBLOCK / 32) s.warp_sums[lane] = w;
  }
  __syncthreads();
  u32 run = (warp > 0 ? s.warp_sums[warp - 1] : 0u) + x - sum;
#pragma unroll
  for (u32 q = 0; q < PER; ++q) {
    if (first + q < bins) s.start[first + q] = run;
    run += local[q];
  }
}

// The slack split's places (multisplit_slack_scatter): part p owns the region [p * cap,
// (p + 1) * cap) of the output, and a tile's run of part p is claimed there with one atomic on
// fill[p] (zeroed by the host; it may pass cap). Items past their region's end are not
// written: their bits are set in `flagged` (one bit an item of the batch, zeroed by the host)
// and counted in fill[parts], and the caller inserts them from the batch itself.
struct wm_ms_slack {
  u64 cap;
  u64* fill;     // parts + 1 words
  u32* flagged;  // n bits
  u32 parts;
};

// Moves items [begin, end) to their bins' places (item i with key k in bin bin_of(k, i)): the
// item goes to cursor[bin] + its rank among the bin's items of [begin, end), and each cursor
// advances by its bin's count; where
// `positions` is not null, positions[i] = where item i went (below 2^32: the host checks). A
// null `values` beside a non-null `values_out` (4-byte values) makes each item's value its index
// i: the split carries the batch indices without reading an index array (an indexed split,
// src/table/engine/multisplit.rs multisplit_within_indexed). On entry s.cursor[0..bins) is set
// and s.count[0..bins) is zero, and all threads call it.
//
// With WM_MS_PREFETCH the next tile's keys (and values) are loaded into registers before this
// tile's ranking and moves, so that their trip from memory overlaps the tile's shared-memory
// phases: with one block a multiprocessor, nothing else would (the host sets it where the
// registers allow: a thread's items of a tile in at most 64 bytes).
//
// With SLACK, the bins are parts with regions (wm_ms_slack above) instead of places counted
// beforehand: s.cursor is set a tile at a time from the tile's claims (its entry value is not
// read), and `positions` must be null.
//
// With PAIRS (WM_HAS_PAIRS and values only), the output is one array of {key, value} pairs
// (wm_pair) at keys_out, and values_out is not read.
#ifndef WM_MS_PREFETCH
#define WM_MS_PREFETCH 0
#endif
template <bool SLACK, bool PAIRS, typename BinOf>
__device__ __forceinline__ void wm_ms_move(wm_ms_tile_smem& s, const wm_key* __restrict__ keys,
                                           const wm_ms_value* __restrict__ values, u64 begin,
                                           u64 end, u32 bins, BinOf bin_of,
                                           wm_key* __restrict__ keys_out,
                                           wm_ms_value* __restrict__ values_out,
                                           u32* __restrict__ positions, const wm_ms_slack& slack) {
  const bool has_values = values != nullptr || values_out != nullptr;  // read, or indices
#if !WM_MS_ASYNC
  wm_key k[WM_MS_ITEMS];
#if defined(WM_VALUE_BYTES)
  wm_ms_value v[WM_MS_ITEMS];
#endif
  // A thread's items of the tile at `base` into k (and v), all loads in flight at once.
  auto load = [&](u64 base) {
    const u32 tile_n = (u32)min((u64)WM_MS_TILE, end - base);
#pragma unroll
    for (u32 j = 0; j < WM_MS_ITEMS; ++j) {
      const u32 t = j * WM_MS_CBLOCK + threadIdx.x;
      if (t < tile_n) {
        k[j] = keys[base + t];
#if defined(WM_VALUE_BYTES)
        if (values != nullptr) v[j] = values[base + t];
#if WM_VALUE_BYTES == 4
        else if (has_values) v[j] = (wm_ms_value)(base + t);  // an indexed split (below 2^32)
#endif
#endif
      }
    }
  };
#endif
#if WM_MS_STAGED
  u32 cur = 0;  // the tile buffer of this tile (with WM_MS_ASYNC: 0 and 1 in turn)
#endif
#if WM_MS_ASYNC && WM_HAS_BULK_COPY
  // Whether the tile at `base` goes into buffer `buf` by bulk copies (one thread issues them;
  // the whole tile's keys, and values, in one range each), or is loaded into registers where
  // its ranges are not 16-byte aligned (a batch at an odd offset, a tail of odd length).
  auto bulk = [&](u64 base, u32 buf, u32 tile_n) {
    bool fits = wm_bulk_copy_fits(&s.key[buf][0], keys + base, (u64)tile_n * sizeof(wm_key));
#if defined(WM_VALUE_BYTES)
    if (values != nullptr)
      fits = fits && wm_bulk_copy_fits(&s.value[buf][0], values + base, (u64)tile_n * sizeof(wm_ms_value));
#endif
    return fits;
  };
  u32 parities = 0;  // bit b: the parity of buffer b's barrier phase to wait for next
  if (threadIdx.x == 0) {
    wm_bulk_barrier_init(&s.tile_bar[0]);
    wm_bulk_barrier_init(&s.tile_bar[1]);
  }
  __syncthreads();
#endif
#if WM_MS_ASYNC
  // Bulk-copies the tile at `base` (none where base >= end, or where it does not fit a bulk
  // copy: that tile is loaded into registers when its turn comes) into tile buffer `buf`:
  // thread 0 issues the copies of the whole tile's keys (and values).
  auto copy = [&](u64 base, u32 buf) {
#if WM_HAS_BULK_COPY
    if (base >= end) return;
    const u32 tile_n = (u32)min((u64)WM_MS_TILE, end - base);
    if (threadIdx.x == 0 && bulk(base, buf, tile_n)) {
      const u32 key_bytes = tile_n * (u32)sizeof(wm_key);
      u32 bytes = key_bytes;
#if defined(WM_VALUE_BYTES)
      const u32 value_bytes = values != nullptr ? tile_n * (u32)sizeof(wm_ms_value) : 0u;
      bytes += value_bytes;
#endif
      wm_bulk_expect(&s.tile_bar[buf], bytes);
      wm_bulk_copy(&s.key[buf][0], keys + base, key_bytes, &s.tile_bar[buf]);
#if defined(WM_VALUE_BYTES)
      if (value_bytes != 0u) wm_bulk_copy(&s.value[buf][0], values + base, value_bytes, &s.tile_bar[buf]);
#endif
    }
#else
    (void)base, (void)buf;
#endif
  };
  copy(begin, 0);
#elif WM_MS_PREFETCH
  if (begin < end) load(begin);
#endif
  for (u64 base = begin; base < end; base += WM_MS_TILE) {
    const u32 tile_n = (u32)min((u64)WM_MS_TILE, end - base);
    // This tile's items (with WM_MS_PREFETCH loaded by the round before; the next tile's loads
    // go out now; with WM_MS_ASYNC bulk-copied into buffer `cur` by the round before, or
    // loaded now where it did not fit a bulk copy, and the next tile's copies go out now).
    wm_key kc[WM_MS_ITEMS];
#if defined(WM_VALUE_BYTES)
    wm_ms_value vc[WM_MS_ITEMS];
#endif
#if WM_MS_ASYNC
    // Buffer cur ^ 1 is free: its tile was written out before the last round's barriers.
    copy(base + WM_MS_TILE, cur ^ 1u);
    // This tile: in buffer cur once its copies land, or (not bulk-copied) from memory.
    bool landed = false;
#if WM_HAS_BULK_COPY
    if (bulk(base, cur, tile_n)) {
      wm_bulk_wait(&s.tile_bar[cur], (parities >> cur) & 1u);
      parities ^= 1u << cur;
      landed = true;
    }
#endif
#pragma unroll
    for (u32 j = 0; j < WM_MS_ITEMS; ++j) {
      const u32 t = j * WM_MS_CBLOCK + threadIdx.x;
      if (t < tile_n) {
        kc[j] = landed ? s.key[cur][t] : keys[base + t];
#if defined(WM_VALUE_BYTES)
        if (values != nullptr) vc[j] = landed ? s.value[cur][t] : values[base + t];
#if WM_VALUE_BYTES == 4
        else if (has_values) vc[j] = (wm_ms_value)(base + t);  // an indexed split (below 2^32)
#endif
#endif
      }
    }
#else
#if !WM_MS_PREFETCH
    load(base);
#endif
#pragma unroll
    for (u32 j = 0; j < WM_MS_ITEMS; ++j) {
      kc[j] = k[j];
#if defined(WM_VALUE_BYTES)
      vc[j] = v[j];
#endif
    }
#if WM_MS_PREFETCH
    if (base + WM_MS_TILE < end) load(base + WM_MS_TILE);
#endif
#endif
    // Each item's bin (high 16 bits) and rank among the tile's items of its bin (low 16 bits:
    // a tile holds at most 2^16 items), one register per item.
    u32 br[WM_MS_ITEMS];
#pragma unroll
    for (u32 j = 0; j < WM_MS_ITEMS; ++j) {
      const u32 t = j * WM_MS_CBLOCK + threadIdx.x;
      br[j] = WM_MS_NO_BIN;
      if (t < tile_n) {
        const u32 b = bin_of(kc[j], base + t);
        br[j] = (b << 16) | atomicAdd(&s.count[b], 1u);
      }
    }
    __syncthreads();
    // The slack split claims each bin's run of the tile in its region now, and stores the
    // claims only after the staging below, so that the atomics' trip overlaps it.
    constexpr u32 BINS_PER = (WM_MS_MAX_BINS + WM_MS_CBLOCK - 1) / WM_MS_CBLOCK;
    u64 claimed[SLACK ? BINS_PER : 1];
    if (SLACK) {
#pragma unroll
      for (u32 q = 0; q < BINS_PER; ++q) {
        const u32 bin = q * WM_MS_CBLOCK + threadIdx.x;
        claimed[q] = 0;
        if (bin < bins && s.count[bin] != 0u) claimed[q] = atomicAdd(slack.fill + bin, (u64)s.count[bin]);
      }
    }
    // The claims into s.cursor (after the staging: see above); a run past its region's end
    // sets s.clip. The caller synchronises before s.cursor is read.
    auto store_claims = [&]() {
      if (!SLACK) return;
#pragma unroll
      for (u32 q = 0; q < BINS_PER; ++q) {
        const u32 bin = q * WM_MS_CBLOCK + threadIdx.x;
        if (bin < bins && s.count[bin] != 0u) {
          s.cursor[bin] = (u64)bin * slack.cap + claimed[q];
          if (claimed[q] + s.count[bin] > slack.cap) s.clip = 1u;
        }
      }
    };
    // Where the tile clipped a run (rare): the items past their region's end are flagged for
    // the caller, by the threads that ranked them (they know their batch index).
    auto flag_clipped = [&]() {
      if (!SLACK || s.clip == 0u) return;
      u32 clipped = 0;
#pragma unroll
      for (u32 j = 0; j < WM_MS_ITEMS; ++j) {
        if (br[j] == WM_MS_NO_BIN) continue;
        const u32 b = br[j] >> 16;
        if (s.cursor[b] + (br[j] & 0xffffu) >= (u64)(b + 1u) * slack.cap) {
          const u64 i = base + j * WM_MS_CBLOCK + threadIdx.x;
          atomicOr(slack.flagged + (i >> 5), 1u << (u32)(i & 31u));
          ++clipped;
        }
      }
      if (clipped != 0u) atomicAdd(slack.fill + slack.parts, (u64)clipped);
    };
    if (positions != nullptr) {  // from the threads' own items: consecutive threads, consecutive i
#pragma unroll
      for (u32 j = 0; j < WM_MS_ITEMS; ++j) {
        if (br[j] != WM_MS_NO_BIN)
          positions[base + j * WM_MS_CBLOCK + threadIdx.x] = (u32)(s.cursor[br[j] >> 16] + (br[j] & 0xffffu));
      }
    }
#if WM_MS_STAGED
    wm_ms_scan_bins(s, bins);
    __syncthreads();
#pragma unroll
    for (u32 j = 0; j < WM_MS_ITEMS; ++j) {
      if (br[j] != WM_MS_NO_BIN) {
        const u32 b = br[j] >> 16;
        const u32 at = s.start[b] + (br[j] & 0xffffu);
        s.bin[at] = (unsigned short)b;
        // Every thread has read its items of buffer cur (barriers above).
#if defined(WM_HAS_PAIRS)
        if (PAIRS) {
          *wm_ms_pair_at(s, cur, at) = wm_make_pair(kc[j], vc[j]);
          continue;
        }
#endif
        s.key[cur][at] = kc[j];
#if defined(WM_VALUE_BYTES)
        if (has_values) s.value[cur][at] = vc[j];
#endif
      }
    }
    store_claims();
    __syncthreads();
    flag_clipped();
    const bool clip = SLACK && s.clip != 0u;
    // Consecutive threads write consecutive items of a bin's run.
#pragma unroll
    for (u32 j = 0; j < WM_MS_ITEMS; ++j) {
      const u32 t = j * WM_MS_CBLOCK + threadIdx.x;
      if (t < tile_n) {
        const u32 bin = s.bin[t];
        const u64 out = s.cursor[bin] + (t - s.start[bin]);
        if (clip && out >= (u64)(bin + 1u) * slack.cap) continue;  // flagged above
#if defined(WM_HAS_PAIRS)
        if (PAIRS) {
          reinterpret_cast<wm_pair*>(keys_out)[out] = *wm_ms_pair_at(s, cur, t);
          continue;
        }
#endif
        keys_out[out] = s.key[cur][t];
#if defined(WM_VALUE_BYTES)
        if (has_values) values_out[out] = s.value[cur][t];
#endif
      }
    }
#else
    if (SLACK) {
      store_claims();
      __syncthreads();
      flag_clipped();
    }
    const bool clip = SLACK && s.clip != 0u;
#pragma unroll
    for (u32 j = 0; j < WM_MS_ITEMS; ++j) {
      if (br[j] != WM_MS_NO_BIN) {
        const u32 b = br[j] >> 16;
        const u64 out = s.cursor[b] + (br[j] & 0xffffu);
        if (clip && out >= (u64)(b + 1u) * slack.cap) continue;  // flagged above
#if defined(WM_HAS_PAIRS)
        if (PAIRS) {
          reinterpret_cast<wm_pair*>(keys_out)[out] = wm_make_pair(kc[j], vc[j]);
          continue;
        }
#endif
        keys_out[out] = kc[j];
#if defined(WM_VALUE_BYTES)
        if (has_values) values_out[out] = vc[j];
#endif
      }
    }
#endif
    __syncthreads();
    for (u32 bin = threadIdx.x; bin < bins; bin += WM_MS_CBLOCK) {
      if (!SLACK) s.cursor[bin] += s.count[bin];
      s.count[bin] = 0;
    }
    if (SLACK && threadIdx.x == 0) s.clip = 0u;
    __syncthreads();
#if WM_MS_ASYNC
    cur ^= 1u;
#endif
  }
}

// The coarse group of a key. With within > 1 (one pass only: fine_bits = 0), the part is
// composite: parts / within outer parts by (seed), each cut into `within` by (within_seed), as
// the sharded table's split that also orders each shard's keys by its table's stretches
// (src/sharded/split.rs).
__device__ __forceinline__ u32 wm_ms_group(const wm_key& k, u64 seed, u32 parts, u32 fine_bits,
                                           u64 within_seed, u32 within) {
  if (within > 1u)
    return wm_part_of<WM_HASH>(k, seed, parts / within) * within + wm_part_of<WM_HASH>(k, within_seed, within);
  return wm_part_of<WM_HASH>(k, seed, parts) >> fine_bits;
}

// Block c counts the groups of items [c * chunk, (c + 1) * chunk) into counts[g * chunks + c]
// (chunks = gridDim.x). With `bins` not null, item i's group is bins[i] (below `groups`: the
// caller's word) and the keys are not read (a split by bins that another module computed: the
// DyCuckoo build's, src/table/engine/multisplit.rs `multisplit_by_bins`). Blocks of any whole number of warps up to WM_MS_COUNT_BLOCK (the host
// launches that many: 1024 for narrow keys, 256 for wide ones): there is one block per chunk (one per resident block of the scatter),
// so the count's loads in flight are its blocks' threads' (H100, 2^26 keys in 132 chunks:
// 256-thread blocks read at 1.1 TB/s).
extern "C" __global__ void __launch_bounds__(WM_MS_COUNT_BLOCK) multisplit_coarse_count(
    const wm_key* __restrict__ keys, u64 n, u64 seed, u32 parts, u32 fine_bits, u64 within_seed,
    u32 within, const u32* __restrict__ bins, u32 groups, u64 chunk, u64* __restrict__ counts) {
  __shared__ u32 hist[WM_MS_MAX_BINS];
  for (u32 g = threadIdx.x; g < groups; g += blockDim.x) hist[g] = 0;
  __syncthreads();
  const u64 begin = (u64)blockIdx.x * chunk;
  const u64 end = min(n, begin + chunk);
  for (u64 base = begin; base < end; base += (u64)blockDim.x * WM_MS_ITEMS) {
    wm_key k[WM_MS_ITEMS];
    u32 given[WM_MS_ITEMS];
#pragma unroll
    for (u32 j = 0; j < WM_MS_ITEMS; ++j) {
      const u64 i = base + (u64)j * blockDim.x + threadIdx.x;
      if (i < end) {
        if (bins != nullptr) {
          given[j] = bins[i];
        } else {
          k[j] = keys[i];
        }
      }
    }
#pragma unroll
    for (u32 j = 0; j < WM_MS_ITEMS; ++j) {
      const u64 i = base + (u64)j * blockDim.x + threadIdx.x;
      if (i < end) {
        const u32 g = bins != nullptr ? given[j] : wm_ms_group(k[j], seed, parts, fine_bits, within_seed, within);
        atomicAdd(&hist[g], 1u);
      }
    }
  }
  __syncthreads();
  for (u32 g = threadIdx.x; g < groups; g += blockDim.x) {
    counts[(u64)g * gridDim.x + blockIdx.x] = hist[g];
  }
}

// Block g: counts[g * chunks .. + chunks) scanned in place (exclusive), totals[g] = their sum.
extern "C" __global__ void __launch_bounds__(WM_MS_SCAN_BLOCK) multisplit_scan_rows(
    u64* __restrict__ counts, u32 chunks, u64* __restrict__ totals) {
  u64* row = counts + (u64)blockIdx.x * chunks;
  const u64 total = wm_block_exclusive_scan<u64, WM_MS_SCAN_BLOCK>(
      row, chunks, [&](u64 i, u64 excl) { row[i] = excl; });
  if (threadIdx.x == 0) totals[blockIdx.x] = total;
}

// Block c moves its chunk to its groups: group g's items of chunk c start at
// group_offsets[g] + counts[g * chunks + c] (the scanned rows). `bins` as for the count.
extern "C" __global__ void __launch_bounds__(WM_MS_CBLOCK) multisplit_coarse_scatter(
    const wm_key* __restrict__ keys, const wm_ms_value* __restrict__ values, u64 n, u64 seed,
    u32 parts, u32 fine_bits, u64 within_seed, u32 within, const u32* __restrict__ bins, u32 groups,
    u64 chunk, const u64* __restrict__ counts, const u64* __restrict__ group_offsets,
    wm_key* __restrict__ keys_out, wm_ms_value* __restrict__ values_out, u32* __restrict__ positions) {
  wm_ms_tile_smem& s = wm_ms_smem();
  for (u32 g = threadIdx.x; g < groups; g += WM_MS_CBLOCK) {
    s.cursor[g] = group_offsets[g] + counts[(u64)g * gridDim.x + blockIdx.x];
    s.count[g] = 0;
  }
  __syncthreads();
  const u64 begin = (u64)blockIdx.x * chunk;
  const u64 end = min(n, begin + chunk);
  wm_ms_move<false, false>(
      s, keys, values, begin, end, groups,
      [&](const wm_key& k, u64 i) {
        return bins != nullptr ? bins[i] : wm_ms_group(k, seed, parts, fine_bits, within_seed, within);
      },
      keys_out, values_out, positions, wm_ms_slack{});
}

// The slack split (one pass, no count: src/table/engine/multisplit.rs multisplit_slack_async):
// block c moves its chunk [c * chunk, (c + 1) * chunk), a tile at a time, into the parts'
// regions of cap items each (wm_ms_slack): fill[0..parts + 1) zeroed by the host, and the n
// bits of `flagged`, whose words of its chunk each block zeroes first (a chunk is whole tiles,
// so whole words, and only its own block flags its items: no memset of its own on the host's
// head, ahead of the scatter). Part p's items are keys_out[p * cap .. p * cap + min(fill[p],
// cap)) in no particular order (with PAIRS: the pairs of a wm_pair array at keys_out); the
// fill[parts] items that found their region full are flagged instead.
template <bool PAIRS>
__device__ __forceinline__ void wm_ms_slack_scatter(const wm_key* __restrict__ keys,
                                                    const wm_ms_value* __restrict__ values, u64 n, u64 seed,
                                                    u32 parts, u64 chunk, u64 cap, u64* __restrict__ fill,
                                                    u32* __restrict__ flagged, wm_key* __restrict__ keys_out,
                                                    wm_ms_value* __restrict__ values_out) {
  wm_ms_tile_smem& s = wm_ms_smem();
  const u64 begin = (u64)blockIdx.x * chunk;
  const u64 end = min(n, begin + chunk);
  for (u64 w = begin / 32 + threadIdx.x; w < (end + 31) / 32; w += WM_MS_CBLOCK) flagged[w] = 0u;
  for (u32 p = threadIdx.x; p < parts; p += WM_MS_CBLOCK) s.count[p] = 0;
  if (threadIdx.x == 0) s.clip = 0u;
  __syncthreads();  // the zeroed words before any thread of the block flags an item
  wm_ms_move<true, PAIRS>(
      s, keys, values, begin, end, parts,
      [&](const wm_key& k, u64) { return wm_part_of<WM_HASH>(k, seed, parts); }, keys_out,
      values_out, nullptr, wm_ms_slack{cap, fill, flagged, parts});
}
extern "C" __global__ void __launch_bounds__(WM_MS_CBLOCK) multisplit_slack_scatter(
    const wm_key* __restrict__ keys, const wm_ms_value* __restrict__ values, u64 n, u64 seed,
    u32 parts, u64 chunk, u64 cap, u64* __restrict__ fill, u32* __restrict__ flagged,
    wm_key* __restrict__ keys_out, wm_ms_value* __restrict__ values_out) {
  wm_ms_slack_scatter<false>(keys, values, n, seed, parts, chunk, cap, fill, flagged, keys_out, values_out);
}
// The same into one array of {key, value} pairs (SlackLayout::Pairs: keys and values of one
// width, 4 or 8 bytes, and values given; wm_pair).
extern "C" __global__ void __launch_bounds__(WM_MS_CBLOCK) multisplit_slack_scatter_pairs(
    const wm_key* __restrict__ keys, const wm_ms_value* __restrict__ values, u64 n, u64 seed,
    u32 parts, u64 chunk, u64 cap, u64* __restrict__ fill, u32* __restrict__ flagged,
    void* __restrict__ pairs_out) {
#if defined(WM_HAS_PAIRS)
  wm_ms_slack_scatter<true>(keys, values, n, seed, parts, chunk, cap, fill, flagged,
                            reinterpret_cast<wm_key*>(pairs_out), nullptr);
#else
  (void)keys, (void)values, (void)n, (void)seed, (void)parts, (void)chunk, (void)cap, (void)fill, (void)flagged,
      (void)pairs_out;
  __trap();  // never launched: SlackScatter::prepare refuses pairs for these types
#endif
}

// Block g (one per group, gridDim.x = groups): counts the fine bins of the group's items
// (group_offsets[g] .. group_offsets[g + 1] of the coarse split), writes offsets[p] for the
// group's parts p (and offsets[parts] = n in the last block), and moves the items to their parts.
extern "C" __global__ void __launch_bounds__(WM_MS_CBLOCK) multisplit_fine(
    const wm_key* __restrict__ keys, const wm_ms_value* __restrict__ values, u64 seed, u32 parts,
    u32 fine_bits, const u64* __restrict__ group_offsets, wm_key* __restrict__ keys_out,
    wm_ms_value* __restrict__ values_out, u64* __restrict__ offsets) {
  wm_ms_tile_smem& s = wm_ms_smem();
  const u32 g = blockIdx.x;
  const u32 bins = 1u << fine_bits, mask = bins - 1u;
  const u64 begin = group_offsets[g], end = group_offsets[g + 1];
  for (u32 b = threadIdx.x; b < bins; b += WM_MS_CBLOCK) s.count[b] = 0;
  __syncthreads();
  for (u64 base = begin; base < end; base += WM_MS_TILE) {
    wm_key k[WM_MS_ITEMS];
#pragma unroll
    for (u32 j = 0; j < WM_MS_ITEMS; ++j) {
      const u64 i = base + j * WM_MS_CBLOCK + threadIdx.x;
      if (i < end) k[j] = keys[i];
    }
#pragma unroll
    for (u32 j = 0; j < WM_MS_ITEMS; ++j) {
      const u64 i = base + j * WM_MS_CBLOCK + threadIdx.x;
      if (i < end) atomicAdd(&s.count[wm_part_of<WM_HASH>(k[j], seed, parts) & mask], 1u);
    }
  }
  __syncthreads();
  wm_ms_scan_bins(s, bins);
  __syncthreads();
  for (u32 b = threadIdx.x; b < bins; b += WM_MS_CBLOCK) {
    s.cursor[b] = begin + s.start[b];
    const u64 p = ((u64)g << fine_bits) + b;
    if (p < parts) offsets[p] = s.cursor[b];
    s.count[b] = 0;
  }
  if (g + 1 == gridDim.x && threadIdx.x == 0) offsets[parts] = end;
  __syncthreads();
  wm_ms_move<false, false>(
      s, keys, values, begin, end, bins,
      [&](const wm_key& k, u64) { return wm_part_of<WM_HASH>(k, seed, parts) & mask; }, keys_out,
      values_out, nullptr, wm_ms_slack{});
}
