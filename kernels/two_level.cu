// Two-level cuckoo hashing (two-level-cuckoo.txt: HH Hash, after Alcantara's two-level table).
// Host side: src/table/two_level/mod.rs. Assembled after kernels/common/*.cuh (src/kernels.rs).
//
// First level: a hash of the key (wm_part_of under the table's part seed, the multisplit's part
// function) picks one of `buckets` buckets. An insert batch is first split by bucket in one
// multisplit pass on the host side's stream (src/table/engine/multisplit.rs; the paper lost 80 %
// of its time in a merge sort by bucket): the kernels here get the batch's keys grouped by
// bucket, each with its index in the caller's batch, and the `buckets + 1` offsets.
//
// Second level: a bucket is TL_D subtables of TL_SUB slots (TL_SLOTS in all), laid out one after
// the other in global memory, each cut into cells of TL_CELL slots: 32 bytes, one memory sector
// (4 packed slots, or 2 of 16 bytes). Key k of bucket b has one candidate cell per hash function
// j in [0, TL_D): in subtable (s0 + j) mod TL_D, where s0 = umulhi(h.y, TL_D), at cell
// umulhi(fmix32(h.x + j * h.y), TL_SUB / TL_CELL) of it, where h = wm_hash_key(k, seeds[b])
// (tl_cell; host twin `cell_of` in the table file). The rotation by s0 spreads the keys' first
// choices over every subtable. A lookup reads its candidate cells in order, a thread per key,
// one sector each, and stops at the first cell that holds the key or has an empty slot: the
// build places a key in its cell j only after its cells 0 .. j-1 were full (see below), and a
// full cell never gets an empty slot again (erase leaves a tombstone), so a key is never behind
// a cell with room. Most hits read one sector, most misses one or two.
//
// The insert kernel runs one thread block per bucket that the batch touches (other buckets are
// not rebuilt). The block loads the bucket's slots into shared memory, merges the batch's keys
// for that bucket (a key already present is updated or kept; duplicates within the batch are
// found with a small shared-memory hash set, so each new key enters once), and cuckoo-hashes
// all of the bucket's keys in shared memory in rounds (Alcantara's parallel cuckoo hashing, with
// cells and a queue): a key claims the first free slot of its current cell (atomicCAS from
// empty, slot by slot; a slot once taken is never empty again in an attempt); when the cell is
// full it exchanges itself into a pseudo-random slot of it, and atomicExch hands it the key it
// displaced, which goes to the next round's queue with its next cell. Round 0 places every key
// at its first cell; later rounds only the queued ones, so the rounds cost what is left to
// place rather than the whole bucket. A key leaves a cell only when that cell is full, which is
// the lookups' stopping rule. Every shared word that more than one thread may write between two
// barriers is written with an atomic (racecheck). When no more keys are left than the slots
// cannot hold (and after one settling round: each left key takes the first free slot of its
// cells, evicting nobody), the bucket is written back in one coalesced pass over its TL_SLOTS
// slots and the left keys go to the stash (below). A bucket that leaves more than TL_SLACK
// keys beyond those within max_iterations rounds is rebuilt with a new seed (tl_next_seed; host
// twin `next_seed`), at most max_rebuilds times (counted in stats[0]; the last seed's layout is
// taken whatever it leaves); a bucket whose queue overflows on every seed, that finds the stash
// full (stats[3]), or whose keys exceed TL_ITEMS, keeps its old layout (with its updated values)
// and reports its new keys TABLE_FULL (stats[1] counts the failed builds): the host then splits
// buckets (more buckets, re-bucketed) and inserts those keys again, so no key is dropped. The
// host also splits before a batch that could overflow a bucket.
//
// Slots: a 4-byte key with a 4-byte value packs into one 64-bit word (key in the low half);
// other widths (4 or 8 bytes each) take 16 bytes {key, value}, each zero-extended. An empty slot
// is all ones: its key reads as WM_KEY_EMPTY. User keys equal to the sentinels live on the side
// path (kernels/common/side.cuh), so every key value is insertable. Erase turns the key's slot
// into a tombstone (WM_KEY_TOMBSTONE) with a CAS: the cell stays without an empty slot, so the
// lookups' stopping rule holds; the next rebuild of the bucket drops its tombstones.
//
// The stash (holding load 0.95): a bucket's share of the keys varies (at load 0.95 a bucket of
// 1536 slots averages 1459 keys, sd about 38, and the fullest of 10^5 buckets needs more slots
// than it has), so a build may take up to TL_ITEMS keys, TL_EXTRA more than its slots, and the
// keys it leaves unplaced (those beyond its slots, and what the cuckoo rounds leave near a full
// bucket: at most TL_SLACK more than those, else the bucket tries a new seed) go to one stash
// shared by all buckets: an open-addressing table of t.stash_cells cells (linear probing by
// cells from a hash of the key under t.stash_seed), at most half of whose slots are ever used
// (a build reserves its slots in stats[2] first; a build that finds the stash full fails, its
// new keys TABLE_FULL, and the host splits). A stashed key sets a bit (from the same hash) in
// its bucket's 16-bit stash mask, kept in the top bits of the bucket's seed word (seeds are 48
// bits), so a lookup reads it with the seed; one that does not find its key in the bucket's
// cells probes the stash only when the key's bit is set (at load 0.95 a bucket stashes about
// half a key on average). Stashed keys stay in the
// stash until the table re-buckets (a rebuild of the bucket does not pull them back: the mask
// keeps them reachable whatever the bucket's new layout), erase leaves a tombstone there too,
// and counts[b] counts a bucket's keys wherever they are (its slots and the stash).
//
// An insert batch arrives split by bucket with a payload per key (tl_payload): its value and its
// index in the caller's batch, packed by two_level_index before the split, so that the build
// reads values in the split's order (coalesced) and uses the index only for statuses.
//
// Kernels take the table's view (tl_view, twin of src/table/two_level/mod.rs TwoLevelView) and
// the batch (wm_bulk) by value. They run phase-separated: an insert (a rebuild of buckets in
// place) never shares a launch with finds or erases (the host refuses mixed batches).

