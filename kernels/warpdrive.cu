// WarpDrive: static open addressing with coalesced-group probing (warpdrive.txt §IV-A, Fig. 3).
// Host side: src/table/warpdrive.rs. Assembled after kernels/common/*.cuh (src/kernels.rs).
//
// A coalesced group (CG) of G = WM_GROUP_SIZE consecutive lanes handles one key. The table is
// `windows` windows of G consecutive slots; `windows` is prime. The CG loads a whole window in
// one coalesced access (each lane one slot), ballots for a matching key and for free slots,
// claims the leftmost free slot with one CAS, and otherwise moves to the next window by double
// hashing: w <- (w + step) mod windows, step in [1, windows-1], so all windows are visited.
// Probing stops after max_probes windows (the paper's p_max) with a per-key status.
//
// Slot layouts (src/table/warpdrive.rs `SlotLayout`):
// - Packed (4-byte key, 4-byte value): one 64-bit word, key in the low half, placed by one
//   64-bit CAS (the paper's layout);
// - Pair (4- or 8-byte keys and values, not both 4): 16 bytes {key, value}, each zero-extended
//   to 8 bytes, placed by one 128-bit CAS on sm_90+ (lock-free, the value lands with the key);
//   before sm_90 the key is claimed by a 64-bit CAS and the value stored after it.
// - Tagged (keys or values wider than 8 bytes; the paper's SoA "struct of arrays" for longer
//   keys): three arrays, a 4-byte tag per slot, then the keys, then the values. The tag is the
//   slot's state (empty, tombstone, being written) or the key's 32-bit fingerprint. An insert
//   claims a slot by CAS on its tag (empty -> being written), writes key and value, then
//   publishes the fingerprint after a fence; a search compares fingerprints in the window (one
//   coalesced 4|g|-byte load) and reads a key only where they match. No key value is reserved,
//   so there is no side path. As the paper notes for SoA, a value being replaced while it is read
//   in the same launch may be read half old, half new.
// A loaded slot (or tag) is a `wd_seen`; layout differences live in the wd_* helpers below.
//
// Beyond the paper: (1) erase writes tombstones; an insert that passed a tombstone keeps probing
// to the end of the chain (a window with an empty slot) so that a key is never stored twice,
// then claims the first free slot it saw. (2) User keys equal to the sentinels go to `side`,
// two (occupied, value) pairs, so every key value is insertable. (3) The overflow filter
// (WD_FILTER_BITS = B in {1, 2, 4, 8}; 0: none): B bits per window. Each key owns one of them
// (from its hash); an insert that moves on from a window without an empty slot sets its bit of
// that window first. Bits are never cleared (until clear/rehash), so a search that finds neither
// its key nor an empty slot in window w, and whose bit of w is clear, knows no chain of its key
// went past w: it stops there. In the paper's scheme an absent key walks to the first window
// with an empty slot (~7.6 windows at load 0.95 with |g| = 4); with B = 2, ~2.5 windows; B = 8,
// ~1.3 (bench/NOTES.md). The host picks B so the filter fits in a quarter of the L2 cache: its
// reads and atomics must not cost DRAM accesses of their own.

#ifndef WM_GROUP_SIZE
#error "WM_GROUP_SIZE must be defined (1, 2, 4, 8, 16 or 32)"
#endif
#if (WM_GROUP_SIZE & (WM_GROUP_SIZE - 1)) != 0 || WM_GROUP_SIZE > 32
#error "WM_GROUP_SIZE must be a power of two <= 32"
#endif

#ifndef WM_HASH
#define WM_HASH WM_HASH_MURMUR
#endif
#define WD_G WM_GROUP_SIZE
#ifndef WD_FILTER_BITS
#error "WD_FILTER_BITS must be defined (0, 1, 2, 4 or 8)"
#endif
#if WD_FILTER_BITS != 0 && WD_FILTER_BITS != 1 && WD_FILTER_BITS != 2 && WD_FILTER_BITS != 4 && WD_FILTER_BITS != 8
#error "WD_FILTER_BITS must be 0, 1, 2, 4 or 8"
#endif
#define WD_NO_SLOT 0xffffffffffffffffull

