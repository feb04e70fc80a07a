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
//   so there is no side path. Keys and values are copied in the widest aligned vectors
//   (kernels/common/record.cuh). The paper notes that with SoA a value replaced while it is read
//   may be read half old, half new; here a value wider than one atomic word is replaced and, in
//   mixed batches, read while its slot's tag is held ("being written"), so a reader sees the old
//   or the new value, never a mix (the trait's promise).
// A loaded slot (or tag) is a `wd_seen`; layout differences live in the wd_* helpers below.
//
// Kernels take the table's device view (wd_view, twin of src/table/warpdrive.rs WarpDriveView)
// and the batch (wm_bulk, kernels/common/bulk.cuh) by value.
//
// Beyond the paper: (1) erase writes tombstones; an insert that passed a tombstone keeps probing
// to the end of the chain (a window with an empty slot) so that a key is never stored twice,
// then claims the first free slot it saw. (2) User keys equal to the sentinels go to the side
// path (kernels/common/side.cuh), so every key value is insertable. (3) The overflow filter
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
// Rounds of a block's tile in the ordered insert (a tile is WD_ORDERED_ROUNDS x the block's
// threads consecutive keys): from the host (src/table/engine/locality.rs ORDERED_ROUNDS).
#ifndef WD_ORDERED_ROUNDS
#error "WD_ORDERED_ROUNDS must be defined (src/table/warpdrive.rs kernel_source)"
#endif
// The same for the ordered insert into a table that ends the batch well filled
// (warpdrive_insert_ordered_deep; locality.rs DEEP_ROUNDS, DEEP_LOADS).
#ifndef WD_ORDERED_ROUNDS_DEEP
#error "WD_ORDERED_ROUNDS_DEEP must be defined (src/table/warpdrive.rs kernel_source)"
#endif

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

#ifndef WM_ENGINE
#error "warpdrive.cu is a table module: built through src/table/engine/ (WM_ENGINE and its sizes)"
#endif

// The table as the kernels see it: twin of src/table/warpdrive.rs `WarpDriveView`.
struct wd_view {
  wd_slot* slots;    // the slot array (or, tagged layout, the tags, keys and values: wd_arrays)
  u32* filter;       // the overflow filter: WD_FILTER_BITS bits per window (one word without)
  u64* side;         // the sentinel side path (kernels/common/side.cuh)
  u64* meta;         // [stored keys, keys left unplaced by all inserts so far, tiles (ordered insert)]
  u32 windows;       // prime
  u32 max_probes;    // windows probed before an insert gives up (p_max)
  u64 seed;
};
WM_CHECK_VIEW(wd_view);