#ifndef WM_ENGINE
#error "two_level.cu is a table module: built through src/table/engine/ (WM_ENGINE and its sizes)"
#endif
#if defined(WM_KEY_WIDE) || defined(WM_VALUE_WIDE)
#error "two_level stores keys and values of 4 or 8 bytes"
#endif
#ifndef WM_HASH
#define WM_HASH WM_HASH_MURMUR
#endif
#if !defined(TL_D) || !defined(TL_SUB) || !defined(TL_EXTRA)
#error "TL_D (hash functions, 2..4), TL_SUB (slots per subtable) and TL_EXTRA (items a build takes beyond its slots) must be defined"
#endif
#if TL_D < 2 || TL_D > 4
#error "TL_D must be 2, 3 or 4"
#endif

#define TL_SLOTS (TL_D * TL_SUB)
// Slots per cell: 32 bytes, one sector.
#if WM_KEY_BYTES == 4 && WM_VALUE_BYTES == 4
#define TL_CELL 4
#else
#define TL_CELL 2
#endif
static_assert(TL_SUB % 4 == 0, "subtables are whole cells (of 4 slots, or 2 wide ones)");
#define TL_SUB_CELLS (TL_SUB / TL_CELL)
// Items (keys) one bucket build holds: one per slot and TL_EXTRA more, which go to the stash
// (the host picks TL_EXTRA: up to an eighth of the slots, as shared memory allows).
#define TL_ITEMS (TL_SLOTS + TL_EXTRA)
// Keys a build may leave unplaced beyond those it has no slot for, before it tries a new seed
// (host twin: TwoLevelConfig::build_slack).
#define TL_SLACK (TL_SLOTS / 128)
// The duplicate filter's size: a power of two at least 4/3 of the slots (linear probing; it
// holds at most TL_ITEMS keys, at most 0.85 of it).
#define TL_CLAIM_BITS (TL_SLOTS * 4 / 3 <= 512 ? 9 : TL_SLOTS * 4 / 3 <= 1024 ? 10 : TL_SLOTS * 4 / 3 <= 2048 ? 11 : TL_SLOTS * 4 / 3 <= 4096 ? 12 : 13)
#define TL_CLAIM (1u << TL_CLAIM_BITS)
#define TL_NO_ITEM 0xffffu
// A queue entry: an item (13 bits) and its next cell choice (2 bits) in 16.
#define TL_FN_SHIFT 13
#define TL_ITEM_MASK ((1u << TL_FN_SHIFT) - 1u)
// Entries per placement queue: round 0 displaces about a sixth of the items at load 0.95 and a
// quarter at 1.125; a round that displaces more than a third fails the attempt (the bucket
// starts over with a new seed).
#define TL_QUEUE (TL_ITEMS / 3 > 8 ? TL_ITEMS / 3 : 8)
#define TL_NO_CLAIM 0xffffffffu
static_assert(TL_ITEMS < 0xffff, "item indices are 16-bit (TL_NO_ITEM is all ones)");
static_assert(TL_ITEMS <= TL_ITEM_MASK, "queue entries hold an item in 13 bits");
static_assert(TL_CLAIM >= TL_SLOTS * 4 / 3, "TL_CLAIM_BITS: buckets of at most 6143 slots");
static_assert(TL_EXTRA <= TL_SLOTS / 8, "TL_EXTRA: at most an eighth of the slots (the filter's load)");

#if WM_KEY_BYTES == 4 && WM_VALUE_BYTES == 4
#define TL_PACKED 1
typedef u64 tl_slot;
__device__ __forceinline__ wm_key tl_key(tl_slot s) { return (u32)s; }
__device__ __forceinline__ wm_value tl_value(tl_slot s) { return (u32)(s >> 32); }
__device__ __forceinline__ tl_slot tl_make(wm_key k, wm_value v) { return (u64)k | ((u64)v << 32); }
__device__ __forceinline__ tl_slot tl_empty_slot() { return 0xffffffffffffffffull; }
#else
typedef ulonglong2 tl_slot;
__device__ __forceinline__ wm_key tl_key(tl_slot s) { return (wm_key)s.x; }
__device__ __forceinline__ wm_value tl_value(tl_slot s) { return (wm_value)s.y; }
__device__ __forceinline__ tl_slot tl_make(wm_key k, wm_value v) { return make_ulonglong2((u64)k, (u64)v); }
__device__ __forceinline__ tl_slot tl_empty_slot() { return make_ulonglong2(0xffffffffffffffffull, 0xffffffffffffffffull); }
#endif