#if WM_KEY_BYTES == 4 && WM_VALUE_BYTES == 4
#define WD_LAYOUT_PACKED 1
typedef u64 wd_slot;
typedef u64 wd_seen;
#define WD_TOMBSTONE_WORD 0xfffffffffffffffeull  // key = WM_KEY_TOMBSTONE, value = all ones
__device__ __forceinline__ wm_key wd_key(wd_seen s) { return (u32)s; }
__device__ __forceinline__ u64 wd_make(wm_key k, wm_value v) { return (u64)k | ((u64)v << 32); }
#elif WM_KEY_BYTES <= 8 && WM_VALUE_BYTES <= 8
#define WD_LAYOUT_PAIR 1
// x: the key, y: the value, both zero-extended. An empty slot is all ones (so a 4-byte key reads
// as WM_KEY_EMPTY); a tombstone's x is the zero-extended WM_KEY_TOMBSTONE.
typedef ulonglong2 wd_slot;
typedef ulonglong2 wd_seen;
__device__ __forceinline__ wm_key wd_key(wd_seen s) { return (wm_key)s.x; }
#else
#define WD_LAYOUT_TAGGED 1
typedef u32 wd_slot;  // the tag array; the key and value arrays follow it (wd_arrays)
typedef u32 wd_seen;
#define WD_TAG_EMPTY 0xffffffffu
#define WD_TAG_TOMBSTONE 0xfffffffeu
#define WD_TAG_BUSY 0xfffffffdu  // claimed, key and value being written
#endif

// The table's arrays: the slots (or tags), and for the tagged layout the keys and values after
// them, windows * G of each, each array starting at a multiple of 16 bytes (src/table/
// warpdrive.rs `tagged_offsets` computes the same).
struct wd_arrays {
  wd_slot* slots;
#if defined(WD_LAYOUT_TAGGED)
  wm_key* keys;
  wm_value* values;
#endif
  __device__ __forceinline__ wd_arrays(const wd_slot* s, u32 windows) : slots(const_cast<wd_slot*>(s)) {
#if defined(WD_LAYOUT_TAGGED)
    const u64 n = (u64)windows * WD_G;
    const u64 key_offset = (n * 4u + 15u) & ~15ull;
    const u64 value_offset = key_offset + ((n * sizeof(wm_key) + 15u) & ~15ull);
    keys = reinterpret_cast<wm_key*>(reinterpret_cast<u8*>(slots) + key_offset);
    values = reinterpret_cast<wm_value*>(reinterpret_cast<u8*>(slots) + value_offset);
#endif
  }
};

// Slot states, from a loaded slot or tag.
__device__ __forceinline__ bool wd_is_empty(wd_seen s) {
#if defined(WD_LAYOUT_TAGGED)
  return s == WD_TAG_EMPTY;
#else
  return wd_key(s) == WM_KEY_EMPTY;
#endif
}
__device__ __forceinline__ bool wd_is_tombstone(wd_seen s) {
#if defined(WD_LAYOUT_TAGGED)
  return s == WD_TAG_TOMBSTONE;
#else
  return wd_key(s) == WM_KEY_TOMBSTONE;
#endif
}
// A slot claimed by an insert whose key is not yet readable (tagged layout only).
__device__ __forceinline__ bool wd_is_busy(wd_seen s) {
#if defined(WD_LAYOUT_TAGGED)
  return s == WD_TAG_BUSY;
#else
  return false;
#endif
}

// Loads slot i. `coherent`: from L2 (not L1, which is not coherent across SMs), for inserts and
// erases, which re-read slots that other SMs change during the same launch. (Streaming hints
// here and on keys and results cost 3-6 %: change 9 in bench/NOTES.md.)
template <bool coherent>
__device__ __forceinline__ wd_seen wd_load(const wd_slot* slots, u64 i) {
  return coherent ? __ldcg(slots + i) : slots[i];
}