// The table's arrays: the slots (or tags), and for the tagged layout the keys and values after
// them, windows * G of each, each array starting at a multiple of 16 bytes (src/table/
// warpdrive.rs `SlotLayout::table_bytes` computes the same).
struct wd_arrays {
  wd_slot* slots;
#if defined(WD_LAYOUT_TAGGED)
  wm_key* keys;
  wm_value* values;
#endif
  __device__ __forceinline__ explicit wd_arrays(const wd_view& t) : slots(t.slots) {
#if defined(WD_LAYOUT_TAGGED)
    const u64 n = (u64)t.windows * WD_G;
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
  if (!concurrent) return wm_load_elem(a.values, i);
  // A wide value may be being replaced: hold the slot (its tag `s`, the key's fingerprint, set
  // to "being written") while reading, as writers do (wd_store_value).
  while (atomicCAS(a.slots + i, s, WD_TAG_BUSY) != s) {
  }
  const wm_value v = wm_load_elem<wm_value, true>(a.values, i);
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
  wm_store_elem(a.values, i, v);
  __threadfence();
  atomicExch(a.slots + i, s);
#endif
}

// Reduces v into the value of slot i, whose key is already k (reduce by key: the mode word
// `word`, kernels/common/apply.cuh), atomically on the value alone. Values of 4 or 8 bytes (the
// host refuses the others). Every layout keeps a claimed slot's value in place before another
// insert can see its key: the packed layout claims key and value in one 64-bit CAS, the pair
// layout in one 128-bit CAS (sm_90; the host refuses reduce by key on a pair layout before it),
// and the tagged layout holds the slot busy until both are written.
__device__ __forceinline__ void wd_apply_value(const wd_arrays& a, u64 i, const wm_value& v, u32 word) {
#if defined(WD_LAYOUT_PACKED)
  wm_apply32(reinterpret_cast<u32*>(a.slots + i) + 1, (u32)v, word);  // the value: the high half
#elif defined(WD_LAYOUT_PAIR)
  wm_apply_value(reinterpret_cast<wm_value*>(&a.slots[i].y), v, word);  // 4 bytes: the low half
#elif !defined(WM_VALUE_WIDE)
  wm_apply_value(a.values + i, v, word);
#else
  (void)a, (void)i, (void)v, (void)word;
  __trap();  // never: the host refuses reduce by key on values wider than 8 bytes
#endif
}

// What an insert does to a present key's slot i (its tag `s`) as the mode word says: keep,
// assign (wd_store_value) or apply (wd_apply_value).
__device__ __forceinline__ void wd_present(const wd_arrays& a, u64 i, wd_seen s, const wm_key& k, const wm_value& v,
                                           u32 word) {
  const u32 mode = wm_mode_of(word);
  if (mode == WM_MODE_ASSIGN) wd_store_value(a, i, s, k, v);
  else if (mode == WM_MODE_APPLY) wd_apply_value(a, i, v, word);
}

// Tries to claim free slot i, last seen holding `seen` (an empty or tombstone key), for (k, v).
// Returns 1 when claimed, 2 when the slot meanwhile holds k (its value replaced or reduced into,
// as the mode word `word` says), 0 when lost to another key. `fingerprint`: the tagged layout's
// tag for k.
__device__ __forceinline__ int wd_claim(const wd_arrays& a, u64 i, wd_seen seen, const wm_key& k,
                                        const wm_value& v, u32 word, u32 fingerprint) {
  wd_slot* slots = a.slots;
#if defined(WD_LAYOUT_TAGGED)
  // Lost to another insert: the caller rescans the window, where it waits while the slot is
  // being written and then compares its key.
  if (atomicCAS(slots + i, seen, WD_TAG_BUSY) != seen) return 0;
  wm_store_elem(a.keys, i, k);
  wm_store_elem(a.values, i, v);
  __threadfence();  // key and value before the tag that makes them visible
  atomicExch(slots + i, fingerprint);
  return 1;
#elif defined(WD_LAYOUT_PACKED)
  const u64 old = atomicCAS(slots + i, seen, wd_make(k, v));
  if (old == seen) return 1;
  if (wd_key(old) == k) {
    wd_present(a, i, old, k, v, word);
    return 2;
  }
  return 0;
#elif defined(WD_LAYOUT_PAIR) && WM_HAS_CAS128
  const ulonglong2 old = wm_cas128(slots + i, seen, make_ulonglong2((u64)k, (u64)v));
  if (old.x == seen.x && old.y == seen.y) return 1;
  if (old.x == (u64)k) {
    wd_present(a, i, old, k, v, word);
    return 2;
  }
  return 0;
#else
  // Key first, value after: a reduction could meet a value not yet written, so the host refuses
  // reduce by key here (before sm_90); assign and keep only.
  const bool assign = wm_mode_of(word) == WM_MODE_ASSIGN;
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

// A key's walk over the windows (double hashing, kernels/common/probe.cuh: `pos` is the window),
// its filter bit and its fingerprint.
struct wd_probe : wm_double_hash {
  u32 filter_bit;   // which of a window's WD_FILTER_BITS filter bits is the key's
  u32 fingerprint;  // the tagged layout's tag for the key (below WD_TAG_BUSY)
  __device__ __forceinline__ wd_probe(const wm_key& k, u32 windows, u64 seed)
      : wd_probe(wm_hash_key<WM_HASH>(k, seed), windows) {}
  __device__ __forceinline__ wd_probe(uint2 h, u32 windows) : wm_double_hash(h, windows) {
#if defined(WD_LAYOUT_TAGGED)
    // Independent of window and step; below the three state tags.
    const u32 f = wm_hash_third(h, 0x2545f4914f6cdd1dull);
    fingerprint = f >= WD_TAG_BUSY ? f - 3u : f;
#else
    fingerprint = 0;
#endif
    filter_bit = h.y & (WD_FILTER_BITS > 0 ? WD_FILTER_BITS - 1u : 0u);  // the step uses h.y's high bits
  }
};

// The filter bit of probe p's key in its current window: bit (window * B + filter_bit).
__device__ __forceinline__ u64 wd_filter_bit(const wd_probe& p) {
  return (u64)p.pos * WD_FILTER_BITS + p.filter_bit;
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
  return wm_key_eq(wm_load_elem<wm_key, coherent>(a.keys, i), k);
#else
  return wm_key_eq(wd_key(s), k);
#endif
}

// A key's view of one window of the table while it probes. The paper's scheme: the coalesced
// group's lanes, a slot each, answering with ballots and shuffles (wd_group_window). The ordered
// insert: one thread holding the whole window (wd_solo_window), so that a warp has 32 keys in
// flight instead of 32 / G (measured on an H100 with keys in the order of their windows:
// bench/NOTES.md, issue 18). Both answer the same questions, so wd_insert_one serves both:
// where(pred): the window's slots r where pred(slot index, contents) holds, as bits r;
// slot(r): slot r's contents (every thread of the window calls it); holds(r): whether this
// thread holds slot r (and writes for it: `own` is then its contents); leader(): the thread
// that claims and counts; from_leader(x): the leader's x.
struct wd_group_window {
  const wm_group<WD_G>& g;
  u64 base;   // the window's first slot
  wd_seen s;  // this lane's slot
  __device__ __forceinline__ explicit wd_group_window(const wm_group<WD_G>& group) : g(group) {}
  template <bool coherent = true>
  __device__ __forceinline__ void load(const wd_arrays& a, u32 pos) {
    base = (u64)pos * WD_G;
    s = wd_load<coherent>(a.slots, base + g.rank);
  }
  template <typename P>
  __device__ __forceinline__ u32 where(P pred) const { return g.ballot(pred(base + g.rank, s)); }
  __device__ __forceinline__ wd_seen slot(u32 r) const { return wd_shfl(g, s, r); }
  __device__ __forceinline__ bool holds(u32 r) const { return g.rank == r; }
  __device__ __forceinline__ wd_seen own(u32) const { return s; }
  __device__ __forceinline__ bool leader() const { return g.rank == 0; }
  __device__ __forceinline__ int from_leader(int x) const { return g.shfl(x, 0); }
};

#if WD_G <= 8
// The whole window in one thread's registers (up to 8 slots: wider windows would spill), read
// in the widest aligned loads: windows start at multiples of G slots. `together`: the warp's
// windows of 16-byte slots are loaded together where every lane is here (the inserts').
template <bool together>
struct wd_solo_window {
  u64 base;
  wd_seen s[WD_G];
  template <bool coherent = true>
  __device__ __forceinline__ void load(const wd_arrays& a, u32 pos) {
    base = (u64)pos * WD_G;
#if defined(WD_LAYOUT_PAIR) && WD_G >= 2
    // A window a request (wm_warp_load_rows). H200, 2^27 u64 pairs (bench/NOTES.md, issue 18,
    // session AB): inserts +7 % at load 0.5 and 0.8, +6 % at 0.9 and 0.95; but the ordered find
    // lost 7.5 % (hits) and 12 % (misses) at 0.95, and the packed layout's 32-byte windows lost
    // inserts (-12 % at load 0.8): those load their own.
    if (together) {
      wm_warp_load_rows<WD_G, coherent>(a.slots + base, s);
      return;
    }
#endif
#if defined(WD_LAYOUT_PACKED) && WD_G >= 2
#pragma unroll
    for (int j = 0; j < WD_G / 2; j++) {
      const ulonglong2* at = reinterpret_cast<const ulonglong2*>(a.slots + base) + j;
      const ulonglong2 w = coherent ? __ldcg(at) : *at;
      s[2 * j] = w.x;
      s[2 * j + 1] = w.y;
    }
#elif defined(WD_LAYOUT_TAGGED) && WD_G >= 4
#pragma unroll
    for (int j = 0; j < WD_G / 4; j++) {
      const uint4* at = reinterpret_cast<const uint4*>(a.slots + base) + j;
      const uint4 w = coherent ? __ldcg(at) : *at;
      s[4 * j] = w.x;
      s[4 * j + 1] = w.y;
      s[4 * j + 2] = w.z;
      s[4 * j + 3] = w.w;
    }
#else
#pragma unroll
    for (int r = 0; r < WD_G; r++) s[r] = wd_load<coherent>(a.slots, base + r);
#endif
  }
  template <typename P>
  __device__ __forceinline__ u32 where(P pred) const {
    u32 bits = 0;
#pragma unroll
    for (int r = 0; r < WD_G; r++) bits |= (u32)pred(base + r, s[r]) << r;
    return bits;
  }
  // A select chain, not s[r]: a register array indexed at run time would go to local memory.
  __device__ __forceinline__ wd_seen slot(u32 r) const {
    wd_seen x = s[0];
#pragma unroll
    for (int j = 1; j < WD_G; j++)
      if ((u32)j == r) x = s[j];
    return x;
  }
  __device__ __forceinline__ bool holds(u32) const { return true; }
  __device__ __forceinline__ wd_seen own(u32 r) const { return slot(r); }
  __device__ __forceinline__ bool leader() const { return true; }
  __device__ __forceinline__ int from_leader(int x) const { return x; }
};
#endif

// Inserts (k, v) into table t, probing with window w; returns its status. `inserted` / `failed`
// count on the leader. The mode word `word` (kernels/common/apply.cuh): a present key gets the
// new value (assign: UPDATED), has it reduced into its own (apply: UPDATED), or keeps its value
// (keep: PRESENT).
template <typename W>
__device__ __forceinline__ u32 wd_insert_one(W& w, const wd_view& t, const wd_arrays& a, const wm_key& k,
                                             const wm_value& v, u32 word, long long& inserted,
                                             long long& failed) {
  const u32 present = wm_mode_of(word) == WM_MODE_KEEP ? WM_STATUS_PRESENT : WM_STATUS_UPDATED;
#if !defined(WD_LAYOUT_TAGGED)
  const int side_slot = wm_side_slot(k);
  if (side_slot >= 0) return w.leader() ? wm_side_insert_mode(t.side, side_slot, v, word, inserted) : 0u;
#endif
  wd_probe p(k, t.windows, t.seed);
  u32 probe = 0;
  u64 free_slot = WD_NO_SLOT;  // the first free slot seen on the chain ...
  wd_seen free_seen;           // ... what it held ...
  u32 free_window = 0, free_probe = 0;  // ... and where on the chain it is
  while (true) {
    if (probe >= t.max_probes) {
      if (free_slot == WD_NO_SLOT) {
        if (w.leader()) failed++;
        return (probe >= t.windows) ? WM_STATUS_TABLE_FULL : WM_STATUS_PROBE_LIMIT;
      }
      // k is not within the probed chain: take the tombstone we passed.
    } else {
      w.load(a, p.pos);
      const u32 match = w.where([&](u64 i, wd_seen s) { return wd_holds<true>(a, i, s, k, p); });
      if (match) {
        const u32 r = __ffs(match) - 1;
        if (w.holds(r)) wd_present(a, w.base + r, w.own(r), k, v, word);
        return present;
      }
#if defined(WD_LAYOUT_TAGGED)
      // A slot being written may be getting k (a duplicate in this batch): wait for its key.
      // (Only this layout has such slots: no ballot for it elsewhere.)
      if (w.where([](u64, wd_seen s) { return wd_is_busy(s); })) continue;
#endif
      const u32 empty = w.where([](u64, wd_seen s) { return wd_is_empty(s); });
      const u32 tomb = w.where([](u64, wd_seen s) { return wd_is_tombstone(s); });
      if (free_slot == WD_NO_SLOT && (empty | tomb)) {
        const u32 r = __ffs(empty | tomb) - 1;  // the leftmost free slot of the window
        free_slot = w.base + r;
        free_seen = w.slot(r);
        free_window = p.pos;
        free_probe = probe;
      }
      if (empty == 0u) {  // no empty slot: the chain (and maybe k) goes on
        if (w.leader()) wd_mark_passed(t.filter, p);  // before k can be placed further on
        p.next(t.windows);
        probe++;
        continue;
      }
      // An empty slot ends the chain: k is not further on. Claim the first free slot.
    }
    int got = 0;
    if (w.leader()) got = wd_claim(a, free_slot, free_seen, k, v, word, p.fingerprint);
    got = w.from_leader(got);
    if (got == 1) {
      if (w.leader()) inserted++;
      return WM_STATUS_OK;
    }
    if (got == 2) return present;
    // Another key took the slot: rescan from its window (the slots before it stay occupied
    // during an insert phase, so nothing earlier on the chain can change).
    p.pos = free_window;
    probe = free_probe;
    free_slot = WD_NO_SLOT;
  }
}

// Looks k up, probing with window w (wd_group_window or wd_solo_window): true when present, and
// then the thread holding k's slot writes its value to *out (unless out is null). `concurrent`:
// inserts may be running in the same launch, so loads go to L2, a sentinel key counts only once
// its value is written, and a slot being written counts as not yet there.
template <bool concurrent, typename W>
__device__ __forceinline__ bool wd_find_one(W& w, const wd_view& t, const wd_arrays& a, const wm_key& k,
                                            wm_value* out) {
#if !defined(WD_LAYOUT_TAGGED)
  const int side_slot = wm_side_slot(k);
  if (side_slot >= 0) return wm_side_find<concurrent>(t.side, side_slot, w.leader() ? out : nullptr);
#endif
  wd_probe p(k, t.windows, t.seed);
  u32 probe = 0;
  while (probe < t.max_probes) {
    w.template load<concurrent>(a, p.pos);
    const u32 passed = wd_filter_word<concurrent>(t.filter, p);
    const u32 match = w.where([&](u64 i, wd_seen s) { return wd_holds<concurrent>(a, i, s, k, p); });
    // A slot being written or held (tagged layout, concurrent inserts) may hold k: read again.
    if (concurrent && !match && w.where([](u64, wd_seen s) { return wd_is_busy(s); })) continue;
    if (match) {
      const u32 r = __ffs(match) - 1;
      if (out != nullptr && w.holds(r)) {
        const u64 i = w.base + r;
#if defined(WD_LAYOUT_TAGGED)
        // Phase-separated: straight from the table to the output, a few vectors at a time.
        if (!concurrent) {
          wm_copy_elem(out, 0, a.values, i);
          return true;
        }
#endif
        wm_store_elem(out, 0, wd_read_value<concurrent>(a, i, w.own(r)));
      }
      return true;
    }
    if (w.where([](u64, wd_seen s) { return wd_is_empty(s); })) return false;
    if (!wd_passed(passed, p)) return false;  // no chain of k went past this window
    p.next(t.windows);
    probe++;
  }
  return false;
}

// Inserts b.keys[i] -> b.values[i]; b.status (if not null) gets each key's status; t.meta[0]
// counts the stored keys, t.meta[1] the keys left unplaced by all inserts so far.
extern "C" __global__ void warpdrive_insert(wd_view t, wm_bulk b) {
  const wm_group<WD_G> g;
  const wd_arrays a(t);
  long long inserted = 0, failed = 0;
  wm_for_each<WD_G>(b.n, [&](u64 idx) {
    // Copies: a reference into keys/values would be reloaded after every atomic (it might alias).
    const wm_key k = b.keys[idx];
    const wm_value v = wm_load_elem(b.values, idx);
    wd_group_window w(g);
    const u32 st = wd_insert_one(w, t, a, k, v, b.assign, inserted, failed);
    if (b.status != nullptr && g.rank == 0) b.status[idx] = st;
  });
  wm_add_count(t.meta, inserted);
  wm_add_count(t.meta + 1, failed);
}

#if WD_G <= 8
// One key of the ordered kernels, a thread holding the whole window: the insert of k -> v, and
// the lookup of keys[idx] into out[idx] (out may be null) and found[idx].
__device__ __forceinline__ void wd_insert_solo(const wd_view& t, const wd_arrays& a, const wm_key& k,
                                               const wm_value& v, u32 assign, long long& inserted,
                                               long long& failed) {
  wd_solo_window<true> w;
  wd_insert_one(w, t, a, k, v, assign, inserted, failed);
}
__device__ __forceinline__ void wd_find_solo(const wd_view& t, const wd_arrays& a,
                                             const wm_key* keys, wm_value* out, u8* found, u64 idx) {
  const wm_key k = keys[idx];
  wd_solo_window<false> w;
  found[idx] = wd_find_one<false>(w, t, a, k, out != nullptr ? out + idx : nullptr) ? 1 : 0;
}
#endif

// The ordered insert: a batch already in the order of its keys' first windows (the engine's
// locality-partitioned insert, src/table/engine/locality.rs), a thread per key holding the
// whole window, tiles of ROUNDS x the block's threads consecutive keys handed out in order
// (wm_for_each_ordered), so that the keys in flight probe a stretch of the table that stays in
// L2. No statuses (b.status is null: the host takes this path only without them); t.meta[2] is
// the tile counter. The batch is two arrays, or a slack split's {key, value} pairs
// (WM_BATCH_PAIRS: wm_batch_item).
//
// Where the host passes the L2's two sides (b.sm_l2_side not null: WARPMAP_L2_SIDES=on and a GPU
// with two; src/table/engine/l2_sides.rs), each key goes to a block on the side of its first
// window's 4 KiB granule (wm_for_each_ordered_l2_sided, tile counters t.meta[2] and t.meta[3]),
// so that its window loads and its CAS stay in the L2 partition on the block's side instead of
// crossing the fabric between the two. Sentinel keys (the side path, side.cuh) have no window:
// L2 side 0.
template <int ROUNDS>
__device__ __forceinline__ void wd_insert_ordered(const wd_view& t, const wm_bulk& b) {
#if WD_G <= 8
  const wd_arrays a(t);
  long long inserted = 0, failed = 0;
  const auto insert = [&](u64 idx) {
    wm_key k;
    wm_value v;
    wm_batch_item(b, idx, k, v);  // a slack split's pairs or the batch's two arrays
    wd_insert_solo(t, a, k, v, b.assign, inserted, failed);
  };
  if (b.sm_l2_side != nullptr) {
    // (Never a batch of pairs: the host splits with slack only where the sides are off.)
    const auto side_of = [&](u64 idx) -> u32 {
      const wm_key k = b.keys[idx];
#if !defined(WD_LAYOUT_TAGGED)
      if (wm_side_slot(k) >= 0) return 0u;
#endif
      const wd_probe p(k, t.windows, t.seed);
      // Granules count from the 4 KiB boundary at or before the array (l2_sides_granules).
      const u64 granule = (reinterpret_cast<u64>(t.slots + (u64)p.pos * WD_G) >> 12) - (reinterpret_cast<u64>(t.slots) >> 12);
      return (b.granule_l2_side[granule >> 5] >> (granule & 31u)) & 1u;
    };
    wm_for_each_ordered_l2_sided<ROUNDS>(b.n, t.meta + 2, b.sm_l2_side, side_of, insert);
  } else {
    wm_for_each_ordered_batch<ROUNDS>(b, t.meta + 2, insert);
  }
  wm_add_count(t.meta, inserted);
  wm_add_count(t.meta + 1, failed);
#else
  __trap();  // never launched: src/table/warpdrive.rs binds it for windows of at most 8 slots
#endif
}
extern "C" __global__ void warpdrive_insert_ordered(wd_view t, wm_bulk b) {
  wd_insert_ordered<WD_ORDERED_ROUNDS>(t, b);
}
// With longer tiles, for batches that leave the table well filled (0.75-0.925): measured faster
// there, most likely because the probes of a full table vary more from key to key and a block
// waits at each tile's barrier for its slowest thread, which longer tiles do less often (H200,
// 2^27 keys: inserts +8 % (u32) and +6.6 % (u64) at load 0.9; bench/NOTES.md, session AE).
extern "C" __global__ void warpdrive_insert_ordered_deep(wd_view t, wm_bulk b) {
  wd_insert_ordered<WD_ORDERED_ROUNDS_DEEP>(t, b);
}

// b.found[i] = 1 and b.out[i] = value where b.keys[i] is present; 0 otherwise (b.out[i] left
// alone). b.out may be null (contains).
extern "C" __global__ void warpdrive_find(wd_view t, wm_bulk b) {
  const wm_group<WD_G> g;
  const wd_arrays a(t);
  wm_for_each<WD_G>(b.n, [&](u64 idx) {
    const wm_key k = b.keys[idx];  // a copy (see warpdrive_insert); whole: it is compared often
    wd_group_window w(g);
    const bool hit = wd_find_one<false>(w, t, a, k, b.out != nullptr ? b.out + idx : nullptr);
    if (g.rank == 0) b.found[idx] = hit ? 1 : 0;
  });
}

// The ordered find: a batch in the order of its keys' first windows (a caller that splits its
// batches anyway, such as the sharded table: src/table/engine/locality.rs), a thread per key
// holding the whole window, tiles handed out in order from *b.counter (zeroed by the host), as
// warpdrive_insert_ordered. Results as warpdrive_find, in the batch's order.
extern "C" __global__ void warpdrive_find_ordered(wd_view t, wm_bulk b) {
#if WD_G <= 8
  const wd_arrays a(t);
  wm_for_each_ordered<WD_ORDERED_ROUNDS>(
      b.n, b.counter, [&](u64 idx) { wd_find_solo(t, a, b.keys, b.out, b.found, idx); });
#else
  __trap();  // never launched: src/table/warpdrive.rs binds it for windows of at most 8 slots
#endif
}

// The ordered insert over several batches at once, each in the order of its keys' first
// windows (b.parts: a sharded table's shard with its part of every rank's split, those of
// other GPUs read in place over the link), their tiles interleaved (wm_for_each_ordered_parts).
// As warpdrive_insert_ordered otherwise.
extern "C" __global__ void warpdrive_insert_ordered_parts(wd_view t, wm_bulk b) {
#if WD_G <= 8
  const wd_arrays a(t);
  long long inserted = 0, failed = 0;
  wm_for_each_ordered_parts(b, [&](const wm_ordered_part& p, u64 idx) {
    const wm_key k = p.keys[idx];  // copies: see warpdrive_insert
    const wm_value v = wm_load_elem(p.values, idx);
    wd_insert_solo(t, a, k, v, b.assign, inserted, failed);
  });
  wm_add_count(t.meta, inserted);
  wm_add_count(t.meta + 1, failed);
#else
  __trap();  // never launched: src/table/warpdrive.rs binds it for windows of at most 8 slots
#endif
}

// The ordered find over several batches at once (as warpdrive_insert_ordered_parts); each
// part's results in its own order, as warpdrive_find_ordered.
extern "C" __global__ void warpdrive_find_ordered_parts(wd_view t, wm_bulk b) {
#if WD_G <= 8
  const wd_arrays a(t);
  wm_for_each_ordered_parts(
      b, [&](const wm_ordered_part& p, u64 idx) { wd_find_solo(t, a, p.keys, p.out, p.found, idx); });
#else
  __trap();  // never launched: src/table/warpdrive.rs binds it for windows of at most 8 slots
#endif
}

// A mixed batch: b.ops[i] = WM_OP_INSERT inserts (assign) and writes b.status[i]; WM_OP_FIND
// looks b.keys[i] up into b.out[i] / b.found[i] while the inserts run (the paper's concurrent
// queries: a key inserted by an earlier launch is found; one inserted in this launch may or may
// not be, and if it is, its value is one that was inserted). Other ops are left alone (erases
// are phase-separated: the host refuses them).
extern "C" __global__ void warpdrive_mixed(wd_view t, wm_bulk b) {
  const wm_group<WD_G> g;
  const wd_arrays a(t);
  long long inserted = 0, failed = 0;
  wm_for_each<WD_G>(b.n, [&](u64 idx) {
    const wm_key k = b.keys[idx];  // a copy (see warpdrive_insert); whole: it is compared often
    const u8 op = b.ops[idx];
    if (op == WM_OP_INSERT) {
      const wm_value v = wm_load_elem(b.values, idx);
      wd_group_window w(g);
      const u32 st = wd_insert_one(w, t, a, k, v, WM_MODE_ASSIGN, inserted, failed);
      if (g.rank == 0) b.status[idx] = st;
    } else if (op == WM_OP_FIND) {
      wd_group_window w(g);
      const bool hit = wd_find_one<true>(w, t, a, k, b.out + idx);
      if (g.rank == 0) b.found[idx] = hit ? 1 : 0;
    }
  });
  wm_add_count(t.meta, inserted);
  wm_add_count(t.meta + 1, failed);
}

// Erases every present key (writes a tombstone); t.meta[0] decreases by the number erased.
// Phase-separated from inserts (the paper's rule): never run concurrently with an insert.
extern "C" __global__ void warpdrive_erase(wd_view t, wm_bulk b) {
  const wm_group<WD_G> g;
  const wd_arrays a(t);
  long long erased = 0;
  wm_for_each<WD_G>(b.n, [&](u64 idx) {
    const wm_key k = b.keys[idx];
#if !defined(WD_LAYOUT_TAGGED)
    const int side_slot = wm_side_slot(k);
    if (side_slot >= 0) {
      if (g.rank == 0 && wm_side_erase(t.side, side_slot)) erased++;
      return;
    }
#endif
    wd_probe p(k, t.windows, t.seed);
    for (u32 probe = 0; probe < t.max_probes; probe++) {
      const u64 i = (u64)p.pos * WD_G + g.rank;
      const wd_seen s = wd_load<true>(a.slots, i);
      const u32 passed = wd_filter_word<false>(t.filter, p);  // no inserts run during erases
      const u32 match = g.ballot(wd_holds<true>(a, i, s, k, p));
      if (match) {
        // A concurrent erase of the same key may win; only the winner counts.
        if (g.rank == (u32)(__ffs(match) - 1) && wd_erase_at(a, i, s)) erased++;
        break;
      }
      if (g.any(wd_is_empty(s))) break;
      if (!wd_passed(passed, p)) break;
      p.next(t.windows);
    }
  });
  wm_add_count(t.meta, -erased);
}

// Writes every stored pair to b.out_keys / b.out at positions from *b.counter, at most b.n of
// them, in no particular order (kernels/common/bulk.cuh wm_compact).
extern "C" __global__ void warpdrive_retrieve(wd_view t, wm_bulk b) {
  const wd_arrays a(t);
#if !defined(WD_LAYOUT_TAGGED)
  wm_side_retrieve(t.side, (u64)blockIdx.x * blockDim.x + threadIdx.x, b.out_keys, b.out, b.counter, b.n);
#endif
  wd_seen s;
  wm_compact(
      (u64)t.windows * WD_G, b.counter, b.n,
      [&](u64 i) {
        s = wd_load<false>(a.slots, i);
        return !wd_is_empty(s) && !wd_is_tombstone(s) && !wd_is_busy(s);
      },
      [&](u64 i, u64 pos) {
#if defined(WD_LAYOUT_TAGGED)
        wm_copy_elem(b.out_keys, pos, a.keys, i);
        wm_copy_elem(b.out, pos, a.values, i);
#else
        b.out_keys[pos] = wd_key(s);
        b.out[pos] = wd_read_value<false>(a, i, s);
#endif
      });
}