// The table as the kernels see it: twin of src/table/two_level/mod.rs `TwoLevelView`.
struct tl_view {
  tl_slot* slots;             // buckets * TL_SLOTS slots
  u64* seeds;                 // per bucket: the seed of its second-level hash functions (low
                              // TL_SEED_BITS) and its stash mask (the 16 bits above)
  u32* counts;                // per bucket: keys stored, in its slots or the stash (side-path
                              // keys not included)
  u64* side;                  // the sentinel side path (kernels/common/side.cuh)
  u64* meta;                  // [stored keys, keys left unplaced by all inserts so far]
  u64* stats;                 // [bucket rebuilds with new seeds, bucket builds that failed,
                              //  stash slots taken, builds that found the stash full]
  const wm_key* batch_keys;   // insert: the batch's keys grouped by bucket (multisplit)
  const void* batch_payload;  // insert: each grouped key's tl_payload (value, batch index)
  const u64* batch_offsets;   // insert: buckets + 1 offsets into batch_keys
  tl_slot* stash;             // stash_cells * TL_CELL slots: keys their bucket did not place
  u32 buckets;
  u32 max_iterations;         // cuckoo rounds before a bucket is rebuilt with a new seed
  u32 max_rebuilds;           // new seeds tried before a bucket build fails
  u32 stash_cells;
  u64 part_seed;              // the first level's seed (wm_part_of)
  u64 stash_seed;             // the stash's hash seed
};
WM_CHECK_VIEW(tl_view);

// Cell j of key k in its bucket (TL_CELLS cells), from h = wm_hash_key(k, bucket seed). h.x and
// h.y are independent 32-bit hashes; function j is fmix32 of h.x + j * h.y, mapped onto the cells
// of subtable (s0 + j) mod TL_D by its high bits, s0 from the high bits of h.y. Host twin:
// `cell_of`.
__device__ __forceinline__ u32 tl_cell(uint2 h, u32 j) {
  u32 sub = __umulhi(h.y, TL_D) + j;
  sub = sub >= TL_D ? sub - TL_D : sub;
  return sub * TL_SUB_CELLS + wm_map_to_range(wm_fmix32(h.x + j * h.y), TL_SUB_CELLS);
}

// The batch payload: a key's value and its index in the caller's batch.
#if WM_VALUE_BYTES == 4
typedef u64 tl_payload;
__device__ __forceinline__ tl_payload tl_make_payload(wm_value v, u32 i) { return (u64)v | ((u64)i << 32); }
__device__ __forceinline__ wm_value tl_payload_value(tl_payload p) { return (u32)p; }
__device__ __forceinline__ u32 tl_payload_index(tl_payload p) { return (u32)(p >> 32); }
#else
typedef ulonglong2 tl_payload;
__device__ __forceinline__ tl_payload tl_make_payload(wm_value v, u32 i) { return make_ulonglong2((u64)v, (u64)i); }
__device__ __forceinline__ wm_value tl_payload_value(tl_payload p) { return (wm_value)p.x; }
__device__ __forceinline__ u32 tl_payload_index(tl_payload p) { return (u32)p.y; }
#endif

// The TL_CELL slots of the cell at global slot index `first` (32-byte aligned: buckets are
// whole cells), read as two 16-byte loads of one sector.
__device__ __forceinline__ void tl_load_cell(const tl_slot* slots, u64 first, tl_slot (&cell)[TL_CELL]) {
  const ulonglong2* p = reinterpret_cast<const ulonglong2*>(slots + first);
  const ulonglong2 a = p[0], b = p[1];
#if defined(TL_PACKED)
  cell[0] = a.x;
  cell[1] = a.y;
  cell[2] = b.x;
  cell[3] = b.y;
#else
  cell[0] = a;
  cell[1] = b;
#endif
}

// A bucket's seed word: its seed in the low TL_SEED_BITS, its stash mask in the 16 above.
#define TL_SEED_BITS 48
#define TL_SEED_MASK ((1ull << TL_SEED_BITS) - 1ull)
__device__ __forceinline__ u64 tl_seed(u64 word) { return word & TL_SEED_MASK; }
__device__ __forceinline__ u32 tl_mask(u64 word) { return (u32)(word >> TL_SEED_BITS); }

// The seed a bucket is rebuilt with after `seed` found no layout (host twin `next_seed`).
__device__ __forceinline__ u64 tl_next_seed(u64 seed) { return wm_fmix64(seed + 0x9e3779b97f4a7c15ull) & TL_SEED_MASK; }

// The bucket of key k (the multisplit's part of k).
__device__ __forceinline__ u32 tl_bucket_of(const tl_view& t, const wm_key& k) {
  return wm_part_of<WM_HASH>(k, t.part_seed, t.buckets);
}

// The stash's hash of k: .x picks its first cell, the top 4 bits of .y its bit in its
// bucket's 16-bit stash mask. Independent of the bucket's seed, which a rebuild may change.
__device__ __forceinline__ uint2 tl_stash_hash(const tl_view& t, const wm_key& k) {
  return wm_hash_key<WM_HASH>(k, t.stash_seed);
}
__device__ __forceinline__ u32 tl_stash_bit(uint2 hs) { return 1u << (hs.y >> 28); }

// The stash slot holding k (its contents in *seen), or nullptr: cells from k's first one, in
// order and wrapping, up to the one holding k or the first with an empty slot. Keys are only
// ever added while k is not being added (a build adds only its own bucket's keys), so a look
// racing with other buckets' inserts still finds k if it was there before the launch.
__device__ __forceinline__ tl_slot* tl_stash_locate(const tl_view& t, uint2 hs, const wm_key& k, tl_slot* seen) {
  u32 c = wm_map_to_range(hs.x, t.stash_cells);
  for (u32 step = 0; step < t.stash_cells; step++) {
    const u64 first = (u64)c * TL_CELL;
    tl_slot cell[TL_CELL];
    tl_load_cell(t.stash, first, cell);
#pragma unroll
    for (u32 e = 0; e < TL_CELL; e++) {
      const wm_key x = tl_key(cell[e]);
      if (wm_key_eq(x, k)) {
        *seen = cell[e];
        return t.stash + first + e;
      }
      if (wm_key_eq(x, WM_KEY_EMPTY)) return nullptr;
    }
    c = c + 1 == t.stash_cells ? 0u : c + 1;
  }
  return nullptr;
}