// Loads a key or value record; `coherent`: from L2, word by word.
template <bool coherent, typename T>
__device__ __forceinline__ T wd_load_record(const T* p) {
  if (!coherent) return *p;
  T v;
  const u32* src = reinterpret_cast<const u32*>(p);
  u32* dst = reinterpret_cast<u32*>(&v);
#pragma unroll
  for (int w = 0; w < (int)(sizeof(T) / 4); w++) dst[w] = __ldcg(src + w);
  return v;
}

// Broadcasts a loaded slot from group rank `src` to the group.
template <int G>
__device__ __forceinline__ wd_seen wd_shfl(const wm_group<G>& g, wd_seen s, u32 src) {
#if defined(WD_LAYOUT_PAIR)
  return make_ulonglong2(g.shfl(s.x, src), g.shfl(s.y, src));
#else
  return g.shfl(s, src);
#endif
}

// The value of slot i, whose contents (or tag) were `s`. `concurrent`: inserts may be running.
template <bool concurrent>
__device__ __forceinline__ wm_value wd_read_value(const wd_arrays& a, u64 i, wd_seen s) {
#if defined(WD_LAYOUT_PACKED)
  return (wm_value)(s >> 32);
#elif defined(WD_LAYOUT_PAIR) && WM_HAS_CAS128
  // A no-op CAS returns the slot's 16 bytes as one atomic read (a plain 16-byte load may tear
  // into a new key beside an old value).
  return concurrent ? (wm_value)wm_cas128(a.slots + i, s, s).y : (wm_value)s.y;
#elif defined(WD_LAYOUT_PAIR)
  return (wm_value)s.y;
#elif WM_VALUE_BYTES <= 8
  return concurrent ? __ldcg(a.values + i) : a.values[i];  // one aligned word: never torn
#else
  if (!concurrent) return a.values[i];
  // A wide value may be being replaced: hold the slot (its tag `s`, the key's fingerprint, set
  // to "being written") while reading, as writers do (wd_store_value).
  while (atomicCAS(a.slots + i, s, WD_TAG_BUSY) != s) {
  }
  const wm_value v = wd_load_record<true>(a.values + i);
  __threadfence();
  atomicExch(a.slots + i, s);
  return v;
#endif
}

// Replaces the value of slot i, whose key is already k (tagged layout: whose tag was `s`).
__device__ __forceinline__ void wd_store_value(const wd_arrays& a, u64 i, wd_seen s, const wm_key& k,
                                               const wm_value& v) {
#if defined(WD_LAYOUT_PACKED)
  atomicExch(a.slots + i, wd_make(k, v));
#elif defined(WD_LAYOUT_PAIR)
  atomicExch(&a.slots[i].y, (u64)v);
#elif WM_VALUE_BYTES == 4
  atomicExch(a.values + i, v);
#elif WM_VALUE_BYTES == 8
  atomicExch(reinterpret_cast<unsigned long long*>(a.values + i), (unsigned long long)v);
#else
  // Wider than one atomic: hold the slot while writing, so that two writers never interleave
  // words and a concurrent reader (which holds it too) sees the old or the new value.
  while (atomicCAS(a.slots + i, s, WD_TAG_BUSY) != s) {
  }
  a.values[i] = v;
  __threadfence();
  atomicExch(a.slots + i, s);
#endif
}

