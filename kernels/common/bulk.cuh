// What every table kernel shares: its arguments, the loop over a batch, the counters, and the
// skeleton of retrieve. Host side: src/table/engine/ (the one launch site).
//
// Every bulk kernel of a scheme is `extern "C" __global__ void <scheme>_<op>(<view> t, wm_bulk b)`:
// the scheme's device view (its arrays and geometry, a #[repr(C)] struct on the host) and the
// batch, both passed by value. The host passes the sizes it laid the structs out with, and the
// compiler checks them here, so host and kernel cannot drift apart silently.

// WM_ENGINE: set by the engine for table modules (src/table/engine/), with the sizes below.
#if defined(WM_ENGINE)
#if !defined(WM_BLOCK) || !defined(WM_BULK_BYTES) || !defined(WM_VIEW_BYTES)
#error "table modules need WM_BLOCK, WM_BULK_BYTES and WM_VIEW_BYTES from the host (src/table/engine/)"
#endif
static_assert(WM_BLOCK % 32 == 0 && WM_BLOCK <= 1024, "WM_BLOCK: whole warps, at most 1024 threads");
#endif

#if defined(WM_ENGINE) && defined(WM_KEY_BYTES) && defined(WM_VALUE_BYTES)
struct wm_ordered_part;  // below

// One batch. Each kernel reads the fields of its operation; the others are null/zero.
struct wm_bulk {
  const u8* ops;           // mixed: MixedOp per key (0 insert, 1 find, 2 erase; a scheme leaves those it does not run alone)
  const wm_key* keys;      // every operation's keys (n of them)
  const wm_value* values;  // insert, mixed: the values
  u32* status;             // insert (may be null), mixed: per-key status
  wm_value* out;           // find (null: contains), mixed: found values; retrieve: the values
  u8* found;               // find, mixed: 1 or 0 per key
  u64 n;                   // keys in the batch; retrieve: the output's capacity
  u64* counter;            // retrieve: pairs written (zeroed by the host)
  wm_key* out_keys;        // retrieve: the keys
  u32 assign;              // insert: the mode word (apply.cuh): 0 keep, 1 assign, 2 apply (WarpDrive only)
  u32 part_count;          // ordered parts: how many parts `parts` holds
  const wm_ordered_part* parts;  // ordered parts: the parts (n: their tiles in all; counter: the tile counter)
  const u8* sm_l2_side;             // ordered insert: the L2 side of each SM (null: no sides; wm_for_each_ordered_l2_sided)
  const u32* granule_l2_side;       // ordered insert: bit g = 4 KiB granule g of the table's array is on side 1
  // A slack split's ordered insert (wm_for_each_ordered_batch): `fill` its regions' fills and,
  // at fill[regions], its flagged items' count; `flagged` (null: the regions' launch) their bits.
  // wm_bulk stays within 128 bytes: at 136, NVRTC 13.0 gave WarpDrive's ordered insert of u32
  // pairs 44 registers instead of 38 (5 blocks a SM instead of 6: the deep inserts at load 0.8
  // 9 % slower) and of u64 pairs 64 instead of 60.
  const u64* fill;
  const u32* flagged;
  u32 region_tiles;  // tiles a region
  u32 regions;
};
static_assert(sizeof(wm_bulk) == WM_BULK_BYTES, "wm_bulk differs from src/table/engine/ Bulk");
static_assert(sizeof(wm_bulk) <= 128, "wm_bulk past 128 bytes costs the kernels registers (above)");

// One batch of an ordered launch over several (host twin: `OrderedPart`, src/table/engine/):
// its arrays, its length, and its items per step of the launch (wm_for_each_ordered_parts).
struct wm_ordered_part {
  const wm_key* keys;
  const wm_value* values;  // insert
  wm_value* out;           // find (null: contains)
  u8* found;               // find
  u64 n;
  u64 tile;
};

// Calls f(part, i) for every item i of every part of b.parts, each part in the order of its
// table's stretches: tile t (from the zeroed counter *b.counter, one atomic per tile) is part
// t % b.part_count's items [s * tile, (s + 1) * tile) of step s = t / b.part_count, and the host
// sizes each part's tile so that every part ends at the same step. So the blocks in flight are
// at the same point of every part's stretch order, all in one stretch of the table, and the
// parts are worked on together: a sharded table's shard takes its own part (in its own memory)
// and its parts of the other ranks' splits (read over the link) in one launch, the link's
// traffic beside the local work. Every thread of the block calls it, outside divergent code.
template <typename F>
__device__ __forceinline__ void wm_for_each_ordered_parts(const wm_bulk& b, F f) {
  __shared__ unsigned long long wm_tile;
  while (true) {
    if (threadIdx.x == 0) wm_tile = atomicAdd(reinterpret_cast<unsigned long long*>(b.counter), 1ull);
    __syncthreads();
    const u64 t = wm_tile;
    __syncthreads();  // every thread has read wm_tile before the next tile overwrites it
    if (t >= b.n) return;
    const wm_ordered_part part = b.parts[t % b.part_count];  // a copy: f's atomics would reload it
    const u64 begin = (t / b.part_count) * part.tile;
    const u64 end = min(part.n, begin + part.tile);
#pragma unroll 1
    for (u64 i = begin + threadIdx.x; i < end; i += blockDim.x) f(part, i);
  }
}
#endif