// The stash slot of k when its bucket's mask says it may be there (`mask`: the bucket's), or
// nullptr.
__device__ __forceinline__ tl_slot* tl_stash_find(const tl_view& t, u32 mask, const wm_key& k, tl_slot* seen) {
  if (mask == 0) return nullptr;
  const uint2 hs = tl_stash_hash(t, k);
  return (mask & tl_stash_bit(hs)) != 0 ? tl_stash_locate(t, hs, k, seen) : nullptr;
}

// Adds k -> v (absent from the stash, a slot reserved for it) at the first empty slot from its
// first cell, and returns its bit for its bucket's mask. The reservation (at most half the
// slots taken) guarantees an empty slot.
__device__ __forceinline__ u32 tl_stash_add(const tl_view& t, const wm_key& k, const wm_value& v) {
  const uint2 hs = tl_stash_hash(t, k);
  u32 c = wm_map_to_range(hs.x, t.stash_cells);
  for (bool placed = false; !placed; c = c + 1 == t.stash_cells ? 0u : c + 1) {
    tl_slot* const cell = t.stash + (u64)c * TL_CELL;
    for (u32 e = 0; e < TL_CELL && !placed; e++) {
#if defined(TL_PACKED)
      placed = atomicCAS(cell + e, tl_empty_slot(), tl_make(k, v)) == tl_empty_slot();
#else
      // The key word claims the slot; nothing reads the value before the launch ends.
      placed = atomicCAS(&cell[e].x, ~0ull, (u64)k) == ~0ull;
      if (placed) cell[e].y = (u64)v;
#endif
    }
  }
  return tl_stash_bit(hs);
}

// Replaces the value of the stashed pair at p (its key stays): an insert's update.
__device__ __forceinline__ void tl_stash_assign(tl_slot* p, const wm_key& k, const wm_value& v) {
#if defined(TL_PACKED)
  atomicExch(p, tl_make(k, v));
#else
  atomicExch(&p->y, (u64)v);
#endif
}

// Looks k (not a sentinel) up: the slot holding it (in its bucket or the stash; its contents in
// *seen, its bucket in *bucket), or nullptr. Reads k's cells in order and stops at the one
// holding k or the first with an empty slot (the stopping rule); then the stash, if the
// bucket's mask has k's bit.
__device__ __forceinline__ tl_slot* tl_locate(const tl_view& t, const wm_key& k, tl_slot* seen, u32* bucket) {
  const u32 b = tl_bucket_of(t, k);
  *bucket = b;
  const u64 word = t.seeds[b];
  const uint2 h = wm_hash_key<WM_HASH>(k, tl_seed(word));
  const u64 base = (u64)b * TL_SLOTS;
#pragma unroll
  for (u32 j = 0; j < TL_D; j++) {
    const u64 first = base + (u64)tl_cell(h, j) * TL_CELL;
    tl_slot cell[TL_CELL];
    tl_load_cell(t.slots, first, cell);
    bool room = false;
#pragma unroll
    for (u32 e = 0; e < TL_CELL; e++) {
      const wm_key x = tl_key(cell[e]);
      if (wm_key_eq(x, k)) {
        *seen = cell[e];
        return t.slots + first + e;
      }
      room |= wm_key_eq(x, WM_KEY_EMPTY);
    }
    if (room) break;
  }
  return tl_stash_find(t, tl_mask(word), k, seen);
}

// The item of k in a layout held in shared memory (item per slot), or TL_NO_ITEM.
__device__ __forceinline__ u32 tl_find_item(const u32* s_table, const wm_key* s_keys, uint2 h, const wm_key& k) {
  u32 hit = TL_NO_ITEM;
#pragma unroll
  for (u32 j = 0; j < TL_D; j++) {
    const u32 first = tl_cell(h, j) * TL_CELL;
#pragma unroll
    for (u32 e = 0; e < TL_CELL; e++) {
      const u32 it = s_table[first + e];
      if (it != TL_NO_ITEM && wm_key_eq(s_keys[it], k)) hit = it;
    }
  }
  return hit;
}

// The duplicate filter: a shared-memory set of the batch keys (by their position r in the
// bucket's part of the batch) that are new to the bucket. Returns the filter slot holding k, or
// TL_CLAIM when k is not in it (a side-path key, a present key, or a filter that overflowed).
__device__ __forceinline__ u32 tl_claim_find(const u32* s_claim, const wm_key* part, const wm_key& k, u32 start) {
  u32 x = start;
  for (u32 step = 0; step < TL_CLAIM; step++) {
    const u32 e = s_claim[x];
    if (e == TL_NO_CLAIM) return TL_CLAIM;
    if (wm_key_eq(part[e], k)) return x;
    x = (x + 1u) & (TL_CLAIM - 1u);
  }
  return TL_CLAIM;
}