// Tries to claim free slot i, last seen holding `seen` (an empty or tombstone key), for (k, v).
// Returns 1 when claimed, 2 when the slot meanwhile holds k (its value replaced if `assign`),
// 0 when lost to another key. `fingerprint`: the tagged layout's tag for k.
__device__ __forceinline__ int wd_claim(const wd_arrays& a, u64 i, wd_seen seen, const wm_key& k,
                                        const wm_value& v, bool assign, u32 fingerprint) {
  wd_slot* slots = a.slots;
#if defined(WD_LAYOUT_TAGGED)
  // Lost to another insert: the caller rescans the window, where it waits while the slot is
  // being written and then compares its key.
  if (atomicCAS(slots + i, seen, WD_TAG_BUSY) != seen) return 0;
  a.keys[i] = k;
  a.values[i] = v;
  __threadfence();  // key and value before the tag that makes them visible
  atomicExch(slots + i, fingerprint);
  return 1;
#elif defined(WD_LAYOUT_PACKED)
  const u64 old = atomicCAS(slots + i, seen, wd_make(k, v));
  if (old == seen) return 1;
  if (wd_key(old) == k) {
    if (assign) atomicExch(slots + i, wd_make(k, v));
    return 2;
  }
  return 0;
#elif defined(WD_LAYOUT_PAIR) && WM_HAS_CAS128
  const ulonglong2 old = wm_cas128(slots + i, seen, make_ulonglong2((u64)k, (u64)v));
  if (old.x == seen.x && old.y == seen.y) return 1;
  if (old.x == (u64)k) {
    if (assign) atomicExch(&slots[i].y, (u64)v);
    return 2;
  }
  return 0;
#else
  const u64 old = atomicCAS(&slots[i].x, seen.x, (u64)k);
  if (old == seen.x || (old == (u64)k && assign)) atomicExch(&slots[i].y, (u64)v);
  return old == seen.x ? 1 : (old == (u64)k ? 2 : 0);
#endif
}

// Turns slot i, seen holding `seen` (a user key), into a tombstone. False if another erase won.
__device__ __forceinline__ bool wd_erase_at(const wd_arrays& a, u64 i, wd_seen seen) {
#if defined(WD_LAYOUT_PACKED)
  return atomicCAS(a.slots + i, seen, WD_TOMBSTONE_WORD) == seen;
#elif defined(WD_LAYOUT_PAIR)
  return atomicCAS(&a.slots[i].x, seen.x, (u64)WM_KEY_TOMBSTONE) == seen.x;
#else
  return atomicCAS(a.slots + i, seen, WD_TAG_TOMBSTONE) == seen;
#endif
}

struct wd_probe {
  u32 window;
  u32 step;
  u32 filter_bit;   // which of a window's WD_FILTER_BITS filter bits is the key's
  u32 fingerprint;  // the tagged layout's tag for the key (below WD_TAG_BUSY)
  __device__ __forceinline__ wd_probe(const wm_key& k, u32 windows, u64 seed) {
#if defined(WM_KEY_WIDE)
    const u64 h64 = wm_hash_words<WM_HASH, WM_KEY_BYTES / 4>(k.w, seed);
    const uint2 h = make_uint2((u32)h64, (u32)(h64 >> 32));
#else
    const uint2 h = wm_hash_pair<WM_HASH, WM_KEY_BYTES>((u64)k, seed);
#endif
#if defined(WD_LAYOUT_TAGGED)
    // Independent of window and step; below the three state tags.
    const u32 f = (u32)wm_fmix64(((u64)h.y << 32 | h.x) ^ 0x2545f4914f6cdd1dull);
    fingerprint = f >= WD_TAG_BUSY ? f - 3u : f;
#else
    fingerprint = 0;
#endif
    window = wm_map_to_range(h.x, windows);
    step = 1u + wm_map_to_range(h.y, windows - 1u);  // the high bits of h.y ...
    filter_bit = h.y & (WD_FILTER_BITS > 0 ? WD_FILTER_BITS - 1u : 0u);  // ... and the low ones
  }
  __device__ __forceinline__ void next(u32 windows) {
    window += step;
    if (window >= windows) window -= windows;
  }
};

// The filter bit of probe p's key in its current window: bit (window * B + filter_bit).
__device__ __forceinline__ u64 wd_filter_bit(const wd_probe& p) {
  return (u64)p.window * WD_FILTER_BITS + p.filter_bit;
}