// The check of a scheme's device view against its host twin (WM_VIEW_BYTES from the host).
#define WM_CHECK_VIEW(type) \
  static_assert(sizeof(type) == WM_VIEW_BYTES, #type " differs from its #[repr(C)] twin on the host")

// MixedOp values (src/table/mod.rs).
#define WM_OP_INSERT 0
#define WM_OP_FIND 1
#define WM_OP_ERASE 2

// Calls f(i) for every item i < n, one item per coalesced group of G lanes, striding over the
// grid (the host sizes grids in full-occupancy waves: src/table/engine/). Every lane of a group
// sees the same i.
template <int G, typename F>
__device__ __forceinline__ void wm_for_each(u64 n, F f) {
  const u64 groups = ((u64)gridDim.x * blockDim.x) / G;
  for (u64 i = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / G; i < n; i += groups) f(i);
}

// Calls f(i, active) ROUNDS times a tile for every thread of the block, tiles of ROUNDS x
// blockDim.x consecutive items handed out to blocks in index order from *tiles (zeroed by the host
// before the launch; one atomic per tile): item i with active = i < n (a lane past the end still
// calls, so every lane of a warp makes the same calls and f may use warp-collective code). Whatever
// the grid (one resident wave suffices), the blocks in flight work on a narrow range of the batch,
// and none waits for a slow one: what an insert in the order of the table's stretches needs
// (src/table/engine/locality.rs). A grid-stride loop lets blocks drift apart over a large batch,
// and a grid of a block per few items pays a block launch and a count flush per few items (both
// measured on an H100: bench/NOTES.md, issue 18). Every thread of the block calls it (block
// barriers), outside divergent code.
template <int ROUNDS, typename F>
__device__ __forceinline__ void wm_for_each_ordered_lanes(u64 n, u64* tiles, F f) {
  __shared__ unsigned long long wm_tile;
  const u64 tile_items = (u64)ROUNDS * blockDim.x;
  while (true) {
    if (threadIdx.x == 0) wm_tile = atomicAdd(reinterpret_cast<unsigned long long*>(tiles), 1ull);
    __syncthreads();
    const u64 base = wm_tile * tile_items;
    __syncthreads();  // every thread has read wm_tile before the next tile overwrites it
    if (base >= n) return;
#pragma unroll 1
    for (int r = 0; r < ROUNDS; r++) {
      const u64 i = base + (u64)r * blockDim.x + threadIdx.x;
      f(i, i < n);
    }
  }
}

// The same, f(i) for the items i < n only (one item per thread, no warp-collective code in f).
template <int ROUNDS, typename F>
__device__ __forceinline__ void wm_for_each_ordered(u64 n, u64* tiles, F f) {
  wm_for_each_ordered_lanes<ROUNDS>(n, tiles, [&](u64 i, bool active) {
    if (active) f(i);
  });
}

#if defined(WM_ENGINE) && defined(WM_KEY_BYTES) && defined(WM_VALUE_BYTES)
// A flag in wm_bulk.assign, beside the insert mode word's bits (apply.cuh; host twin
// BATCH_PAIRS, src/table/engine/mod.rs): the batch's `keys` are {key, value} pairs (wm_pair)
// and `values` is null, a slack split's regions in its pairs layout. Ordered inserts only, and
// only modules with pairs (WM_HAS_PAIRS); a flag, not a field, since wm_bulk is full (above).
#define WM_BATCH_PAIRS (1u << 16)

// Item i of an ordered insert's batch b into k and v: keys[i] and values[i], or the pair at i
// (WM_BATCH_PAIRS: one 8- or 16-byte load).
__device__ __forceinline__ void wm_batch_item(const wm_bulk& b, u64 i, wm_key& k, wm_value& v) {
#if defined(WM_HAS_PAIRS)
  if (b.assign & WM_BATCH_PAIRS) {
    const wm_pair p = reinterpret_cast<const wm_pair*>(b.keys)[i];
    k = wm_pair_key(p);
    v = wm_pair_value(p);
    return;
  }
#endif
  k = b.keys[i];
  v = wm_load_elem(b.values, i);
}

// An ordered insert's loop over its batch b (tile counter *tiles, zeroed by the host): f(i) for
// the batch's items, one item a thread, as wm_for_each_ordered, in one of three shapes:
// - b.fill not null and b.flagged null: the batch is a slack split (src/table/engine/
//   multisplit.rs multisplit_slack_async), regions of b.region_tiles tiles, region r holding
//   min(b.fill[r], its length) items from its start and nothing valid after them; a tile lies
//   in one region, so thread 0 reads its region's fill once a tile;
// - b.flagged not null: the batch in input order, only the items whose bit is set (those of a
//   slack split that found their region full); none set (b.fill[b.regions] == 0, the rule):
//   every block returns at once;
// - else every item of [0, b.n).
// Every thread of the block calls it (block barriers), outside divergent code.
template <int ROUNDS, typename F>
__device__ __forceinline__ void wm_for_each_ordered_batch(const wm_bulk& b, u64* tiles, F f) {
  // One loop for the three shapes, so that f is inlined once, and the tile's bounds worked out
  // by thread 0 into shared memory: three loops took WarpDrive's ordered insert of u64 pairs
  // from 64 registers to 70, and bounds in every thread to 66, past the 64 that let 4 blocks of
  // 256 a SM (NVRTC 13.0, sm_90).
  if (b.flagged != nullptr && b.fill[b.regions] == 0ull) return;  // one word for every thread
  __shared__ unsigned long long wm_batch_base;
  __shared__ u32 wm_batch_take;
  const u32 tile_items = (u32)ROUNDS * blockDim.x;
  while (true) {
    // Thread 0 takes the next tile and works out how many of its items are the batch's: up to
    // its end, or to its region's fill (one read a tile, off the other threads' registers).
    if (threadIdx.x == 0) {
      const u64 t = atomicAdd(reinterpret_cast<unsigned long long*>(tiles), 1ull);
      const u64 base = t * tile_items;
      u64 end = b.n;
      if (b.fill != nullptr && b.flagged == nullptr && base < b.n) {
        const u32 r = (u32)t / b.region_tiles;  // below 2^32 tiles: the host checks
        const u64 region_items = (u64)b.region_tiles * tile_items;
        end = (u64)r * region_items + min(__ldg(b.fill + r), region_items);
      }
      wm_batch_base = base;
      wm_batch_take = (u32)min(end > base ? end - base : 0ull, (u64)tile_items);
    }
    __syncthreads();
    const u64 base = wm_batch_base;
    const u32 take_n = wm_batch_take;
    __syncthreads();  // every thread has read them before the next tile overwrites them
    if (base >= b.n) return;
#pragma unroll 1
    for (int k = 0; k < ROUNDS; k++) {
      const u32 o = (u32)k * blockDim.x + threadIdx.x;
      const u64 i = base + o;
      bool take = o < take_n;
      if (b.flagged != nullptr && take) take = (__ldg(b.flagged + (i >> 5)) >> (u32)(i & 31u)) & 1u;
      if (take) f(i);
    }
  }
}
#endif

// The SM this thread runs on (%smid: fixed for a block's life).
__device__ __forceinline__ u32 wm_smid() {
  u32 r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

// Entries of an SM side map (src/table/engine/l2_sides.rs MAX_SM): SM ids at or past it count as side 0.
#define WM_L2_SIDES_MAX_SM 1024u

#if defined(WM_BLOCK)
// wm_for_each_ordered for a GPU whose L2 has two sides (src/table/engine/l2_sides.rs): f(i) for
// every item i < n, each by a block on the side of the L2 that side_of(i) (0 or 1, a function of
// the item alone) names. The batch is cut into tiles of 2 x ROUNDS x blockDim.x consecutive
// items, and every tile is handed to one block of each side: side s's tiles come from the zeroed
// counter tiles[s], one atomic a tile. A block first takes its own side's tiles (sm_l2_side[its
// SM], WM_L2_SIDES_MAX_SM entries; an unknown SM counts as side 0), then, when they are done, the other
// side's, so every item is taken exactly once whatever SMs the blocks land on. Of a tile, a block
// collects its side's items (warp ballots into a shared list), then runs f on them, about ROUNDS
// per thread: the keys in flight are as many as wm_for_each_ordered's, each side's blocks at the
// same point of the stretch order. Every thread of the block calls it, outside divergent code;
// blocks of at most WM_BLOCK threads.
template <int ROUNDS, typename S, typename F>
__device__ __forceinline__ void wm_for_each_ordered_l2_sided(u64 n, u64* tiles, const u8* sm_l2_side, S side_of, F f) {
  __shared__ unsigned long long wm_tile;
  __shared__ u32 wm_side_count;
  __shared__ unsigned short wm_side_items[2 * ROUNDS * WM_BLOCK];
  const u32 sm = wm_smid();
  const u32 own = (sm < WM_L2_SIDES_MAX_SM && sm_l2_side[sm] == 1u) ? 1u : 0u;
  const u64 tile_items = 2ull * ROUNDS * blockDim.x;
  const u32 lane = threadIdx.x & 31u;
#pragma unroll 1
  for (u32 pass = 0; pass < 2; pass++) {
    const u32 side = own ^ pass;
#pragma unroll 1
    while (true) {
      if (threadIdx.x == 0) {
        wm_tile = atomicAdd(reinterpret_cast<unsigned long long*>(tiles + side), 1ull);
        wm_side_count = 0;
      }
      __syncthreads();
      const u64 base = wm_tile * tile_items;
      if (base >= n) {
        __syncthreads();  // every thread has read wm_tile before the next pass writes it
        break;
      }
#pragma unroll 1
      for (int r = 0; r < 2 * ROUNDS; r++) {
        const u64 i = base + (u64)r * blockDim.x + threadIdx.x;
        const bool take = i < n && side_of(i) == side;
        const u32 ballot = __ballot_sync(0xffffffffu, take);
        u32 at = 0;
        if (lane == 0 && ballot != 0u) at = atomicAdd(&wm_side_count, (u32)__popc(ballot));
        at = __shfl_sync(0xffffffffu, at, 0);
        if (take) wm_side_items[at + __popc(ballot & ((1u << lane) - 1u))] = (unsigned short)(i - base);
      }
      __syncthreads();
      const u32 count = wm_side_count;
#pragma unroll 1
      for (u32 j = threadIdx.x; j < count; j += blockDim.x) f(base + wm_side_items[j]);
      __syncthreads();  // every thread is done with the tile's list and count
    }
  }
}
#endif

// Adds each thread's `delta` to *counter: summed over the warp (shuffles), then over the block in
// shared memory, then one atomic per block. A global atomic per warp on the same few count words
// serialises at L2: a batch of 2^20 keys has 2^15 warps, each adding to the same two or three
// words at the end of its kernel (H100, batches of 2^20 u32 keys: WarpDrive erase 5.1 -> 11.4-12.7
// G/s, insert 5.1 -> 6.0-6.1; DyCuckoo's dynamic erase 4.2 -> 5.5). Every thread of the block
// calls it, in the same order, outside divergent code (it holds three block barriers); blocks
// are whole warps. The slab hash's kernels use wm_add_count_warp instead (measured: see there).
__device__ __forceinline__ void wm_add_count(u64* counter, long long delta) {
  __shared__ unsigned long long wm_block_sum;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) delta += __shfl_down_sync(0xffffffffu, delta, off);
  if (threadIdx.x == 0) wm_block_sum = 0ull;
  __syncthreads();
  if ((threadIdx.x & 31u) == 0 && delta != 0) atomicAdd(&wm_block_sum, (unsigned long long)delta);
  __syncthreads();
  if (threadIdx.x == 0 && wm_block_sum != 0ull) atomicAdd(counter, (u64)wm_block_sum);
  __syncthreads();  // wm_block_sum is reused by the next call
}

// The same sum, added once per warp (no block barrier): for kernels whose warps finish far apart
// (the slab hash's work-sharing loops), where the barriers of wm_add_count cost more than the
// atomics they save (H100, slab-compare, three rounds each: build 10.54 -> 10.35 G/s, concurrent
// mix 7.2 -> 6.95 with wm_add_count). Every lane of the warp calls it.
__device__ __forceinline__ void wm_add_count_warp(u64* counter, long long delta) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) delta += __shfl_down_sync(0xffffffffu, delta, off);
  if ((threadIdx.x & 31u) == 0 && delta != 0) atomicAdd(counter, (u64)delta);
}

// The skeleton of retrieve: visits positions 0..count-1 of a table, and for each one that
// `live(i)` says holds a pair, calls `emit(i, pos)` with its place in the output, from
// *counter (the host zeroes it, and checks afterwards that it equals the stored count), at most
// `capacity` of them. Every lane runs the same number of rounds, so the warp-aggregated counter
// sees all 32.
template <typename Live, typename Emit>
__device__ __forceinline__ void wm_compact(u64 count, u64* counter, u64 capacity, Live live, Emit emit) {
  const u64 threads = (u64)gridDim.x * blockDim.x;
  const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  const u64 rounds = (count + threads - 1) / threads;
  for (u64 r = 0; r < rounds; r++) {
    const u64 i = r * threads + tid;
    const bool l = i < count && live(i);
    const u64 pos = wm_aggregated_inc(counter, l);
    if (l && pos < capacity) emit(i, pos);
  }
}