// Places item i (key s_keys[i], hash under `seed`) at its cell `fn`: the cell's first free slot
// (CAS from empty: a slot once taken stays taken in an attempt), or, the cell being full, a
// pseudo-random slot of it, whose item it displaces; the displaced item goes to `queue` with its
// next cell (its own cell choice is the one whose cell this is). A full queue sets *qfull.
__device__ __forceinline__ void tl_place(u32* s_table, const wm_key* s_keys, unsigned short* queue, u32* qlen,
                                         u32* qfull, u64 seed, u32 i, u32 fn, u32 round) {
  const u32 cell = tl_cell(wm_hash_key<WM_HASH>(s_keys[i], seed), fn);
  const u32 first = cell * TL_CELL;
  u32 e = 0;
  while (e < TL_CELL && atomicCAS(&s_table[first + e], TL_NO_ITEM, i) != TL_NO_ITEM) e++;
  if (e < TL_CELL) return;
  e = __umulhi(wm_fmix32(i * 0x9e3779b9u + round), TL_CELL);
  const u32 out = atomicExch(&s_table[first + e], i);
  const uint2 h = wm_hash_key<WM_HASH>(s_keys[out], seed);
  u32 j = 0;
  while (j + 1 < TL_D && tl_cell(h, j) != cell) j++;
  j = j + 1 == TL_D ? 0u : j + 1;
  const u32 at = atomicAdd(qlen, 1u);
  if (at < TL_QUEUE) {
    queue[at] = (unsigned short)(out | (j << TL_FN_SHIFT));
  } else {
    atomicExch(qfull, 1u);
  }
}

// Item i takes the first free slot of its cells, in order, evicting nobody: true if placed. An
// earlier cell it passes is full and stays full in the attempt, so the stopping rule holds.
__device__ __forceinline__ bool tl_settle(u32* s_table, const wm_key* s_keys, u64 seed, u32 i) {
  const uint2 h = wm_hash_key<WM_HASH>(s_keys[i], seed);
  for (u32 j = 0; j < TL_D; j++) {
    const u32 first = tl_cell(h, j) * TL_CELL;
    for (u32 e = 0; e < TL_CELL; e++) {
      if (atomicCAS(&s_table[first + e], TL_NO_ITEM, i) == TL_NO_ITEM) return true;
    }
  }
  return false;
}