// The filter word holding probe p's bit of its current window (0 without a filter). Searches
// load it together with the window, so that a key found beyond its first window does not wait
// for a filter read between two window reads (measured: change 8 in bench/NOTES.md).
// `coherent`: read from L2, for searches racing with inserts in one launch.
template <bool coherent>
__device__ __forceinline__ u32 wd_filter_word(const u32* filter, const wd_probe& p) {
  if (WD_FILTER_BITS == 0) return 0u;
  const u64 bit = wd_filter_bit(p);
  const u64 keep = wm_l2_keep_policy();
  return coherent ? wm_ldcg_hint(filter + (bit >> 5), keep) : wm_ld_hint(filter + (bit >> 5), keep);
}

// Whether some key with probe p's filter bit moved on from its current window, given the word
// wd_filter_word loaded for it (always true without a filter).
__device__ __forceinline__ bool wd_passed(u32 word, const wd_probe& p) {
  if (WD_FILTER_BITS == 0) return true;
  return (word >> (wd_filter_bit(p) & 31u)) & 1u;
}

// Records that a key with probe p's filter bit moves on from its current window: an atomicOr
// at L2 that nobody waits for (a reduction), under the keep-in-L2 policy. Measured (bench/NOTES.md
// changes 7-10): reading the word first to skip set bits, or loading it with the window, costs
// more than the redundant reductions it avoids.
__device__ __forceinline__ void wd_mark_passed(u32* filter, const wd_probe& p) {
  if (WD_FILTER_BITS == 0) return;
  const u64 bit = wd_filter_bit(p);
  wm_red_or_hint(filter + (bit >> 5), 1u << (bit & 31u), wm_l2_keep_policy());
}

// Whether slot i, seen holding `s`, holds key k (probe p). The tagged layout compares the
// fingerprint first and reads the key only where it matches; the fence orders that read after
// the tag (the inserter wrote the key before publishing the tag). `coherent`: read from L2.
template <bool coherent>
__device__ __forceinline__ bool wd_holds(const wd_arrays& a, u64 i, wd_seen s, const wm_key& k, const wd_probe& p) {
#if defined(WD_LAYOUT_TAGGED)
  if (s != p.fingerprint) return false;
  if (coherent) __threadfence();
  return wm_key_eq(wd_load_record<coherent>(a.keys + i), k);
#else
  return wm_key_eq(wd_key(s), k);
#endif
}

// Sums a per-thread count over the warp and adds it to *counter once per warp.
// Must be reached by all 32 lanes (it is: at the end of each kernel, block sizes are multiples of 32).
__device__ __forceinline__ void wd_add_count(u64* counter, long long delta) {
  for (int off = 16; off > 0; off >>= 1) delta += __shfl_down_sync(0xffffffffu, delta, off);
  if ((threadIdx.x & 31u) == 0 && delta != 0) atomicAdd(counter, (u64)delta);
}