// Inserts b.keys[i] -> b.values[i] (b.status, if not null, gets each key's status), given the
// batch grouped by bucket in t.batch_* (the host's multisplit). One block per bucket, striding.
// t.meta[0] counts the stored keys, t.meta[1] the keys left unplaced; t.stats the rebuilds,
// failed builds and the stash's slots.
extern "C" __global__ void __launch_bounds__(WM_BLOCK) two_level_insert(tl_view t, wm_bulk b) {
  const tl_payload* const payload = static_cast<const tl_payload*>(t.batch_payload);
  __shared__ wm_key s_keys[TL_ITEMS];
  __shared__ wm_value s_vals[TL_ITEMS];
  __shared__ u32 s_table[TL_SLOTS];                   // item index per slot (TL_NO_ITEM: empty);
                                                      // 32-bit for the rounds' atomics
  __shared__ unsigned short s_from[TL_SLOTS];         // existing item (at most one per slot): its old slot
  __shared__ unsigned short s_queue[2][TL_QUEUE];     // items left to place, with their next cell
  __shared__ u32 s_qlen[2];                           // entries in each queue
  __shared__ u32 s_qfull;                             // a queue overflowed: the attempt fails
  __shared__ u32 s_claim[TL_CLAIM];                   // duplicate filter: positions r in the part
  __shared__ unsigned short s_claim_item[TL_CLAIM];   // the item of the key in each filter slot
  __shared__ u32 s_n;                                 // items that were in the bucket (pass 1)
  __shared__ u32 s_new;                               // new items (pass 2), after those
  __shared__ u32 s_overflow;                          // more new keys than the bucket can take
  __shared__ u32 s_stash_ok;                          // the stash had room for the left items
  __shared__ u32 s_mask;                              // the bucket's stash mask, with new bits

  const bool assign = b.assign != 0u;
  const u32 present_code = assign ? WM_STATUS_UPDATED : WM_STATUS_PRESENT;
  long long inserted = 0, failed = 0, rebuilds = 0, failed_builds = 0;

  for (u32 bucket = blockIdx.x; bucket < t.buckets; bucket += gridDim.x) {
    const u64 off = t.batch_offsets[bucket];
    const u32 n_raw = (u32)(t.batch_offsets[bucket + 1] - off);
    if (n_raw == 0) continue;  // untouched: not rebuilt (uniform across the block)
    tl_slot* const slots = t.slots + (u64)bucket * TL_SLOTS;
    const wm_key* const part = t.batch_keys + off;
    const u64 seed_word = t.seeds[bucket];
    u64 seed = tl_seed(seed_word);
    // Its stash mask: only this block changes it in this launch (step 4).
    const u32 mask = tl_mask(seed_word);

    // 1. The bucket's current keys become items 0..c-1; s_table holds the old layout (its
    // tombstones are not items: the rebuild drops them).
    if (threadIdx.x == 0) {
      s_n = 0;
      s_new = 0;
      s_overflow = 0;
    }
    for (u32 x = threadIdx.x; x < TL_CLAIM; x += WM_BLOCK) s_claim[x] = TL_NO_CLAIM;
    __syncthreads();
    // A bucket with no keys (a first batch, or only tombstones) is not read: every slot is
    // rewritten when it is rebuilt, and a failed build leaves its slots as they are.
    const u32 old_count = t.counts[bucket];  // its keys, in its slots and the stash
    const bool was_empty = old_count == 0u;
    for (u32 s = threadIdx.x; s < TL_SLOTS; s += WM_BLOCK) {
      const tl_slot v = was_empty ? tl_empty_slot() : slots[s];  // coalesced
      u32 item = TL_NO_ITEM;
      if (wm_side_slot(tl_key(v)) < 0) {  // neither empty nor a tombstone
        item = atomicAdd(&s_n, 1u);
        s_keys[item] = tl_key(v);
        s_vals[item] = tl_value(v);
        s_from[item] = (unsigned short)s;
      }
      s_table[s] = item;
    }
    __syncthreads();
    // Items that were in the bucket before. s_n is not written again before the next bucket:
    // pass 2 counts new items in s_new, so a warp that reads this late still reads c.
    const u32 c = s_n;

    // 2. Merge the batch: the side path; present keys (probed in the old layout: updated or
    // kept); new keys go through the duplicate filter, whose first claimer takes an item.
    for (u32 r = threadIdx.x; r < n_raw; r += WM_BLOCK) {
      const wm_key k = part[r];
      const tl_payload p = payload[off + r];
      const u32 idx = tl_payload_index(p);
      const wm_value v = tl_payload_value(p);
      const int side_slot = wm_side_slot(k);
      if (side_slot >= 0) {
        const u32 st = wm_side_insert(t.side, side_slot, v, assign, inserted);
        if (b.status != nullptr) b.status[idx] = st;
        continue;
      }
      const uint2 h_old = wm_hash_key<WM_HASH>(k, seed);
      const u32 hit = c == 0u ? TL_NO_ITEM : tl_find_item(s_table, s_keys, h_old, k);
      if (hit != TL_NO_ITEM) {
        if (assign) atomicExch(&s_vals[hit], v);  // occurrences race: one of their values stays
        if (b.status != nullptr) b.status[idx] = present_code;
        continue;
      }
      tl_slot seen;
      tl_slot* const stashed = tl_stash_find(t, mask, k, &seen);
      if (stashed != nullptr) {  // present in the stash: it stays there
        if (assign) tl_stash_assign(stashed, k, v);
        if (b.status != nullptr) b.status[idx] = present_code;
        continue;
      }
      // Linear probing from the low bits of h.y (the cells use its high bits and fmix32 of
      // h.x + j h.y).
      u32 x = h_old.y & (TL_CLAIM - 1u);
      u32 step = 0;
      for (; step < TL_CLAIM; step++) {
        const u32 e = atomicCAS(&s_claim[x], TL_NO_CLAIM, r);
        if (e == TL_NO_CLAIM) {
          const u32 item = c + atomicAdd(&s_new, 1u);
          if (item < TL_ITEMS) {
            s_keys[item] = k;
            s_vals[item] = v;
            s_claim_item[x] = (unsigned short)item;
          } else {
            s_claim_item[x] = TL_NO_ITEM;
            atomicExch(&s_overflow, 1u);
          }
          break;
        }
        if (wm_key_eq(part[e], k)) break;  // a duplicate: its leader decides (pass 5)
        x = (x + 1u) & (TL_CLAIM - 1u);
      }
      if (step == TL_CLAIM) atomicExch(&s_overflow, 1u);  // the filter is full: far too many keys
    }
    __syncthreads();
    const bool overflow = s_overflow != 0u;
    const u32 n = overflow ? c : c + s_new;
    // Later occurrences of a new key replace its value (assign); otherwise the leader's stays.
    if (assign && !overflow) {
      for (u32 r = threadIdx.x; r < n_raw; r += WM_BLOCK) {
        const wm_key k = part[r];
        if (wm_side_slot(k) >= 0) continue;
        const u32 x = tl_claim_find(s_claim, part, k, wm_hash_key<WM_HASH>(k, seed).y & (TL_CLAIM - 1u));
        if (x == TL_CLAIM || s_claim[x] == r) continue;  // present, or the leader itself
        atomicExch(&s_vals[s_claim_item[x]], tl_payload_value(payload[off + r]));  // followers race
      }
    }

    // 3. Cuckoo-hash items 0..n-1 into the bucket's cells, in shared memory. Round 0 places
    // every item at its first cell; an item that finds the cell full exchanges itself into a
    // slot of it and the item it displaces (atomicExch returns it) is queued for its next cell.
    // Later rounds place only the queued items, so a round costs what is left to place, not
    // the bucket (the paper's divergence: "70 % of the computational resource is wasted").
    // The rounds stop when no more is queued than the items the slots cannot hold (`over`),
    // or at max_iterations; then, with a round to spare, each queued item takes the first free
    // slot of its cells if it has one (tl_settle). The items still left go to the stash if they
    // are at most TL_SLACK more than `over` (or on the last seed), else the bucket tries a new
    // seed.
    const u64 old_seed = seed;
    const u32 over = n > TL_SLOTS ? n - TL_SLOTS : 0u;
    u32 left = 0;  // items the accepted layout leaves to the stash, in s_queue[left_queue]
    u32 left_queue = 0;
    bool built = n == c;  // nothing new (or overflow): the old layout stands, values updated
    for (u32 attempt = 0; attempt <= t.max_rebuilds && !built; attempt++) {
      if (attempt > 0) {
        seed = tl_next_seed(seed);
        rebuilds += threadIdx.x == 0 ? 1 : 0;
      }
      __syncthreads();  // every thread is done reading s_table (old layout or last attempt)
      for (u32 s = threadIdx.x; s < TL_SLOTS; s += WM_BLOCK) s_table[s] = TL_NO_ITEM;
      if (threadIdx.x == 0) {
        s_qlen[0] = 0;
        s_qlen[1] = 0;
        s_qfull = 0;
      }
      __syncthreads();  // s_table cleared
      for (u32 i = threadIdx.x; i < n; i += WM_BLOCK) tl_place(s_table, s_keys, s_queue[0], &s_qlen[0], &s_qfull, seed, i, 0u, 0u);
      __syncthreads();
      // Rounds 1, 2, ...: round 0 counts as one of the max_iterations.
      u32 round = 1, cur = 0;
      for (;; round++, cur ^= 1u) {
        const u32 len = s_qlen[cur];
        if (s_qfull != 0u || len <= over || round >= t.max_iterations) break;
        if (threadIdx.x == 0) s_qlen[cur ^ 1u] = 0;  // nobody pushes to it before the barrier
        __syncthreads();
        for (u32 e = threadIdx.x; e < len; e += WM_BLOCK) {
          const u32 entry = s_queue[cur][e];
          tl_place(s_table, s_keys, s_queue[cur ^ 1u], &s_qlen[cur ^ 1u], &s_qfull, seed, entry & TL_ITEM_MASK, entry >> TL_FN_SHIFT, round);
        }
        __syncthreads();
      }
      if (s_qfull != 0u) continue;  // an item was dropped from the queue: the attempt failed
      u32 len = s_qlen[cur];
      if (len > 0u) {
        // The settling round (if a round is left), and the list of items left, in the other
        // queue.
        const bool settle = round < t.max_iterations;
        if (threadIdx.x == 0) s_qlen[cur ^ 1u] = 0;
        __syncthreads();
        for (u32 e = threadIdx.x; e < len; e += WM_BLOCK) {
          const u32 i = s_queue[cur][e] & TL_ITEM_MASK;
          if (!(settle && tl_settle(s_table, s_keys, seed, i))) {
            s_queue[cur ^ 1u][atomicAdd(&s_qlen[cur ^ 1u], 1u)] = (unsigned short)i;
          }
        }
        __syncthreads();
        len = s_qlen[cur ^ 1u];
        left_queue = cur ^ 1u;
      }
      if (len > over + TL_SLACK && attempt < t.max_rebuilds) continue;  // a new seed
      if (len > 0u) {
        // Reserve the stash's slots: at most half of them are ever taken (host twin
        // `stash_capacity`), so an add always finds an empty one. A full stash fails the build
        // (the host splits the table).
        if (threadIdx.x == 0) {
          const u64 cap = (u64)t.stash_cells * TL_CELL / 2;
          const u64 before = atomicAdd(&t.stats[2], (u64)len);
          s_stash_ok = before + len <= cap ? 1u : 0u;
          if (before + len > cap) {
            atomicAdd(&t.stats[2], (u64)0 - len);
            atomicAdd(&t.stats[3], 1ull);
          }
        }
        __syncthreads();
        if (s_stash_ok == 0u) break;
      }
      left = len;
      built = true;
    }
    __syncthreads();

    // 4. Write the bucket back in one coalesced pass and stash its left items, or keep its old
    // layout.
    const bool rebuilt = built && n != c;
    if (rebuilt) {
      for (u32 s = threadIdx.x; s < TL_SLOTS; s += WM_BLOCK) {
        const u32 it = s_table[s];
        slots[s] = it == TL_NO_ITEM ? tl_empty_slot() : tl_make(s_keys[it], s_vals[it]);
      }
      if (threadIdx.x == 0) s_mask = mask;
      __syncthreads();
      for (u32 e = threadIdx.x; e < left; e += WM_BLOCK) {
        const u32 i = s_queue[left_queue][e];
        atomicOr(&s_mask, tl_stash_add(t, s_keys[i], s_vals[i]));
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        t.seeds[bucket] = seed | ((u64)s_mask << TL_SEED_BITS);
        t.counts[bucket] = old_count + (n - c);
      }
    } else {
      // The old layout (old seed) with the values the batch replaced; new keys failed, if any.
      seed = old_seed;
      for (u32 i = threadIdx.x; i < c; i += WM_BLOCK) slots[s_from[i]] = tl_make(s_keys[i], s_vals[i]);
      if (threadIdx.x == 0 && !overflow && n != c) failed_builds++;
    }

    // 5. Statuses of the new keys (leaders) and of their other occurrences. Without statuses a
    // rebuilt bucket needs only its count of new keys (every leader was placed).
    const bool counted = b.status == nullptr && rebuilt;
    if (counted && threadIdx.x == 0) inserted += n - c;
    for (u32 r = threadIdx.x; r < n_raw && !counted; r += WM_BLOCK) {
      const wm_key k = part[r];
      if (wm_side_slot(k) >= 0) continue;
      const u32 x = tl_claim_find(s_claim, part, k, wm_hash_key<WM_HASH>(k, old_seed).y & (TL_CLAIM - 1u));
      if (x == TL_CLAIM && !overflow) continue;  // present: its status is written
      const u32 idx = tl_payload_index(payload[off + r]);
      u32 st;
      if (x == TL_CLAIM) {  // overflow: a filter that filled up may not hold k; present keys
        // were answered in pass 2 and are not rewritten here (they never reach the filter).
        // s_table still holds the old layout (no attempt ran).
        if (tl_find_item(s_table, s_keys, wm_hash_key<WM_HASH>(k, old_seed), k) != TL_NO_ITEM) continue;
        tl_slot seen;
        if (tl_stash_find(t, mask, k, &seen) != nullptr) continue;
        st = WM_STATUS_TABLE_FULL;
      } else if (s_claim[x] == r) {
        st = rebuilt ? WM_STATUS_OK : WM_STATUS_TABLE_FULL;
        inserted += rebuilt ? 1 : 0;
      } else {
        st = rebuilt ? present_code : WM_STATUS_TABLE_FULL;
      }
      failed += rebuilt ? 0 : 1;
      if (b.status != nullptr) b.status[idx] = st;
    }
    __syncthreads();  // shared memory is reused by the next bucket
  }
  wm_add_count(t.meta, inserted);
  wm_add_count(t.meta + 1, failed);
  wm_add_count(t.stats, rebuilds);
  wm_add_count(t.stats + 1, failed_builds);
}