// Inserts (k, v) with group g; returns its status. `inserted` / `failed` count on rank 0.
// assign: a present key gets the new value (UPDATED); otherwise it keeps its value (PRESENT).
__device__ __forceinline__ u32 wd_insert_one(const wm_group<WD_G>& g, const wd_arrays& a, u32* filter, u64* side,
                                             const wm_key& k, const wm_value& v, u32 windows, u32 max_probes,
                                             u64 seed, bool assign, long long& inserted, long long& failed) {
  const u32 present = assign ? WM_STATUS_UPDATED : WM_STATUS_PRESENT;
#if !defined(WD_LAYOUT_TAGGED)
  const int side_slot = wm_side_slot(k);
  if (side_slot >= 0) {
    u32 st = WM_STATUS_SENTINEL_KEY;
    if (g.rank == 0) {
      // The flag word: 0 absent, 1 present, 2 being written (its value is not yet there).
      unsigned long long* flag = side + 2 * side_slot;
      if (atomicCAS(flag, 0ull, 2ull) == 0ull) {
        side[2 * side_slot + 1] = (u64)v;
        __threadfence();
        atomicExch(flag, 1ull);
        inserted++;
      } else {
        if (assign) atomicExch(side + 2 * side_slot + 1, (u64)v);
        st |= present;
      }
    }
    return st;
  }
#endif
  wd_probe p(k, windows, seed);
  u32 probe = 0;
  u64 free_slot = WD_NO_SLOT;  // the first free slot seen on the chain ...
  wd_seen free_seen;           // ... what it held ...
  u32 free_window = 0, free_probe = 0;  // ... and where on the chain it is
  while (true) {
    if (probe >= max_probes) {
      if (free_slot == WD_NO_SLOT) {
        if (g.rank == 0) failed++;
        return (probe >= windows) ? WM_STATUS_TABLE_FULL : WM_STATUS_PROBE_LIMIT;
      }
      // k is not within the probed chain: take the tombstone we passed.
    } else {
      const u64 i = (u64)p.window * WD_G + g.rank;
      const wd_seen s = wd_load<true>(a.slots, i);
      const u32 match = g.ballot(wd_holds<true>(a, i, s, k, p));
      if (match) {
        if (assign && g.rank == (u32)(__ffs(match) - 1)) wd_store_value(a, i, s, k, v);
        return present;
      }
#if defined(WD_LAYOUT_TAGGED)
      // A slot being written may be getting k (a duplicate in this batch): wait for its key.
      // (Only this layout has such slots: no ballot for it elsewhere.)
      if (g.any(wd_is_busy(s))) continue;
#endif
      const u32 empty = g.ballot(wd_is_empty(s));
      const u32 tomb = g.ballot(wd_is_tombstone(s));
      if (free_slot == WD_NO_SLOT && (empty | tomb)) {
        const u32 r = __ffs(empty | tomb) - 1;  // the leftmost free slot of the window
        free_slot = (u64)p.window * WD_G + r;
        free_seen = wd_shfl(g, s, r);
        free_window = p.window;
        free_probe = probe;
      }
      if (empty == 0u) {  // no empty slot: the chain (and maybe k) goes on
        if (g.rank == 0) wd_mark_passed(filter, p);  // before k can be placed further on
        p.next(windows);
        probe++;
        continue;
      }
      // An empty slot ends the chain: k is not further on. Claim the first free slot.
    }
    int got = 0;
    if (g.rank == 0) got = wd_claim(a, free_slot, free_seen, k, v, assign, p.fingerprint);
    got = g.shfl(got, 0);
    if (got == 1) {
      if (g.rank == 0) inserted++;
      return WM_STATUS_OK;
    }
    if (got == 2) return present;
    // Another key took the slot: rescan from its window (the slots before it stay occupied
    // during an insert phase, so nothing earlier on the chain can change).
    p.window = free_window;
    probe = free_probe;
    free_slot = WD_NO_SLOT;
  }
}

// Looks k up with group g: true when present, and then the lane holding k writes its value to
// *out (unless out is null). `concurrent`: inserts may be running in the same launch, so loads go
// to L2, a sentinel key counts only once its value is written, and a slot being written counts
// as not yet there.
template <bool concurrent>
__device__ __forceinline__ bool wd_find_one(const wm_group<WD_G>& g, const wd_arrays& a, const u32* filter,
                                            const u64* side, const wm_key& k, u32 windows, u32 max_probes,
                                            u64 seed, wm_value* out) {
#if !defined(WD_LAYOUT_TAGGED)
  const int side_slot = wm_side_slot(k);
  if (side_slot >= 0) {
    const u64 flag = concurrent ? __ldcg(side + 2 * side_slot) : side[2 * side_slot];
    if (concurrent ? flag != 1ull : flag == 0ull) return false;
    if (concurrent) __threadfence();  // the value was written before the flag
    if (out != nullptr && g.rank == 0)
      *out = (wm_value)(concurrent ? __ldcg(side + 2 * side_slot + 1) : side[2 * side_slot + 1]);
    return true;
  }
#endif
  wd_probe p(k, windows, seed);
  u32 probe = 0;
  while (probe < max_probes) {
    const u64 i = (u64)p.window * WD_G + g.rank;
    const wd_seen s = wd_load<concurrent>(a.slots, i);
    const u32 passed = wd_filter_word<concurrent>(filter, p);
    const bool mine = wd_holds<concurrent>(a, i, s, k, p);
    const u32 match = g.ballot(mine);
    // A slot being written or held (tagged layout, concurrent inserts) may hold k: read again.
    if (concurrent && !match && g.any(wd_is_busy(s))) continue;
    if (match) {
      if (out != nullptr && g.rank == (u32)(__ffs(match) - 1)) *out = wd_read_value<concurrent>(a, i, s);
      return true;
    }
    if (g.any(wd_is_empty(s))) return false;
    if (!wd_passed(passed, p)) return false;  // no chain of k went past this window
    p.next(windows);
    probe++;
  }
  return false;
}

// meta[0]: number of stored keys; meta[1]: keys left unplaced by all inserts so far.
// assign = 1: a present key gets the new value (UPDATED); 0: it keeps its value (PRESENT).
extern "C" __global__ void warpdrive_insert(wd_slot* slots, u32* filter, u64* side, u64* meta,
                                            const wm_key* keys, const wm_value* vals, u32* status,
                                            u64 n, u32 windows, u32 max_probes, u64 seed, u32 assign) {
  const wm_group<WD_G> g;
  const wd_arrays a(slots, windows);
  const u64 groups = ((u64)gridDim.x * blockDim.x) / WD_G;
  long long inserted = 0, failed = 0;
  for (u64 idx = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / WD_G; idx < n; idx += groups) {
    // Copies: a reference into keys/vals would be reloaded after every atomic (it might alias).
    const wm_key k = keys[idx];
    const wm_value v = vals[idx];
    const u32 st = wd_insert_one(g, a, filter, side, k, v, windows, max_probes, seed, assign != 0u, inserted,
                                 failed);
    if (status != nullptr && g.rank == 0) status[idx] = st;
  }
  wd_add_count(meta, inserted);
  wd_add_count(meta + 1, failed);
}

// found[i] = 1 and out[i] = value where keys[i] is present; found[i] = 0 otherwise.
// `out` may be null (contains).
extern "C" __global__ void warpdrive_find(const wd_slot* slots, const u32* filter, const u64* side,
                                          const wm_key* keys, wm_value* out, u8* found,
                                          u64 n, u32 windows, u32 max_probes, u64 seed) {
  const wm_group<WD_G> g;
  const wd_arrays a(slots, windows);
  const u64 groups = ((u64)gridDim.x * blockDim.x) / WD_G;
  for (u64 idx = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / WD_G; idx < n; idx += groups) {
    const wm_key k = keys[idx];  // a copy (see warpdrive_insert)
    const bool hit = wd_find_one<false>(g, a, filter, side, k, windows, max_probes, seed,
                                        out != nullptr ? out + idx : nullptr);
    if (g.rank == 0) found[idx] = hit ? 1 : 0;
  }
}

// A mixed batch: op[i] = 0 inserts (keys[i], vals[i]) (assign) and writes status[i]; op[i] = 1
// looks keys[i] up into out[i] / found[i] while the inserts run (the paper's concurrent queries:
// a key inserted by an earlier launch is found; one inserted in this launch may or may not be,
// and if it is, its value is one that was inserted). Not for erases (phase-separated).
extern "C" __global__ void warpdrive_mixed(wd_slot* slots, u32* filter, u64* side, u64* meta, const u8* ops,
                                           const wm_key* keys, const wm_value* vals, u32* status,
                                           wm_value* out, u8* found, u64 n, u32 windows, u32 max_probes,
                                           u64 seed) {
  const wm_group<WD_G> g;
  const wd_arrays a(slots, windows);
  const u64 groups = ((u64)gridDim.x * blockDim.x) / WD_G;
  long long inserted = 0, failed = 0;
  for (u64 idx = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / WD_G; idx < n; idx += groups) {
    const wm_key k = keys[idx];  // a copy (see warpdrive_insert)
    if (ops[idx] == 0) {
      const wm_value v = vals[idx];
      const u32 st = wd_insert_one(g, a, filter, side, k, v, windows, max_probes, seed, true, inserted, failed);
      if (g.rank == 0) status[idx] = st;
    } else {
      const bool hit = wd_find_one<true>(g, a, filter, side, k, windows, max_probes, seed, out + idx);
      if (g.rank == 0) found[idx] = hit ? 1 : 0;
    }
  }
  wd_add_count(meta, inserted);
  wd_add_count(meta + 1, failed);
}