// The payloads that travel with the keys through the multisplit: out[i] = (b.values[i], i) for
// i < b.n, written to b.status (a buffer of b.n tl_payloads).
extern "C" __global__ void two_level_index(tl_view, wm_bulk b) {
  tl_payload* out = reinterpret_cast<tl_payload*>(b.status);
  wm_for_each<1>(b.n, [&](u64 i) { out[i] = tl_make_payload(b.values[i], (u32)i); });
}

// b.found[i] = 1 and b.out[i] = value where b.keys[i] is present; 0 otherwise (b.out[i] left
// alone). b.out may be null (contains). At most TL_D sector reads per key, in one bucket, and
// the stash where the bucket's mask has the key's bit.
extern "C" __global__ void two_level_find(tl_view t, wm_bulk b) {
  wm_for_each<1>(b.n, [&](u64 idx) {
    const wm_key k = b.keys[idx];
    const int side_slot = wm_side_slot(k);
    bool hit;
    if (side_slot >= 0) {
      hit = wm_side_find<false>(t.side, side_slot, b.out != nullptr ? b.out + idx : nullptr);
    } else {
      tl_slot s;
      u32 bucket;
      hit = tl_locate(t, k, &s, &bucket) != nullptr;
      if (hit && b.out != nullptr) b.out[idx] = tl_value(s);
    }
    b.found[idx] = hit ? 1 : 0;
  });
}