// Erases every present key (writes a tombstone); meta[0] decreases by the number erased.
// Phase-separated from inserts (the paper's rule): never run concurrently with an insert.
extern "C" __global__ void warpdrive_erase(wd_slot* slots, const u32* filter, u64* side, u64* meta,
                                           const wm_key* keys, u64 n, u32 windows, u32 max_probes, u64 seed) {
  const wm_group<WD_G> g;
  const wd_arrays a(slots, windows);
  const u64 groups = ((u64)gridDim.x * blockDim.x) / WD_G;
  long long erased = 0;
  for (u64 idx = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / WD_G; idx < n; idx += groups) {
    const wm_key k = keys[idx];
#if !defined(WD_LAYOUT_TAGGED)
    const int side_slot = wm_side_slot(k);
    if (side_slot >= 0) {
      if (g.rank == 0 && atomicExch(side + 2 * side_slot, 0ull) != 0ull) erased++;
      continue;
    }
#endif
    wd_probe p(k, windows, seed);
    for (u32 probe = 0; probe < max_probes; probe++) {
      const u64 i = (u64)p.window * WD_G + g.rank;
      const wd_seen s = wd_load<true>(a.slots, i);
      const u32 passed = wd_filter_word<false>(filter, p);  // no inserts run during erases
      const u32 match = g.ballot(wd_holds<true>(a, i, s, k, p));
      if (match) {
        // A concurrent erase of the same key may win; only the winner counts.
        if (g.rank == (u32)(__ffs(match) - 1) && wd_erase_at(a, i, s)) erased++;
        break;
      }
      if (g.any(wd_is_empty(s))) break;
      if (!wd_passed(passed, p)) break;
      p.next(windows);
    }
  }
  wd_add_count(meta, -erased);
}

// Writes every stored pair to out_keys/out_values at positions from *counter (which the host
// zeroes first), at most out_capacity of them. The pairs come out in no particular order.
extern "C" __global__ void warpdrive_retrieve(const wd_slot* slots, const u64* side,
                                              wm_key* out_keys, wm_value* out_values, u64* counter,
                                              u64 out_capacity, u64 num_slots) {
  const u64 threads = (u64)gridDim.x * blockDim.x;
  const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
#if !defined(WD_LAYOUT_TAGGED)
  if (tid < 2 && side[2 * tid] != 0ull) {
    const u64 pos = atomicAdd(counter, 1ull);
    if (pos < out_capacity) {
      out_keys[pos] = tid == 0 ? WM_KEY_EMPTY : WM_KEY_TOMBSTONE;
      out_values[pos] = (wm_value)side[2 * tid + 1];
    }
  }
#endif
  const wd_arrays a(slots, (u32)(num_slots / WD_G));
  // Every lane runs the same number of iterations so the warp-aggregated counter sees all 32.
  const u64 rounds = (num_slots + threads - 1) / threads;
  for (u64 r = 0; r < rounds; r++) {
    const u64 i = r * threads + tid;
    bool occupied = false;
    wd_seen s;
    if (i < num_slots) {
      s = wd_load<false>(a.slots, i);
      occupied = !wd_is_empty(s) && !wd_is_tombstone(s) && !wd_is_busy(s);
    }
    const u64 pos = wm_aggregated_inc(counter, occupied);
    if (occupied && pos < out_capacity) {  // the host checks *counter <= out_capacity
#if defined(WD_LAYOUT_TAGGED)
      out_keys[pos] = a.keys[i];
      out_values[pos] = a.values[i];
#else
      out_keys[pos] = wd_key(s);
      out_values[pos] = wd_read_value<false>(a, i, s);
#endif
    }
  }
}