// Turns the slot of every present key (in its bucket or the stash) into a tombstone (never
// empty: the lookups' stopping rules); t.meta[0] and the bucket's count decrease by the number erased (a key repeated in the
// batch is erased once: the CAS decides).
extern "C" __global__ void two_level_erase(tl_view t, wm_bulk b) {
  long long erased = 0;
  wm_for_each<1>(b.n, [&](u64 idx) {
    const wm_key k = b.keys[idx];
    const int side_slot = wm_side_slot(k);
    if (side_slot >= 0) {
      if (wm_side_erase(t.side, side_slot)) erased++;
      return;
    }
    tl_slot s;
    u32 bucket;
    tl_slot* const p = tl_locate(t, k, &s, &bucket);
    if (p == nullptr) return;
    const tl_slot tomb = tl_make(WM_KEY_TOMBSTONE, tl_value(s));
#if defined(TL_PACKED)
    const bool won = atomicCAS(p, s, tomb) == s;
#else
    // The key word decides; the value word is left as it was (a tombstone's value is unread).
    const bool won = atomicCAS(&p->x, s.x, tomb.x) == s.x;
#endif
    if (won) {
      erased++;
      atomicSub(t.counts + bucket, 1u);
    }
  });
  wm_add_count(t.meta, -erased);
}

// Mixed batches are refused by the host (an insert rebuilds whole buckets in place, which a
// concurrent find could see half moved). The engine binds a mixed kernel for every scheme, so
// this one exists: it answers the finds and reports every insert TABLE_FULL (counted as
// unplaced), never silently dropping one; erases are left alone.
extern "C" __global__ void two_level_mixed(tl_view t, wm_bulk b) {
  long long failed = 0;
  wm_for_each<1>(b.n, [&](u64 idx) {
    const u8 op = b.ops[idx];
    if (op == WM_OP_INSERT) {
      b.status[idx] = WM_STATUS_TABLE_FULL;
      failed++;
    } else if (op == WM_OP_FIND) {
      const wm_key k = b.keys[idx];
      const int side_slot = wm_side_slot(k);
      bool hit;
      if (side_slot >= 0) {
        hit = wm_side_find<false>(t.side, side_slot, b.out + idx);
      } else {
        tl_slot s;
        u32 bucket;
        hit = tl_locate(t, k, &s, &bucket) != nullptr;
        if (hit) b.out[idx] = tl_value(s);
      }
      b.found[idx] = hit ? 1 : 0;
    }
  });
  wm_add_count(t.meta + 1, failed);
}

// Writes every stored pair (the buckets' and the stash's) to b.out_keys / b.out at positions from *b.counter, at most b.n of
// them, in no particular order (kernels/common/bulk.cuh wm_compact).
extern "C" __global__ void two_level_retrieve(tl_view t, wm_bulk b) {
  wm_side_retrieve(t.side, (u64)blockIdx.x * blockDim.x + threadIdx.x, b.out_keys, b.out, b.counter, b.n);
  tl_slot s;
  const u64 bucket_slots = (u64)t.buckets * TL_SLOTS;
  wm_compact(
      bucket_slots + (u64)t.stash_cells * TL_CELL, b.counter, b.n,
      [&](u64 i) {
        s = i < bucket_slots ? t.slots[i] : t.stash[i - bucket_slots];
        return wm_side_slot(tl_key(s)) < 0;  // neither empty nor a tombstone
      },
      [&](u64, u64 pos) {
        b.out_keys[pos] = tl_key(s);
        b.out[pos] = tl_value(s);
      });
}
