// DyCuckoo: dynamic cuckoo hashing with voter-based bucket locks and one-subtable resizing
// (dycuckoo.txt). Host side: src/table/dycuckoo/. Assembled after kernels/common/*.cuh.
//
// The table is d = DC_SUBTABLES subtables (§4.1). Subtable i has |h^i| buckets of DC_SLOTS slots
// (32 four-byte keys or 16 eight-byte keys: one 128-byte line, read by a warp in one coalesced
// load), its keys and its values in two separate arrays (so a value may be any multiple of 4
// bytes, and a search that misses never touches values), and one lock word per bucket. Subtable
// i hashes with its own universal function h^i(k) = ((a_i k + b_i) mod p) mod |h^i| (§4.1; p =
// 2^32 - 5 for 4-byte keys, 2^61 - 1 for 8-byte keys). An empty slot holds WM_KEY_EMPTY; user
// keys equal to a sentinel live on the side path (below), so every key value is insertable.
//
// Operations (§4.2), each by a whole warp: every lane takes one key of the batch, and the warp
// serves the lanes' keys one at a time (the key, its batch index and its target are shuffled to
// the warp).
// - find (Algorithm 1) and erase: a warp per key, no locks: the warp reads the key's bucket in
//   subtable 0, 1, ... and ballots for the key. Erase clears the slot with a CAS (so that two
//   erases of one key count once).
// - insert: the voter scheme (Algorithm 2). The warp elects a leader among its lanes with work;
//   the leader's lane locks the key's bucket in its target subtable (one atomicCAS); if the lock
//   is taken the warp revotes (round robin: the next lane with work leads, so a warp never spins
//   on one bucket), otherwise the warp inserts, updates, or evicts towards the next subtable.
// - The target subtable of a key is drawn with probability proportional to n_i / C(m_i, 2)
//   (§5.2, Theorem 1; n_i slots and m_i keys of subtable i, read by each warp when the kernel
//   starts, i.e. before the batch), by a hash of the key, so that copies of a key in one batch
//   meet in one bucket.
//
// Beyond the paper (the issue's promises: nothing lost, nothing hangs, correct updates):
// (1) Bucket locks are sequence locks: the word is even when free and odd when held, and every
//     release adds one, so a reader can check that a bucket did not change while it read it.
// (2) The paper's insert checks only the target bucket for the key; a key stored in another
//     subtable would be stored twice. Here, holding the target bucket's lock, the warp reads the
//     key's buckets in the other subtables between two reads of their lock words (a validated
//     snapshot) and updates the key where it is. A fresh batch (the host knows that none of its
//     keys was in the table before it: the table was empty, or a count found every key absent)
//     reads the target bucket alone, as the paper does (dc_insert_tiles says why that is safe).
// (3) The paper evicts a random pair and carries it to the next subtable in a later round; when
//     the chain runs out, the pair in hand is dropped, and while it is in hand a concurrent find
//     misses it. Here the warp builds the whole eviction chain under its locks (path first, as
//     MemC3 and libcuckoo do): lane s holds the s-th locked bucket; from a full bucket it picks a
//     victim (from a hashed slot on, skipping victims whose bucket in the next subtable the
//     chain already holds) and locks that bucket; at the first bucket with an empty slot it
//     moves the pairs one step on, from the end of the chain back to its start, then writes the
//     new pair, and releases every lock. A pair is in the table (in one or two places) at every
//     moment. A chain longer than max_evictions, or a bucket with no usable victim, changes
//     nothing and reports TABLE_FULL for the key being inserted, which is not in the table (the
//     host then grows and inserts it again). A lock taken by another warp releases every lock
//     of the chain and revotes (after a jittered back-off). A key that loses DC_ESCALATE_AFTER
//     attempts escalates: its warp takes the table's escalation token (one warp at a time) and
//     then waits for every lock it needs instead of giving up. Every other lock holder gives up
//     or finishes in bounded time, so the escalated attempt ends with the key placed, updated or
//     TABLE_FULL: no key starves, however long the eviction chains and however hot the buckets.
//     (Only an escalated attempt whose snapshot keeps failing DC_ESCALATED_TRIES times reports
//     PROBE_LIMIT.)
// (4) Mixed batches (inserts and finds together) read with the sequence locks: a find reads the
//     lock words of the key's buckets, the buckets (and the value), then the lock words again,
//     and reads again if a bucket was held or changed. Erases are phase-separated, as in the
//     paper (the host refuses them in mixed batches).
//
// Resizing (§5.1, §5.3), launched by the host between batches (src/table/dycuckoo/):
// - upsize doubles subtable i into new arrays: a key of bucket loc goes to loc or loc + |h^i|
//   (its hash mod 2|h^i|), at the same slot, so no two keys meet and no lock is needed (a
//   thread per slot);
// - downsize halves subtable i: buckets loc and loc + |h^i|/2 merge into loc (a warp per new
//   bucket, ballots and prefix counts); what does not fit (the residuals) goes to a residual
//   list, which dycuckoo_reinsert then inserts into the other subtables (view.exclude = i).
//   If some residual cannot be placed, dycuckoo_unplace erases the placed ones from the other
//   subtables and the host keeps the old arrays: the table is as before.
//
// Counters: t.meta[0] (stored keys, the side path's included) and t.meta[1] (keys left unplaced
// by all inserts so far) for the engine, and t.counts[i] (keys stored in subtable i) for the
// insert distribution and the host's resize decisions.

#ifndef WM_ENGINE
#error "dycuckoo.cu is a table module: built through src/table/engine/ (WM_ENGINE and its sizes)"
#endif
#ifndef DC_SUBTABLES
#error "DC_SUBTABLES must be defined (the number of subtables d, 2 to 8)"
#endif
#if defined(WM_KEY_WIDE)
#error "DyCuckoo stores keys of 4 or 8 bytes"
#endif

#define DC_D DC_SUBTABLES
#define DC_MAX_SUBTABLES 8
static_assert(DC_D >= 2 && DC_D <= DC_MAX_SUBTABLES, "DC_SUBTABLES: 2 to 8 subtables");
#define DC_SLOTS (128 / WM_KEY_BYTES)  // slots per bucket: one 128-byte line of keys
#define DC_FULL 0xffffffffu
#define DC_NONE 0xffffffffu
#define DC_RETRY 0xffffffffu            // an insert's outcome: a lock was taken, vote again
#define DC_ESCALATE_AFTER 16u           // lost attempts before a key's insert escalates (below)
#define DC_ESCALATED_TRIES (1u << 16)   // an escalated insert's snapshot retries before PROBE_LIMIT
#define DC_LOCK_SPINS 48u               // tries of a held lock before an attempt gives up
#define DC_SIDE_TOKEN 4                 // t.side[4]: the escalation token (below)
#define DC_VALUE_WORDS (WM_VALUE_BYTES / 4)
#define DC_VALUE_REGS ((DC_VALUE_WORDS + 31) / 32)  // words of a value per lane

// One subtable: twin of src/table/dycuckoo/mod.rs `SubtableView`.
struct dc_subtable {
  wm_key* keys;      // buckets * DC_SLOTS keys
  wm_value* values;  // buckets * DC_SLOTS values
  u32* locks;        // one sequence lock per bucket
  u64 a, b;          // the universal hash: ((a k + b) mod p) mod buckets
  u32 buckets;       // |h^i|
  u32 reserved;
};

// The table as the kernels see it: twin of src/table/dycuckoo/mod.rs `DyCuckooView`.
struct dc_view {
  dc_subtable sub[DC_MAX_SUBTABLES];  // the first DC_D are used
  u64* meta;             // [stored keys, keys left unplaced by all inserts so far]
  u32* side;             // [side lock 0, side lock 1, present 0, present 1, escalation token]
  wm_value* side_values; // side path: the two values
  u64* counts;           // keys stored per subtable (DC_MAX_SUBTABLES words)
  u64 choice_seed;       // the hash that draws a key's target subtable
  u32 exclude;           // a subtable that inserts must not use (downsize residuals), or DC_NONE
  u32 max_evictions;     // the longest eviction chain (1 to 31)
  // Resize launches only (zero otherwise):
  wm_key* new_keys;      // the resized subtable's new arrays
  wm_value* new_values;
  wm_key* res_keys;      // downsize: the residuals
  wm_value* res_values;
  u64* scratch;          // per launch: residual count and failures; recount and count_absent results
  u64 res_capacity;      // entries of res_keys / res_values
  u32 resize_subtable;   // the subtable being resized
  u32 new_buckets;       // its bucket count after the resize
  // Insert launches (insert, mixed, reinsert):
  // Every launch: the keys per subtable as the host last knew them (an exact read, or the last
  // snapshot it took), by value. Every warp of a launch draws a key's target subtable from the
  // same weights (dc_weights), and a find or erase after an insert draws the targets that insert
  // drew (the weights change only when the host takes a newer count), so it finds a key of that
  // insert in the first bucket it reads unless that key went on past a full bucket.
  u64 launch_counts[DC_MAX_SUBTABLES];
  u32 fresh;             // 1: no key of the batch was in the table before it (the host knows)
  u32 first_fit;         // 1: dycuckoo_first_fit ran on this batch (outcome per key below)
  u8* outcome;           // first_fit: 1 where the key was placed there, 0 where it was left
  const u32* positions;  // first_fit over the batch partitioned (dycuckoo_first_fit_ordered):
                         // where key i went in that order (outcome is in it); null otherwise
  u32* left;             // dycuckoo_first_fit in input order: the indices of the keys it left,
                         // *left_n of them (zeroed by the host before it), which
                         // dycuckoo_insert_left takes; null otherwise
  u64* left_n;
};
WM_CHECK_VIEW(dc_view);

__device__ __forceinline__ u32 dc_lane() { return threadIdx.x & 31u; }

// Subtable j of the view, for a j known only at run time: selected among the DC_D entries with
// compile-time indices (a dynamic index into a by-value kernel parameter would copy the view to
// local memory).
__device__ __forceinline__ dc_subtable dc_sub(const dc_view& t, u32 j) {
  dc_subtable s = t.sub[0];
#pragma unroll
  for (int i = 1; i < DC_D; i++) {
    if (j == (u32)i) s = t.sub[i];
  }
  return s;
}

__device__ __forceinline__ u64 dc_slot(u32 bucket, u32 slot) { return (u64)bucket * DC_SLOTS + slot; }

// ---------------------------------------------------------------------------------------------
// Universal hashing (host twin: src/table/dycuckoo/policy.rs `universal_hash`).

#if WM_KEY_BYTES == 4
#define DC_PRIME 4294967291ull  // 2^32 - 5; a, b < p and k < 2^32, so a k + b < 2^64
__device__ __forceinline__ u64 dc_universal(wm_key k, u64 a, u64 b) { return (a * (u64)k + b) % DC_PRIME; }
__device__ __forceinline__ u32 dc_reduce(u64 h, u32 buckets) { return (u32)h % buckets; }
#else
#define DC_PRIME 0x1fffffffffffffffull  // 2^61 - 1 (Mersenne: x mod p by shifts and adds)
__device__ __forceinline__ u64 dc_fold(u64 x) { return (x & DC_PRIME) + (x >> 61); }
__device__ __forceinline__ u64 dc_universal(wm_key k, u64 a, u64 b) {
  // a k = hi 2^64 + lo with hi < 2^61 (a < 2^61); 2^64 = 8 (mod p), so a k = 8 hi + lo (mod p).
  const u64 lo = a * (u64)k, hi = __umul64hi(a, (u64)k);
  u64 r = dc_fold(dc_fold(lo) + dc_fold(hi << 3));  // < p + 3
  if (r >= DC_PRIME) r -= DC_PRIME;
  r += b;  // < 2p
  if (r >= DC_PRIME) r -= DC_PRIME;
  return r;
}
__device__ __forceinline__ u32 dc_reduce(u64 h, u32 buckets) { return (u32)(h % buckets); }
#endif

// Key k's bucket in subtable s.
__device__ __forceinline__ u32 dc_bucket(const dc_subtable& s, wm_key k) {
  return dc_reduce(dc_universal(k, s.a, s.b), s.buckets);
}

// Each lane's key's bucket in every subtable (lanes hash their own keys, all at once).
__device__ __forceinline__ void dc_buckets(const dc_view& t, wm_key k, bool active, u32 (&cand)[DC_D]) {
#pragma unroll
  for (int j = 0; j < DC_D; j++) cand[j] = active ? dc_bucket(t.sub[j], k) : 0u;
}

// ---------------------------------------------------------------------------------------------
// The insert distribution (§5.2): subtable i with probability proportional to n_i / C(m_i, 2),
// n_i its slots and m_i its keys as the host last knew them (t.launch_counts; C(m, 2) taken as
// at least 1, so empty subtables weigh by their size). Host twin: policy.rs `insert_weights`.
//
// How a key draws its target from the weights (DC_CHOICE_RACE, 1 by default): an exponential
// race. The key hashes to an independent uniform u_j per subtable, and its target is the j
// with the least -ln(u_j) / w_j: P(target = j) = w_j / sum w, exactly the paper's distribution.
// The weights change as the table fills and resizes, and a later find or erase draws the key's
// target from the weights of its own launch, so it reads the bucket where the insert put the
// key first only if the draw has not moved. In a race, raising w_j moves keys only into j;
// the other draw (0: the key's one uniform as a point in the cumulative weights) moves every
// boundary after j as well. In a simulation of the dynamic workload of `--preset
// dycuckoo-compare` (3 subtables) the race took the buckets an erase of a present key reads
// from 1.54 to 1.25 in the growing half and from 1.59 to 1.43 in the shrinking one.
#ifndef DC_CHOICE_RACE
#define DC_CHOICE_RACE 1
#endif

struct dc_choice {
#if DC_CHOICE_RACE
  float inv[DC_D];  // 1 / w_j (t.exclude's: unused)
#else
  float cum[DC_D];  // cumulative weights
#endif
};

// From t.launch_counts, fixed for the launch, so that every warp of a launch draws the same
// target for a key whatever the warps that finished before it added (copies of a key in one batch
// then meet in one bucket: the fresh insert below relies on it).
__device__ __forceinline__ dc_choice dc_weights(const dc_view& t) {
  dc_choice c;
  float acc = 0.0f;
#pragma unroll
  for (int j = 0; j < DC_D; j++) {
    const float m = (float)t.launch_counts[j];
    const float pairs = fmaxf(m * (m - 1.0f) * 0.5f, 1.0f);
    const float slots = (float)t.sub[j].buckets * (float)DC_SLOTS;
#if DC_CHOICE_RACE
    c.inv[j] = pairs / fmaxf(slots, 1.0f);
    (void)acc;
#else
    if ((u32)j != t.exclude) acc += slots / pairs;
    c.cum[j] = acc;
#endif
  }
  return c;
}

// The last subtable inserts may use.
__device__ __forceinline__ u32 dc_last_allowed(const dc_view& t) {
  return t.exclude == (u32)(DC_D - 1) ? (u32)(DC_D - 2) : (u32)(DC_D - 1);
}

// Key k's target subtable (never t.exclude), from hashes of the key independent of the
// subtables' hashes.
__device__ __forceinline__ u32 dc_choose(const dc_view& t, const dc_choice& c, wm_key k) {
#if DC_CHOICE_RACE
  u32 best = dc_last_allowed(t);
  float least = __int_as_float(0x7f800000);  // +inf
#pragma unroll
  for (int j = 0; j < DC_D; j++) {
    // u_j in (0, 1): the top 23 bits of the j-th hash, and a half (exact in single precision).
    const u64 h = wm_fmix64((u64)k ^ t.choice_seed ^ ((u64)(j + 1) * 0x9e3779b97f4a7c15ull));
    const float u = ((float)(u32)(h >> 41) + 0.5f) * 1.1920929e-07f;  // 2^-23
    const float score = -__logf(u) * c.inv[j];
    if ((u32)j != t.exclude && score < least) {
      least = score;
      best = (u32)j;
    }
  }
  return best;
#else
  const float u = (float)(u32)wm_fmix64((u64)k ^ t.choice_seed) * 2.3283064e-10f * c.cum[DC_D - 1];
#pragma unroll
  for (int j = 0; j < DC_D - 1; j++) {
    if (u < c.cum[j] && (u32)j != t.exclude) return (u32)j;
  }
  return dc_last_allowed(t);
#endif
}

// The subtable after j that inserts may use (j itself when there is none).
__device__ __forceinline__ u32 dc_next(const dc_view& t, u32 j) {
  u32 n = (j + 1u) % DC_D;
  if (n == t.exclude) n = (n + 1u) % DC_D;
  return n;
}

// ---------------------------------------------------------------------------------------------
// Keys, values, locks

// This lane's key of a bucket (lanes beyond DC_SLOTS read nothing: WM_KEY_EMPTY). `coherent`:
// from L2, for kernels in which other warps write.
template <bool coherent>
__device__ __forceinline__ wm_key dc_read_key(const dc_subtable& s, u32 bucket) {
  const u32 lane = dc_lane();
  if (lane >= DC_SLOTS) return WM_KEY_EMPTY;
  const wm_key* p = s.keys + dc_slot(bucket, lane);
  return coherent ? __ldcg(p) : *p;
}

// Copies a value (DC_VALUE_WORDS words), the lanes sharing its words (lane l: words l, l + 32,
// ...), so a wide value moves in coalesced accesses. `coherent`: src from L2. A lane that
// copies a word in one call and overwrites the same word's source in a later call does so in
// program order (the eviction chain relies on it).
template <bool coherent>
__device__ __forceinline__ void dc_copy_value(wm_value* dst, const wm_value* src) {
  const u32* s = reinterpret_cast<const u32*>(src);
  u32* d = reinterpret_cast<u32*>(dst);
  for (u32 w = dc_lane(); w < DC_VALUE_WORDS; w += 32) d[w] = coherent ? __ldcg(s + w) : s[w];
}

// Loads a value into this lane's share of registers (from L2), and stores it from them.
__device__ __forceinline__ void dc_load_value(u32 (&r)[DC_VALUE_REGS], const wm_value* src) {
  const u32* s = reinterpret_cast<const u32*>(src);
#pragma unroll
  for (int i = 0; i < DC_VALUE_REGS; i++) {
    const u32 w = dc_lane() + 32u * i;
    if (w < DC_VALUE_WORDS) r[i] = __ldcg(s + w);
  }
}
__device__ __forceinline__ void dc_store_value(wm_value* dst, const u32 (&r)[DC_VALUE_REGS]) {
  u32* d = reinterpret_cast<u32*>(dst);
#pragma unroll
  for (int i = 0; i < DC_VALUE_REGS; i++) {
    const u32 w = dc_lane() + 32u * i;
    if (w < DC_VALUE_WORDS) d[w] = r[i];
  }
}

// The fence of the bucket locks: acquire-release at GPU scope (PTX fence.acq_rel.gpu), which is
// what a lock's acquire (after the CAS that takes it), its release (before the add that frees
// it) and a sequence lock's reader need; __threadfence() is the heavier sequentially-consistent
// fence.sc.gpu.
__device__ __forceinline__ void dc_fence() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

// Orders the warp's reads of lock words and of what they protect (a sequence lock's reader):
// each lane's earlier reads before its later ones (the fence), and across lanes (the barrier:
// one lane reads a lock word, the others the bucket).
__device__ __forceinline__ void dc_order() {
  dc_fence();
  __syncwarp();
}

// Takes a sequence lock (even: free); false if it is held.
// One atomicOr: an even version v becomes v + 1 (taken); on an odd one it changes nothing.
// `poll`: read the word first and skip the atomic while it is held (a waiter's later tries).
__device__ __forceinline__ bool dc_try_lock(u32* lock, bool poll) {
  if (poll && (__ldcg(lock) & 1u)) return false;
  return (atomicOr(lock, 1u) & 1u) == 0u;
}

// Lane `who` tries to take `lock`; every lane learns the outcome. The taker fences and the warp
// synchronises, so that every lane's later reads see what the last holder wrote. `patient` (the
// escalated insert, which holds the escalation token): wait until the lock is taken.
__device__ __forceinline__ bool dc_warp_lock(u32* lock, u32 who, bool patient) {
  bool got = false;
  if (dc_lane() == who) {
    // A held lock is waited for a while (its holder usually finishes within microseconds)
    // before the attempt gives up: giving up at once made attempts under contention fail
    // until their limit. The wait is bounded, so two warps that each wait for the other's
    // lock give up and retry after a jittered back-off (dc_serve_insert). Only the one
    // escalated warp waits without bound: every other holder gives up or finishes in bounded
    // time, so its wait ends.
    for (u32 spin = 0;; spin++) {
      got = dc_try_lock(lock, spin > 0u);
      if (got || (spin >= DC_LOCK_SPINS && !patient)) break;
      __nanosleep(32u << (spin < 5u ? spin : 5u));
    }
    if (got) dc_fence();
  }
  got = __shfl_sync(DC_FULL, got, who);
  __syncwarp();
  return got;
}

// Makes the warp's writes visible, then releases the locks of the lanes in `holders` (each its
// own): the version moves on to the next even number.
__device__ __forceinline__ void dc_warp_unlock(u32* lock, u32 holders) {
  dc_fence();
  __syncwarp();
  if ((holders >> dc_lane()) & 1u) atomicAdd(lock, 1u);
}

// Releases the locks of the lanes in `holders` after the warp changed nothing under them: the
// version goes back to what it was before the lock, so that readers validating a snapshot of
// these buckets need not read them again. (Every failed attempt releasing with a new version
// made the other warps' snapshots fail in turn: inserts under contention retried until they ran
// out of attempts.)
__device__ __forceinline__ void dc_warp_unlock_unchanged(u32* lock, u32 holders) {
  __syncwarp();
  if ((holders >> dc_lane()) & 1u) atomicSub(lock, 1u);
}

// ---------------------------------------------------------------------------------------------
// The side path: user keys equal to WM_KEY_EMPTY (slot 0) or WM_KEY_TOMBSTONE (slot 1), each
// with a sequence lock and a present flag (t.side) and a value (t.side_values). Values of any
// width (kernels/common/side.cuh holds narrow values only).

struct dc_outcome {
  u32 status;  // WM_STATUS_* or DC_RETRY
  u32 sub;     // the subtable that gained a key (a new key), or DC_NONE
};

__device__ __forceinline__ dc_outcome dc_side_insert(const dc_view& t, int slot, const wm_value* v, bool assign,
                                                     bool patient) {
  u32* lock = t.side + slot;
  if (!dc_warp_lock(lock, 0, patient)) return {DC_RETRY, DC_NONE};
  const bool present = __ldcg(t.side + 2 + slot) != 0u;
  if (!present || assign) dc_copy_value<false>(t.side_values + slot, v);
  if (!present && dc_lane() == 0) t.side[2 + slot] = 1u;
  dc_warp_unlock(lock, 1u);
  const u32 info = present ? (assign ? WM_STATUS_UPDATED : WM_STATUS_PRESENT) : 0u;
  return {WM_STATUS_SENTINEL_KEY | info, DC_NONE};
}

// A side-path find while inserts run: the flag and value read between two reads of the lock
// word, again until it was free and unchanged.
__device__ __forceinline__ bool dc_side_find_validated(const dc_view& t, int slot, wm_value* out) {
  for (;;) {
    // Every lane reads the version, then (after a fence: the reads below come after it) the
    // flag and its share of the value, then the version again.
    const u32 v1 = __ldcg(t.side + slot);
    dc_order();
    if (!__all_sync(DC_FULL, v1 == __shfl_sync(DC_FULL, v1, 0)) || (v1 & 1u)) continue;
    const bool present = __ldcg(t.side + 2 + slot) != 0u;
    u32 r[DC_VALUE_REGS];
    if (present) dc_load_value(r, t.side_values + slot);
    dc_order();
    const u32 v2 = __ldcg(t.side + slot);
    if (__any_sync(DC_FULL, v2 != v1)) continue;  // unchanged in every lane: `present` agrees
    if (present && out != nullptr) dc_store_value(out, r);
    return present;
  }
}

// `concurrent`: inserts may run in the same launch (validated by the lock's version).
template <bool concurrent>
__device__ __forceinline__ bool dc_side_find(const dc_view& t, int slot, wm_value* out) {
  if constexpr (!concurrent) {
    const bool present = t.side[2 + slot] != 0u;
    if (present && out != nullptr) dc_copy_value<false>(out, t.side_values + slot);
    return present;
  } else {
    return dc_side_find_validated(t, slot, out);
  }
}

// ---------------------------------------------------------------------------------------------
// Insert (the voter scheme's step for one key), find and erase: every lane calls them with the
// same key.

// The locks an inserting warp holds: lane s holds the s-th bucket of its eviction chain (lane
// 0: the key's bucket in its target subtable) and, once chosen, the slot that will change there.
struct dc_chain {
  u32 sub, bucket, slot;
  u32 depth;  // the last lane holding a lock (the same in every lane)
};

__device__ __forceinline__ void dc_release(const dc_view& t, const dc_chain& c) {
  const u32 holders = c.depth >= 31u ? DC_FULL : (2u << c.depth) - 1u;
  dc_warp_unlock(dc_sub(t, c.sub).locks + c.bucket, holders);
}
// The same when nothing under the chain's locks changed.
__device__ __forceinline__ void dc_release_unchanged(const dc_view& t, const dc_chain& c) {
  const u32 holders = c.depth >= 31u ? DC_FULL : (2u << c.depth) - 1u;
  dc_warp_unlock_unchanged(dc_sub(t, c.sub).locks + c.bucket, holders);
}

// Writes (k, v) into slot `slot` of bucket `bucket` of s (under the bucket's lock).
__device__ __forceinline__ void dc_write_pair(const dc_subtable& s, u32 bucket, u32 slot, wm_key k, const wm_value* v) {
  const u64 at = dc_slot(bucket, slot);
  dc_copy_value<false>(s.values + at, v);
  if (dc_lane() == 0) s.keys[at] = k;
}

// Moves the chain's pairs one step on, from its end back to its start (the pair in the chosen
// slot of step j - 1 goes to the chosen slot of step j; the last step's slot is empty), then
// writes (k, v) into step 0's slot. Back to front, each source is read before it is overwritten
// (lane 0 moves the keys, the lanes share each value's words: each lane reads a word before it
// overwrites it, in program order), and a pair is in the table at every moment.
__device__ __forceinline__ void dc_move_chain(const dc_view& t, const dc_chain& c, wm_key k, const wm_value* v) {
  for (int j = (int)c.depth; j >= 1; j--) {
    const dc_subtable d = dc_sub(t, __shfl_sync(DC_FULL, c.sub, j));
    const dc_subtable s = dc_sub(t, __shfl_sync(DC_FULL, c.sub, j - 1));
    const u64 di = dc_slot(__shfl_sync(DC_FULL, c.bucket, j), __shfl_sync(DC_FULL, c.slot, j));
    const u64 si = dc_slot(__shfl_sync(DC_FULL, c.bucket, j - 1), __shfl_sync(DC_FULL, c.slot, j - 1));
    dc_copy_value<true>(d.values + di, s.values + si);
    if (dc_lane() == 0) d.keys[di] = __ldcg(s.keys + si);
  }
  dc_write_pair(dc_sub(t, __shfl_sync(DC_FULL, c.sub, 0)), __shfl_sync(DC_FULL, c.bucket, 0),
                __shfl_sync(DC_FULL, c.slot, 0), k, v);
}

// One attempt to insert (k, v) (the leader's key; v points at its value) with target subtable
// t0. Returns the status and the subtable that gained a key, or DC_RETRY when a lock was taken
// by another warp (nothing changed). `salt` varies the victims between attempts. REINSERT (a
// downsize's residuals): the key is known to be absent, so the snapshot of its other buckets is
// skipped. `patient`: the escalated attempt (dc_serve_insert), which waits for every lock it
// needs, so it returns DC_RETRY only when its snapshot of the key's other buckets failed.
template <bool REINSERT>
__device__ __forceinline__ dc_outcome dc_insert(const dc_view& t, wm_key k, u32 cand, const wm_value* v, u32 t0,
                                             bool assign, u32 salt, bool patient) {
  // cand, lane j < d: k's bucket in subtable j.
  const u32 lane = dc_lane();
  dc_chain c;
  c.sub = t0;
  c.bucket = __shfl_sync(DC_FULL, cand, t0);
  c.slot = 0;
  c.depth = 0;
  const dc_subtable s0 = dc_sub(t, t0);
  // The optimistic start, in three round trips: every one of the key's d lock words; then (after
  // a fence) the target's lock taken at the version read while the warp reads the keys of all d
  // buckets; then (after a fence) the other lock words again. Reads that follow the first read
  // of an even version v are what the bucket held at v if the lock then goes from v to v + 1: no
  // writer held it meanwhile (a holder that changed nothing puts v back, but then nothing changed).
  const bool mine = lane < DC_D && lane != t0;  // lanes that read another bucket's lock word
  u32* lock = lane < DC_D ? dc_sub(t, lane).locks + cand : nullptr;
  u32 ver = lane < DC_D ? __ldcg(lock) : 0u;
  dc_order();
  bool got = false;
  if (lane == t0 && (ver & 1u) == 0u) got = atomicCAS(lock, ver, ver + 1u) == ver;
  wm_key seen[DC_D];  // this lane's slot of each of the key's buckets
#pragma unroll
  for (int j = 0; j < DC_D; j++) seen[j] = dc_read_key<true>(t.sub[j], __shfl_sync(DC_FULL, cand, j));
  got = __shfl_sync(DC_FULL, got, t0);
  wm_key key = WM_KEY_EMPTY;
  if (got) {
#pragma unroll
    for (int j = 0; j < DC_D; j++) {
      if ((u32)j == t0) key = seen[j];
    }
  } else {
    // The target was held or changed: wait for its lock, then read it.
    if (!dc_warp_lock(s0.locks + c.bucket, 0, patient)) return {DC_RETRY, DC_NONE};
    key = dc_read_key<true>(s0, c.bucket);
  }

  const u32 hit = __ballot_sync(DC_FULL, lane < DC_SLOTS && key == k);
  if (hit != 0u) {
    if (assign) {
      dc_copy_value<false>(s0.values + dc_slot(c.bucket, __ffs(hit) - 1), v);
      dc_release(t, c);
    } else {
      dc_release_unchanged(t, c);
    }
    return {assign ? WM_STATUS_UPDATED : WM_STATUS_PRESENT, DC_NONE};
  }

  if (!REINSERT) {
    // (A fresh batch too: its keys come here when their target bucket is full, and a key that
    // left a full bucket may be anywhere; see dc_insert_tiles.)
    // The key's buckets in the other subtables, between two reads of their lock words: if no
    // word was odd or changed, no pair moved in or out of them meanwhile, and k (which cannot
    // enter the locked target bucket) is in one of them or absent. First the optimistic reads;
    // if they fail validation, a fresh snapshot.
    u32 found_sub = DC_NONE, found_slot = 0;
    bool valid = false;
    if (got) {
      dc_order();
      const u32 ver2 = mine ? __ldcg(lock) : 0u;
      valid = !__any_sync(DC_FULL, mine && ((ver & 1u) || ver2 != ver));
      if (valid) {
#pragma unroll
        for (int j = 0; j < DC_D; j++) {
          if ((u32)j == t0) continue;
          const u32 h = __ballot_sync(DC_FULL, lane < DC_SLOTS && seen[j] == k);
          if (h != 0u && found_sub == DC_NONE) {
            found_sub = (u32)j;
            found_slot = __ffs(h) - 1;
          }
        }
      }
    }
    if (!valid) {
      ver = mine ? __ldcg(lock) : 0u;
      dc_order();
      if (!__any_sync(DC_FULL, mine && (ver & 1u))) {
#pragma unroll
        for (int j = 0; j < DC_D; j++) {
          if ((u32)j == t0) continue;
          const u32 bj = __shfl_sync(DC_FULL, cand, j);
          const wm_key kj = dc_read_key<true>(t.sub[j], bj);
          const u32 h = __ballot_sync(DC_FULL, lane < DC_SLOTS && kj == k);
          if (h != 0u && found_sub == DC_NONE) {
            found_sub = (u32)j;
            found_slot = __ffs(h) - 1;
          }
        }
        dc_order();
      }
      const u32 ver2 = mine ? __ldcg(lock) : 0u;
      if (__any_sync(DC_FULL, mine && ((ver & 1u) || ver2 != ver))) {
        dc_release_unchanged(t, c);
        return {DC_RETRY, DC_NONE};
      }
    }
    if (found_sub != DC_NONE) {
      if (assign) {
        // Lock that bucket at the version of the snapshot: unchanged since, k is still there.
        const u32 at_version = __shfl_sync(DC_FULL, ver, found_sub);
        const u32 bj = __shfl_sync(DC_FULL, cand, found_sub);
        const dc_subtable sj = dc_sub(t, found_sub);
        bool held = false;
        if (lane == 0) {
          held = atomicCAS(sj.locks + bj, at_version, at_version + 1u) == at_version;
          if (held) dc_fence();
        }
        held = __shfl_sync(DC_FULL, held, 0);
        __syncwarp();
        if (!held) {
          dc_release_unchanged(t, c);
          return {DC_RETRY, DC_NONE};
        }
        dc_copy_value<false>(sj.values + dc_slot(bj, found_slot), v);
        dc_warp_unlock(sj.locks + bj, 1u);
      }
      dc_release_unchanged(t, c);  // the target bucket did not change
      return {assign ? WM_STATUS_UPDATED : WM_STATUS_PRESENT, DC_NONE};
    }
  }

  // k is absent: an empty slot of the target bucket, or an eviction chain.
  u32 empty = __ballot_sync(DC_FULL, lane < DC_SLOTS && key == WM_KEY_EMPTY);
  if (empty != 0u) {
    dc_write_pair(s0, c.bucket, __ffs(empty) - 1, k, v);
    dc_release(t, c);
    return {WM_STATUS_OK, t0};
  }
  u32 cur = t0;
  for (u32 step = 0; step < t.max_evictions && step < 31u; step++) {
    const u32 nxt = dc_next(t, cur);
    if (nxt == cur) break;  // no other subtable to evict into
    const dc_subtable sn = dc_sub(t, nxt);
    // Each slot's key (the bucket is full) and its bucket in the next subtable; a victim whose
    // bucket there the chain already holds would come back into the chain.
    const bool slot_lane = lane < DC_SLOTS;
    const u32 alt = slot_lane ? dc_bucket(sn, key) : 0u;
    bool clash = false;
    for (u32 j = 0; j <= step; j++) {
      const u32 hs = __shfl_sync(DC_FULL, c.sub, j), hb = __shfl_sync(DC_FULL, c.bucket, j);
      clash |= hs == nxt && hb == alt;
    }
    const u32 usable = __ballot_sync(DC_FULL, slot_lane && !clash);
    if (usable == 0u) break;
    const u32 start = (u32)wm_fmix64((u64)k ^ ((u64)salt << 32) ^ (step * 0x9e3779b97f4a7c15ull)) % DC_SLOTS;
    const u32 later = usable & (DC_FULL << start);
    const u32 victim = __ffs(later != 0u ? later : usable) - 1;
    if (lane == step) c.slot = victim;
    const u32 nb = __shfl_sync(DC_FULL, alt, victim);
    if (lane == step + 1u) {
      c.sub = nxt;
      c.bucket = nb;
    }
    if (!dc_warp_lock(sn.locks + nb, step + 1u, patient)) {
      dc_release_unchanged(t, c);  // lanes 0..step: nothing moved yet
      return {DC_RETRY, DC_NONE};
    }
    c.depth = step + 1u;
    key = dc_read_key<true>(sn, nb);
    empty = __ballot_sync(DC_FULL, lane < DC_SLOTS && key == WM_KEY_EMPTY);
    if (empty != 0u) {
      if (lane == step + 1u) c.slot = __ffs(empty) - 1;
      dc_move_chain(t, c, k, v);
      dc_release(t, c);
      return {WM_STATUS_OK, nxt};
    }
    cur = nxt;
  }
  dc_release_unchanged(t, c);
  return {WM_STATUS_TABLE_FULL, DC_NONE};
}

// Looks k up (Algorithm 1) while inserts run in the same launch (the mixed kernel): true when
// present, and then its value goes to *out. The key's buckets are read between two reads of
// their lock words, and again until none was held or changed. (The phase-separated kernels
// search by tiles: dc_search_tiles.)
__device__ __forceinline__ bool dc_find_validated(const dc_view& t, wm_key k, wm_value* out) {
  const int side = wm_side_slot(k);
  if (side >= 0) return dc_side_find<true>(t, side, out);
  const u32 lane = dc_lane();
  u32 cand = 0;
  if (lane < DC_D) cand = dc_bucket(dc_sub(t, lane), k);
  u32* lock = lane < DC_D ? dc_sub(t, lane).locks + cand : nullptr;
  for (;;) {
    const u32 ver = lane < DC_D ? __ldcg(lock) : 0u;
    dc_order();
    if (__any_sync(DC_FULL, ver & 1u)) continue;
    u32 r[DC_VALUE_REGS];
    bool hit = false;
#pragma unroll
    for (int j = 0; j < DC_D; j++) {
      const u32 bj = __shfl_sync(DC_FULL, cand, j);
      const wm_key kj = dc_read_key<true>(t.sub[j], bj);
      const u32 h = __ballot_sync(DC_FULL, lane < DC_SLOTS && kj == k);
      if (h != 0u) {
        dc_load_value(r, t.sub[j].values + dc_slot(bj, __ffs(h) - 1));
        hit = true;
        break;
      }
    }
    dc_order();
    const u32 ver2 = lane < DC_D ? __ldcg(lock) : 0u;
    if (__any_sync(DC_FULL, ver2 != ver)) continue;
    if (hit && out != nullptr) dc_store_value(out, r);
    return hit;
  }
}

// ---------------------------------------------------------------------------------------------
// Batches: 32 keys per warp per round, one per lane; warps stride over the batch.

// Calls body(i, active) in every lane of every warp, for rounds of 32 consecutive items (lane l:
// item base + l); `active` is false past the end. Every lane takes part in every round.
template <typename F>
__device__ __forceinline__ void dc_for_each_round(u64 n, F body) {
  const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
  const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  for (u64 base = warp * 32; base < n; base += warps * 32) body(base + dc_lane(), base + dc_lane() < n);
}

// Calls serve(src) for each lane src whose `pending` is set, all lanes together, until none is:
// the voter scheme. serve() clears `pending` in lane src when src's work is done; otherwise
// (a lock was taken) the next lane with work leads (round robin), so the warp moves to another
// bucket instead of spinning.
template <typename F>
__device__ __forceinline__ void dc_vote(bool& pending, F serve) {
  u32 queue = __ballot_sync(DC_FULL, pending);
  int last = 31;
  while (queue != 0u) {
    const u32 later = last >= 31 ? 0u : queue & (DC_FULL << (last + 1));
    const int src = __ffs(later != 0u ? later : queue) - 1;
    last = src;
    serve(src);
    queue = __ballot_sync(DC_FULL, pending);
  }
}

// Adds `by` to count j of a per-lane array of DC_D counts (compile-time indices: registers).
__device__ __forceinline__ void dc_count(long long (&delta)[DC_D], u32 j, long long by) {
#pragma unroll
  for (int i = 0; i < DC_D; i++) {
    if (j == (u32)i) delta[i] += by;
  }
}
__device__ __forceinline__ void dc_flush_counts(u64* counts, long long (&delta)[DC_D]) {
#pragma unroll
  for (int i = 0; i < DC_D; i++) wm_add_count(counts + i, delta[i]);
}

// Serves the insert of lane src's key in a dc_vote round: the key, its value and its target are
// shuffled to the warp; lane src records the outcome.
template <bool REINSERT>
__device__ __forceinline__ void dc_serve_insert(const dc_view& t, const wm_bulk& b, int src, wm_key k,
                                                const u32 (&cand)[DC_D], u64 i, u32 target, bool assign,
                                                bool& pending, u32& status, u32& attempts,
                                                long long (&delta)[DC_D]) {
  const wm_key sk = __shfl_sync(DC_FULL, k, src);
  u32 scand = 0;  // lane j < d: the key's bucket in subtable j (hashed by its own lane)
#pragma unroll
  for (int j = 0; j < DC_D; j++) {
    const u32 bj = __shfl_sync(DC_FULL, cand[j], src);
    if (dc_lane() == (u32)j) scand = bj;
  }
  const u64 si = __shfl_sync(DC_FULL, i, src);
  const u32 st = __shfl_sync(DC_FULL, target, src);
  const u32 salt = __shfl_sync(DC_FULL, attempts, src);
  const int side = wm_side_slot(sk);
  const bool escalate = salt >= DC_ESCALATE_AFTER;
  u32* token = t.side + DC_SIDE_TOKEN;
  if (escalate) {
    // One escalated warp at a time: two patient warps could wait for each other's locks. The
    // token's waiters hold no lock.
    if (dc_lane() == 0) {
      while (atomicCAS(token, 0u, 1u) != 0u) __nanosleep(256);
      dc_fence();
    }
    __syncwarp();
  }
  dc_outcome o;
  for (u32 tries = 0;; tries++) {
    o = side >= 0 ? dc_side_insert(t, side, b.values + si, assign, escalate)
                  : dc_insert<REINSERT>(t, sk, scand, b.values + si, st, assign, salt + tries, escalate);
    if (o.status != DC_RETRY || !escalate) break;
    if (tries + 1u >= DC_ESCALATED_TRIES) {
      o.status = WM_STATUS_PROBE_LIMIT;
      break;
    }
    __nanosleep(128);  // the snapshot met a chain moving through the key's buckets
  }
  if (escalate) {
    __syncwarp();
    if (dc_lane() == 0) {
      dc_fence();
      atomicExch(token, 0u);
    }
  }
  if ((int)dc_lane() == src) {
    if (o.status != DC_RETRY) {
      status = o.status;
      pending = false;
      if (o.sub != DC_NONE) dc_count(delta, o.sub, 1);
    } else {
      attempts++;
    }
  }
  // A lost attempt backs off before the warp's next one, for a time that grows with the key's
  // lost attempts and differs between warps: two warps whose chains each need the other's
  // bucket otherwise retry in step with each other indefinitely.
  if (o.status == DC_RETRY && salt >= 2u) {
    const u32 warp = (u32)(((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    const u32 jitter = wm_fmix32(warp * 0x9e3779b9u ^ salt) & 1023u;
    __nanosleep(min(salt, 64u) * 64u + jitter);
  }
}

// Whether an insert's status says a new key (placed, neither updated nor kept).
__device__ __forceinline__ bool dc_is_new(u32 status) {
  return (status & (WM_STATUS_FAILURE_MASK | WM_STATUS_UPDATED | WM_STATUS_PRESENT)) == 0u;
}

// ---------------------------------------------------------------------------------------------
// The tile insert: the common case of the voter scheme, by tiles of DC_TILE lanes. A warp
// serving one key at a time spends most of its instructions on ballots and shuffles for that one
// key; here each tile of DC_TILE lanes serves its own leader (the voter scheme inside the tile),
// each lane reading a 16-byte slice of each bucket, so one instruction works for four keys. One
// attempt is three round trips: (1) the target bucket's lock taken (atomicOr) and the lock words
// of the key's other buckets read; (2) the key's d buckets read; (3) the other lock words read
// again (the validated snapshot of dc_insert), with a fence between them. (Ordering them by
// address dependencies instead of fences was measured 15 % faster on an H100 but lost a key in
// 10^8: a dependent load is not ordered after the load it depends on there.) The key is then
// updated or written into an empty slot of its target, and the lock released after a fence. A key whose
// target lock was held tries again; a key whose target is full (an eviction chain), that is
// present in another subtable (updated there), on the side path, or that lost DC_TILE_TRIES
// attempts goes to the serial path (dc_serve_insert: chains, back-off, escalation).

#define DC_TILE 8                        // lanes per tile: a 128-byte bucket in 16-byte slices
#define DC_SPL (DC_SLOTS / DC_TILE)      // slots per lane's slice: 4 (4-byte keys) or 2 (8-byte)
#define DC_TILE_MASK ((1u << DC_TILE) - 1u)
#define DC_TILE_TRIES 2u                 // lost tile attempts before a key takes the serial path
#define DC_SLOW 0xfffffffeu              // a tile attempt's outcome: the key takes the serial path
static_assert(DC_D <= DC_TILE, "a tile's lanes hold its key's lock words");

// Lane r's 16-byte slice of a bucket (slots r * DC_SPL ..), from L2.
struct dc_slice {
  wm_key s[DC_SPL];
};
__device__ __forceinline__ dc_slice dc_read_slice(const wm_key* bucket, u32 r) {
  const uint4 v = __ldcg(reinterpret_cast<const uint4*>(bucket) + r);
  dc_slice o;
#if WM_KEY_BYTES == 4
  o.s[0] = v.x;
  o.s[1] = v.y;
  o.s[2] = v.z;
  o.s[3] = v.w;
#else
  o.s[0] = ((u64)v.y << 32) | v.x;
  o.s[1] = ((u64)v.w << 32) | v.z;
#endif
  return o;
}

// A value in hand: narrow values in the owner lane's register (read with the key), wider ones
// copied from the batch.
#ifdef WM_VALUE_WIDE
struct dc_value_in_hand {
  __device__ __forceinline__ dc_value_in_hand(const wm_bulk&, u64, bool) {}
};
#else
struct dc_value_in_hand {
  wm_value v;
  __device__ __forceinline__ dc_value_in_hand(const wm_bulk& b, u64 i, bool active) : v(active ? b.values[i] : (wm_value)0) {}
};
#endif

// Tile attempts for the lanes with `pending` set and `serial` clear, until every such key is
// done or marked `serial`. Sets `status` and clears `pending` in each lane whose key is done.
template <bool REINSERT>
__device__ __forceinline__ void dc_insert_tiles(const dc_view& t, const wm_bulk& b, wm_key k, const u32 (&cand)[DC_D],
                                                u32 target, u64 i, const dc_value_in_hand& hand, bool assign,
                                                bool& pending, bool& serial, u32& status, u32& attempts,
                                                long long (&delta)[DC_D]) {
  const u32 lane = dc_lane(), r = lane % DC_TILE, base = lane - r;
  // Whether the key's other buckets must be read: not for a downsize's residuals (distinct and
  // absent), nor in a fresh batch, where a target with an empty slot and without the key says
  // the key is absent (dc_insert_threads says why); a full target sends the key to the serial
  // path, which reads every bucket. The tile then reads one line where it read d.
  const bool check_others = !REINSERT && t.fresh == 0u;
  for (;;) {
    const u32 want = __ballot_sync(DC_FULL, pending && !serial);
    if (want == 0u) break;
    const u32 waiting = (want >> base) & DC_TILE_MASK;  // this tile's keys still to insert
    const bool active = waiting != 0u;                  // the same in the tile's lanes
    const u32 leader = base + (active ? (u32)__ffs(waiting) - 1u : 0u);
    const wm_key sk = __shfl_sync(DC_FULL, k, leader);
    const u32 t0 = __shfl_sync(DC_FULL, target, leader);
    u32 bkt[DC_D];
#pragma unroll
    for (int j = 0; j < DC_D; j++) bkt[j] = __shfl_sync(DC_FULL, cand[j], leader);
    u32 my_b = bkt[0], bt = bkt[0];  // lane r's subtable's bucket; the target's
    u32* my_locks = t.sub[0].locks;
    wm_key* keys_t = t.sub[0].keys;
    wm_value* values_t = t.sub[0].values;
#pragma unroll
    for (int j = 1; j < DC_D; j++) {
      if (r == (u32)j) {
        my_b = bkt[j];
        my_locks = t.sub[j].locks;
      }
      if (t0 == (u32)j) {
        bt = bkt[j];
        keys_t = t.sub[j].keys;
        values_t = t.sub[j].values;
      }
    }
    const bool is_target = active && r == t0;
    const bool is_other = active && r < DC_D && r != t0 && check_others;
    u32* lock = my_locks + my_b;

    // (1) The target's lock taken, the other lock words read.
    u32 ver = 0;
    if (is_target) ver = atomicOr(lock, 1u);
    else if (is_other) ver = __ldcg(lock);
    dc_order();
    // (2) The key's buckets (the target alone where others need not be read), a slice per lane.
    dc_slice sl[DC_D];
#pragma unroll
    for (int j = 0; j < DC_D; j++) {
      if (active && (check_others || (u32)j == t0)) {
        sl[j] = dc_read_slice(t.sub[j].keys + (u64)bkt[j] * DC_SLOTS, r);
      } else {
#pragma unroll
        for (int x = 0; x < DC_SPL; x++) sl[j].s[x] = WM_KEY_EMPTY;
      }
    }
    // (3) The other lock words again.
    u32 ver2 = 0u;
    if (check_others) {
      dc_order();
      ver2 = is_other ? __ldcg(lock) : 0u;
    }

    // What this lane's slices hold: the key in the target (hit_s), an empty slot of the target
    // (empty_s), the key in another subtable (elsewhere).
    int hit_s = -1, empty_s = -1;
    bool elsewhere = false;
#pragma unroll
    for (int j = 0; j < DC_D; j++) {
#pragma unroll
      for (int x = DC_SPL - 1; x >= 0; x--) {
        const bool eq = sl[j].s[x] == sk;
        if ((u32)j == t0) {
          if (eq) hit_s = x;
          if (sl[j].s[x] == WM_KEY_EMPTY) empty_s = x;
        } else {
          elsewhere |= eq;
        }
      }
    }
    const u32 got = (__ballot_sync(DC_FULL, is_target && (ver & 1u) == 0u) >> base) & DC_TILE_MASK;
    const u32 bad = (__ballot_sync(DC_FULL, is_other && ((ver & 1u) || ver2 != ver)) >> base) & DC_TILE_MASK;
    const u32 hit = (__ballot_sync(DC_FULL, active && hit_s >= 0) >> base) & DC_TILE_MASK;
    const u32 other = (__ballot_sync(DC_FULL, active && elsewhere) >> base) & DC_TILE_MASK;
    const u32 empty = (__ballot_sync(DC_FULL, active && empty_s >= 0) >> base) & DC_TILE_MASK;

    // The outcome, the same in the tile's lanes.
    u32 st = DC_RETRY;
    u32 writer = DC_NONE;  // the tile lane that writes (the slot is in its slice)
    bool new_key = false;
    if (!active || got == 0u) {
      st = DC_RETRY;  // (inactive tiles: unused) the target was held: nothing taken
    } else if (hit != 0u) {
      st = assign ? WM_STATUS_UPDATED : WM_STATUS_PRESENT;
      if (assign) writer = (u32)__ffs(hit) - 1u;
    } else if (check_others && bad != 0u) {
      st = DC_RETRY;  // a chain moved through the key's other buckets meanwhile
    } else if (check_others && other != 0u) {
      st = DC_SLOW;  // present in another subtable: the serial path updates it there
    } else if (empty != 0u) {
      st = WM_STATUS_OK;
      writer = (u32)__ffs(empty) - 1u;
      new_key = true;
    } else {
      st = DC_SLOW;  // full: an eviction chain, on the serial path
    }
#ifndef WM_VALUE_WIDE
    const wm_value v = __shfl_sync(DC_FULL, hand.v, leader);
    if (r == writer) {
      const u64 at = dc_slot(bt, r * DC_SPL + (u32)(new_key ? empty_s : hit_s));
      values_t[at] = v;
      if (new_key) keys_t[at] = sk;
    }
#else
    {
      // The tile's lanes copy the value's words from the batch (lane r: words r, r + DC_TILE, ..).
      const u32 ws = __shfl_sync(DC_FULL, (u32)(new_key ? empty_s : hit_s), base + (writer == DC_NONE ? 0u : writer));
      const u64 si = __shfl_sync(DC_FULL, i, leader);
      if (writer != DC_NONE) {
        const u64 at = dc_slot(bt, writer * DC_SPL + ws);
        const u32* src = reinterpret_cast<const u32*>(b.values + si);
        u32* dst = reinterpret_cast<u32*>(values_t + at);
        for (u32 w = r; w < DC_VALUE_WORDS; w += DC_TILE) dst[w] = src[w];
        if (new_key && r == writer) keys_t[at] = sk;
      }
    }
#endif
    // Release: the writes visible first; a changed bucket's lock moves to the next even version,
    // an unchanged one's goes back to the version it had.
    dc_fence();
    __syncwarp();
    if (is_target && (ver & 1u) == 0u) {
      if (writer != DC_NONE) atomicAdd(lock, 1u);
      else atomicSub(lock, 1u);
    }
    if (lane == leader && active) {
      if (st == DC_RETRY) {
        if (++attempts >= DC_TILE_TRIES) serial = true;
      } else if (st == DC_SLOW) {
        serial = true;
      } else {
        status = st;
        pending = false;
        if (new_key) dc_count(delta, t0, 1);
      }
    }
  }
}

// Slice q of a bucket scanned in slot order: the first slot holding k (`hit`) and the first
// empty one (`empty`) so far, -1 where none.
__device__ __forceinline__ void dc_scan_slice(const dc_slice& sl, u32 q, const wm_key& k, int& hit, int& empty) {
#pragma unroll
  for (int x = 0; x < DC_SPL; x++) {
    const int slot = (int)(q * DC_SPL) + x;
    if (hit < 0 && sl.s[x] == k) hit = slot;
    if (empty < 0 && sl.s[x] == WM_KEY_EMPTY) empty = slot;
  }
}

// One lane reads a whole bucket's keys (eight 16-byte loads from L2) and scans them
// (dc_scan_slice).
__device__ __forceinline__ void dc_scan_bucket(const wm_key* line, const wm_key& k, int& hit, int& empty) {
#pragma unroll
  for (u32 q = 0; q < DC_TILE; q++) dc_scan_slice(dc_read_slice(line, q), q, k, hit, empty);
}

// The same scan of this lane's bucket staged by its warp in shared memory (kernels/common/
// stage.cuh: one request to L2 per bucket, not a lane's 8; first fit's build 4.95 → 5.49 G/s at
// fill 0.8, bench/NOTES.md).
__device__ __forceinline__ void dc_scan_staged(const wm_stage& stage, const wm_key& k, int& hit, int& empty) {
#pragma unroll
  for (u32 q = 0; q < DC_TILE; q++) {
    const ulonglong2 v = wm_staged(stage, q);
    dc_slice sl;
#if WM_KEY_BYTES == 4
    sl.s[0] = (u32)v.x;
    sl.s[1] = (u32)(v.x >> 32);
    sl.s[2] = (u32)v.y;
    sl.s[3] = (u32)(v.y >> 32);
#else
    sl.s[0] = v.x;
    sl.s[1] = v.y;
#endif
    dc_scan_slice(sl, q, k, hit, empty);
  }
}

// The key's bucket in subtable `sub` (of its candidates `cand`) and that subtable's arrays.
struct dc_place {
  u32 bucket;
  u32* locks;
  wm_key* keys;
  wm_value* values;
};
__device__ __forceinline__ dc_place dc_place_in(const dc_view& t, const u32 (&cand)[DC_D], u32 sub) {
  dc_place p{cand[0], t.sub[0].locks, t.sub[0].keys, t.sub[0].values};
#pragma unroll
  for (int j = 1; j < DC_D; j++) {
    if (sub == (u32)j) p = dc_place{cand[j], t.sub[j].locks, t.sub[j].keys, t.sub[j].values};
  }
  return p;
}

// The thread insert: the first tries of a fresh batch's keys and of a downsize's residuals, each
// lane its own key, first fit along the key's order of buckets: its bucket in the target
// subtable, then in the next subtable (dc_next), and so on. A lane takes the bucket's lock, reads
// its 128 bytes itself (eight 16-byte loads from L2), and updates the key, or writes it into an
// empty slot, or (the bucket full) moves on to the next bucket of the order. The warp's 32 keys
// share each round trip and each fence, where a tile step serves 4; and a full target costs one
// more bucket, not an eviction chain, unless all d are full.
//
// Why a fresh batch may stop at the first bucket with room (no key of the batch was in the table
// before it): during an insert batch no slot empties, so a full bucket stays full; a key of the
// batch is written into the first bucket of its order with room (here, or its target by the
// tiles and the serial path), and leaves a bucket only as the victim of an eviction chain, which
// moves it one step on along its order out of a full bucket. So a key of the batch that is in
// the table is in the first bucket of its order with room or in a full one before it, and the
// first bucket with room that does not hold the key says it is absent. Every lane draws its
// key's target from the same weights (dc_weights), so copies of a key share their order. A lock
// held elsewhere is tried DC_THREAD_TRIES times, then the key goes to the tiles; all d buckets
// full send it to the serial path (an eviction chain, after a check of every bucket). Wide
// values (copied by several lanes) take the tiles.
#ifndef DC_THREAD_TRIES
#define DC_THREAD_TRIES 4u
#endif
template <bool REINSERT>
__device__ __forceinline__ void dc_insert_threads(const dc_view& t, wm_key k, const u32 (&cand)[DC_D], u32 target,
                                                  const dc_value_in_hand& hand, bool assign, bool& pending,
                                                  bool& serial, u32& status, long long (&delta)[DC_D]) {
#ifndef WM_VALUE_WIDE
  if (!REINSERT && t.fresh == 0u) return;
  u32 sub = target, lost = 0;
  for (;;) {
    const bool go = pending && !serial && lost < DC_THREAD_TRIES;
    if (!__any_sync(DC_FULL, go)) return;
    const dc_place pl = dc_place_in(t, cand, sub);
    const u32 bucket = pl.bucket;
    u32* const locks = pl.locks;
    wm_key* const keys = pl.keys;
    wm_value* const values = pl.values;
    const bool got = go && (atomicOr(locks + bucket, 1u) & 1u) == 0u;
    dc_fence();  // acquire: the bucket is read after the lock is taken
    int hit = -1, empty = -1;
    if (got) {
      const wm_key* line = keys + (u64)bucket * DC_SLOTS;
      dc_scan_bucket(line, k, hit, empty);
    }
    bool changed = false;
    if (got) {
      if (hit >= 0) {
        if (assign) {
          values[dc_slot(bucket, (u32)hit)] = hand.v;
          changed = true;
        }
        status = assign ? WM_STATUS_UPDATED : WM_STATUS_PRESENT;
        pending = false;
      } else if (empty >= 0) {
        const u64 at = dc_slot(bucket, (u32)empty);
        values[at] = hand.v;
        keys[at] = k;
        changed = true;
        status = WM_STATUS_OK;
        pending = false;
        dc_count(delta, sub, 1);
      } else {
        // Full: the next bucket of the key's order; past the last, an eviction chain.
        const u32 next = dc_next(t, sub);
        if (next == target || next == sub) serial = true;
        else sub = next;
      }
    } else if (go) {
      lost++;
    }
    dc_fence();  // release: the writes before the lock word
    if (got) {
      if (changed) atomicAdd(locks + bucket, 1u);
      else atomicSub(locks + bucket, 1u);  // unchanged: the version it had (dc_warp_unlock_unchanged)
    }
  }
#endif
}

// Inserts the keys of the lanes with `pending` set (each lane its own k, cand, target, value):
// thread tries in a fresh batch (dc_insert_threads), tile attempts while some key may take them,
// then the serial path (dc_serve_insert) for the keys that must (chains, side path, lost tile
// attempts). Clears `pending` and sets `status`
// in each lane as its key is done.
template <bool REINSERT>
__device__ __forceinline__ void dc_insert_keys(const dc_view& t, const wm_bulk& b, wm_key k, const u32 (&cand)[DC_D],
                                               u32 target, u64 i, const dc_value_in_hand& hand, bool assign,
                                               bool& pending, u32& status, u32& attempts,
                                               long long (&delta)[DC_D]) {
  bool serial = pending && wm_side_slot(k) >= 0;
  dc_insert_threads<REINSERT>(t, k, cand, target, hand, assign, pending, serial, status, delta);
  dc_insert_tiles<REINSERT>(t, b, k, cand, target, i, hand, assign, pending, serial, status, attempts, delta);
  dc_vote(pending, [&](int src) {
    dc_serve_insert<REINSERT>(t, b, src, k, cand, i, target, assign, pending, status, attempts, delta);
  });
}

// The insert kernels' body. REINSERT (a downsize's residuals): at most t.scratch[0] keys (the
// residuals the downsize wrote), not counted as new in t.meta (they were stored before), and
// failures counted in t.scratch[1] instead of t.meta[1].
// One round of a batch insert in every lane: lane's key i where `active` (its value, its target
// subtable from `choice`), through the tile attempts and the voter's serial path; its status into
// b.status[i] and the counts into `inserted`, `failed` and `delta`.
template <bool REINSERT>
__device__ __forceinline__ void dc_insert_one(const dc_view& t, const wm_bulk& b, const dc_choice& choice,
                                              bool assign, u64 i, bool active, long long& inserted,
                                              long long& failed, long long (&delta)[DC_D]) {
  const wm_key k = active ? b.keys[i] : (wm_key)0;
  const u32 target = active ? dc_choose(t, choice, k) : 0u;
  const dc_value_in_hand hand(b, i, active);
  bool pending = active;
  u32 status = 0, attempts = 0;
  u32 cand[DC_D];
  dc_buckets(t, k, active, cand);
  dc_insert_keys<REINSERT>(t, b, k, cand, target, i, hand, assign, pending, status, attempts, delta);
  if (active) {
    if (status & WM_STATUS_FAILURE_MASK) failed++;
    else if (dc_is_new(status)) inserted++;
    if (b.status != nullptr) b.status[i] = status;
  }
}

template <bool REINSERT>
__device__ __forceinline__ void dc_insert_batch(const dc_view& t, const wm_bulk& b) {
  const dc_choice choice = dc_weights(t);
  const bool assign = b.assign != 0u;
  const u64 n = REINSERT ? min(b.n, __ldcg(t.scratch)) : b.n;
  long long inserted = 0, failed = 0;
  long long delta[DC_D];
#pragma unroll
  for (int j = 0; j < DC_D; j++) delta[j] = 0;
  dc_for_each_round(n, [&](u64 i, bool active) {
    // Keys that dycuckoo_first_fit placed (and counted) get their status only.
    const bool placed = !REINSERT && active && t.first_fit != 0u &&
                        t.outcome[t.positions != nullptr ? (u64)t.positions[i] : i] != 0u;
    if (placed && b.status != nullptr) b.status[i] = WM_STATUS_OK;
    dc_insert_one<REINSERT>(t, b, choice, assign, i, active && !placed, inserted, failed, delta);
  });
  if (REINSERT) {
    wm_add_count(t.scratch + 1, failed);
  } else {
    wm_add_count(t.meta, inserted);
    wm_add_count(t.meta + 1, failed);
  }
  dc_flush_counts(t.counts, delta);
}

// The insert kernels' occupancy, blocks per multiprocessor (0: the compiler's choice, 72
// registers and 3 blocks of 256 for u32 pairs). An insert waits on round trips, so more
// resident warps hide more: 4 blocks (64 registers, a few bytes spilled) built 2.43 G keys/s
// against 1.88 with 3 (H100, 2^26 u32 pairs, fill 0.8). Only there: 8-byte keys or more than
// 4 subtables would spill far more at 64 registers (88 to 418 bytes), not measured.
#ifndef DC_MIN_BLOCKS
#if WM_KEY_BYTES == 4 && DC_D <= 4
#define DC_MIN_BLOCKS 4
#else
#define DC_MIN_BLOCKS 0
#endif
#endif
#if DC_MIN_BLOCKS > 0
#define DC_BOUNDS __launch_bounds__(WM_BLOCK, DC_MIN_BLOCKS)
#else
#define DC_BOUNDS
#endif

// The same for the staged searches (find, erase, count_absent, unplace), which wait on a line
// per bucket searched. Left to the compiler, erase took 91 registers for u32 pairs: 2 blocks
// of 256 per multiprocessor (16 warps), where find (72) had 3; DC_SEARCH_MIN_BLOCKS 4 caps
// them at 64 (32 warps).
#ifndef DC_SEARCH_MIN_BLOCKS
#define DC_SEARCH_MIN_BLOCKS 0
#endif
#if DC_SEARCH_MIN_BLOCKS > 0
#define DC_SEARCH_BOUNDS __launch_bounds__(WM_BLOCK, DC_SEARCH_MIN_BLOCKS)
#else
#define DC_SEARCH_BOUNDS
#endif

// Inserts b.keys[i] -> b.values[i]; b.status (if not null) gets each key's status.
extern "C" __global__ void DC_BOUNDS dycuckoo_insert(dc_view t, wm_bulk b) { dc_insert_batch<false>(t, b); }

// The insert launch after a first fit in input order that listed the keys it left (t.left,
// *t.left_n of them; the placed keys got their statuses there): the keys left, one per warp
// (lane 0's), warps striding over the list; the last block to finish zeroes the list's length
// (and t.left_n[1], the blocks done) for the next first fit. A grid of one resident wave (the
// host's): where dycuckoo_insert over the whole batch took 12 µs for 0.4 * 2^20 keys that first
// fit had all placed (H100), and a warp whose rounds held several keys left ran their eviction
// chains one after another, here every key left has a warp to itself while the list is shorter
// than the resident warps.
extern "C" __global__ void DC_BOUNDS dycuckoo_insert_left(dc_view t, wm_bulk b) {
  const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x, threads = (u64)gridDim.x * blockDim.x;
  const dc_choice choice = dc_weights(t);
  const bool assign = b.assign != 0u;
  long long inserted = 0, failed = 0;
  long long delta[DC_D];
#pragma unroll
  for (int j = 0; j < DC_D; j++) delta[j] = 0;
  const u64 listed = min(__ldcg(t.left_n), b.n);
  for (u64 w = tid >> 5; w < listed; w += threads >> 5) {
    const bool mine = dc_lane() == 0u;
    const u64 i = mine ? (u64)t.left[w] : 0u;
    dc_insert_one<false>(t, b, choice, assign, i, mine, inserted, failed, delta);
  }
  wm_add_count(t.meta, inserted);
  wm_add_count(t.meta + 1, failed);
  dc_flush_counts(t.counts, delta);
  // (Every block read the length above, before it counts itself done.)
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(reinterpret_cast<unsigned long long*>(t.left_n + 1), 1ull) == gridDim.x - 1u) {
      t.left_n[0] = 0;
      t.left_n[1] = 0;
    }
  }
}

// The check of a batch that may hold keys already in the table (dycuckoo_first_fit with
// t.fresh == 0): such a key may sit in any of its d buckets (erases since it went in may have
// emptied slots before it in this batch's order), so the warp stages and scans every lane's d
// buckets, in the key's order, one bucket each round. A key seen in one of them, or with all d
// full, leaves (`pending` cleared: the second launch decides its status, or runs its eviction
// chain); otherwise `sub` and `empty` name the first empty slot of the order. Keys do not move
// during the launch (no lock, no eviction), so a key that was in the table is seen; from there
// on the key is placed as in a fresh batch (copies of it in the batch meet as there).
__device__ __forceinline__ void dc_check_all(const dc_view& t, wm_stage& stage, const u32 (&cand)[DC_D], u32 target,
                                             const wm_key& k, bool& pending, u32& sub, int& empty) {
  u32 s = target;
  bool seen = false, visiting = pending;
  for (int j = 0; j < DC_D; j++) {
    const dc_place pl = dc_place_in(t, cand, s);
    wm_stage_lines(stage, visiting, pl.keys + (u64)pl.bucket * DC_SLOTS);
    if (visiting) {
      int hit = -1, first = -1;
      dc_scan_staged(stage, k, hit, first);
      seen = seen || hit >= 0;
      if (empty < 0 && first >= 0) {
        empty = first;
        sub = s;
      }
      const u32 next = dc_next(t, s);
      visiting = next != target && next != s;
      s = next;
    }
  }
  if (seen || empty < 0) pending = false;
}

// The first launch of a plain batch of narrow values, fresh (t.fresh: no key of it in the table)
// or checked (every key first looked for in all its buckets, dc_check_all): each lane places
// its own key without a lock, first fit along the key's order of buckets (its target subtable,
// then dc_next): it reads the bucket (the target staged by the warp, dc_scan_staged; a later
// one by the lane, dc_scan_bucket) and takes the *first* empty slot it saw with a CAS of the
// key from empty, then writes the value; a CAS that loses re-reads
// the bucket (at most DC_THREAD_TRIES times). Copies of one key in the batch cannot both land:
// no slot empties during an insert, so a copy that finds a slot taken has seen the other copy's
// key there (and leaves the key to the second launch) or a third key (on which the other
// copy's CAS from empty fails), and a copy that passes a bucket as full saw the other copy's key
// in it if it was there. t.outcome[i] = 1 for a key placed (counted here), 0 for a key left:
// all of its buckets full, a copy of it seen, a sentinel key, or lost CASes (the keys left are
// added to *t.scratch, which the host reads with the counts). The engine's insert
// launch that follows (t.first_fit) gives placed keys their status and runs the locked paths
// (bucket locks, eviction chains, full checks) for the keys left, alone, so no eviction's store
// into an empty slot races a CAS of this launch. One atomic and two round trips per key instead
// of the locked thread insert's two atomics, two fences and three round trips.
//
// ORDERED (dycuckoo_first_fit_ordered): the batch is the build's partition (by target subtable
// and the stretch of the key's bucket there, dycuckoo_stretch_bins), taken in tiles handed out
// in order from *b.counter, so that the keys in flight fall in one stretch of one subtable, which
// stays in L2; t.outcome is in the batch's (partitioned) order, and the insert launch after it
// reads it through t.positions.
//
// A tile of the ordered first fit: this many times the block's threads (from the host:
// src/table/engine/locality.rs ORDERED_ROUNDS, which its plan counts the keys in flight by).
#ifndef DC_ORDERED_ROUNDS
#error "DC_ORDERED_ROUNDS must be defined (src/table/dycuckoo/mod.rs kernel_source)"
#endif
template <bool ORDERED>
__device__ __forceinline__ void dc_first_fit_batch(const dc_view& t, const wm_bulk& b) {
  long long inserted = 0, left = 0;
  long long delta[DC_D];
#pragma unroll
  for (int j = 0; j < DC_D; j++) delta[j] = 0;
#ifndef WM_VALUE_WIDE
  const dc_choice choice = dc_weights(t);
  __shared__ wm_stage stages[WM_BLOCK / 32];
  wm_stage& stage = stages[threadIdx.x >> 5];
  auto body = [&](u64 i, bool active) {
    const wm_key k = active ? b.keys[i] : (wm_key)0;
    bool pending = active && wm_side_slot(k) < 0;
    const u32 target = pending ? dc_choose(t, choice, k) : 0u;
    const wm_value v = pending ? b.values[i] : (wm_value)0;
    u32 cand[DC_D];
    dc_buckets(t, k, pending, cand);
    u32 sub = target, lost = 0;
    bool placed = false, staged = t.fresh != 0u;
    int known_empty = -1;  // checked: a slot of bucket `sub` seen empty by dc_check_all
    if (staged) {
      const dc_place pl = dc_place_in(t, cand, sub);
      wm_stage_lines(stage, pending, pl.keys + (u64)pl.bucket * DC_SLOTS);
    } else {
      dc_check_all(t, stage, cand, target, k, pending, sub, known_empty);
    }
    while (pending) {
      const dc_place pl = dc_place_in(t, cand, sub);
      const u32 bucket = pl.bucket;
      wm_key* const keys = pl.keys;
      wm_value* const values = pl.values;
      const wm_key* line = keys + (u64)bucket * DC_SLOTS;
      int hit = -1, empty = -1;
      if (known_empty >= 0) {
        empty = known_empty;
        known_empty = -1;
      } else if (staged) {
        dc_scan_staged(stage, k, hit, empty);
        staged = false;
      } else {
        dc_scan_bucket(line, k, hit, empty);
      }
      if (hit >= 0) break;  // a copy of the key is in: the second launch decides its status
      if (empty < 0) {
        const u32 next = dc_next(t, sub);
        if (next == target || next == sub) break;  // all d buckets full: an eviction chain
        sub = next;
        continue;
      }
      const u64 at = dc_slot(bucket, (u32)empty);
      const wm_key old = atomicCAS(keys + at, WM_KEY_EMPTY, k);
      if (old == WM_KEY_EMPTY) {
        values[at] = v;
        placed = true;
        dc_count(delta, sub, 1);
        inserted++;
        break;
      }
      if (old == k || ++lost >= DC_THREAD_TRIES) break;  // a copy of the key, or contention
    }
    left += active && !placed;
    if (!ORDERED && t.left != nullptr) {
      // Listed: the placed keys' statuses here, the keys left into the list (every lane calls
      // the aggregated increment: the warp's keys left in one atomic).
      if (placed && b.status != nullptr) b.status[i] = WM_STATUS_OK;
      const bool leave = active && !placed;
      const u64 at = wm_aggregated_inc(t.left_n, leave);
      if (leave) t.left[at] = (u32)i;
    } else if (active) {
      t.outcome[i] = placed ? 1 : 0;
    }
  };
  if (ORDERED) {
    wm_for_each_ordered_lanes<DC_ORDERED_ROUNDS>(b.n, b.counter, body);
  } else {
    dc_for_each_round(b.n, body);
  }
#endif
  wm_add_count(t.meta, inserted);
  wm_add_count(t.scratch, left);
  dc_flush_counts(t.counts, delta);
}
extern "C" __global__ void DC_BOUNDS dycuckoo_first_fit(dc_view t, wm_bulk b) { dc_first_fit_batch<false>(t, b); }
extern "C" __global__ void DC_BOUNDS dycuckoo_first_fit_ordered(dc_view t, wm_bulk b) { dc_first_fit_batch<true>(t, b); }

// The bins of the build's partition (src/table/dycuckoo/mod.rs `partitioned_first_fit`): for
// key i, b.status[i] = its target subtable (drawn from this launch's weights, as the first fit
// that follows draws it) times S = b.assign, plus the stretch of its bucket there (bucket * S /
// buckets: S equal ranges of the subtable's buckets, keys and values), so every bin is below
// DC_D * S. A sentinel key (the side path) takes bin 0: the first fit leaves it to the locked path.
extern "C" __global__ void dycuckoo_stretch_bins(dc_view t, wm_bulk b) {
  const dc_choice choice = dc_weights(t);
  const u32 stretches = b.assign;
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < b.n; i += stride) {
    const wm_key k = b.keys[i];
    u32 bin = 0;
    if (wm_side_slot(k) < 0) {
      const u32 target = dc_choose(t, choice, k);
      const dc_subtable s = dc_sub(t, target);
      bin = target * stretches + (u32)(((u64)dc_bucket(s, k) * stretches) / s.buckets);
    }
    b.status[i] = bin;
  }
}

// A downsize's residuals (t.res_keys, t.res_values passed as b.keys, b.values), into the
// subtables other than t.exclude.
extern "C" __global__ void DC_BOUNDS dycuckoo_reinsert(dc_view t, wm_bulk b) { dc_insert_batch<true>(t, b); }

// Keys a tile searches together in the phase-separated kernels (find, erase): a lone key's
// search is a chain of dependent bucket reads, so each tile keeps this many keys' reads in flight
// (a warp: 32 / DC_TILE times as many).
#ifndef DC_TILE_KEYS
#define DC_TILE_KEYS 2
#endif

__device__ __forceinline__ wm_key* dc_keys_of(const dc_view& t, u32 j) {
  wm_key* p = t.sub[0].keys;
#pragma unroll
  for (int x = 1; x < DC_D; x++) {
    if (j == (u32)x) p = t.sub[x].keys;
  }
  return p;
}
__device__ __forceinline__ wm_value* dc_values_of(const dc_view& t, u32 j) {
  wm_value* p = t.sub[0].values;
#pragma unroll
  for (int x = 1; x < DC_D; x++) {
    if (j == (u32)x) p = t.sub[x].values;
  }
  return p;
}

// Each lane's key's buckets in search order: its target subtable first (where an insert put it
// unless a chain moved it on, or the weights have moved since: then it is in a later one), then
// the next ones. sub[j], bucket[j]: the j-th subtable searched and the key's bucket there.
__device__ __forceinline__ void dc_search_order(const dc_view& t, const dc_choice& choice, wm_key k, bool active,
                                                const u32 (&cand)[DC_D], u32 (&sub)[DC_D],
                                                u32 (&bucket)[DC_D]) {
  const u32 first = active ? dc_choose(t, choice, k) : 0u;
#pragma unroll
  for (int j = 0; j < DC_D; j++) {
    u32 sj = first + (u32)j;
    if (sj >= DC_D) sj -= DC_D;
    sub[j] = sj;
    bucket[j] = cand[0];
#pragma unroll
    for (int x = 1; x < DC_D; x++) {
      if (sj == (u32)x) bucket[j] = cand[x];
    }
  }
}

// Algorithm 1 by tiles (no concurrent insert: plain reads) for the lanes with `want` set: each
// tile of DC_TILE lanes takes up to DC_TILE_KEYS of its lanes' keys at a time and reads, step by
// step of each key's search order (dc_search_order), a 16-byte slice per lane of the bucket of
// each key still unresolved (the warp's 32 / DC_TILE tiles in the same instructions), then
// ballots for the keys. Each lane learns whether its key was found, and where (`found_sub`, and
// `found_at`, the slot's index in that subtable). Subtable `skip` (DC_NONE: none) is not
// searched.
__device__ __forceinline__ void dc_search_tiles(const dc_view& t, bool want, wm_key k, const u32 (&sub)[DC_D],
                                                const u32 (&bucket)[DC_D], u32 skip, bool& found, u32& found_sub,
                                                u64& found_at) {
  const u32 lane = dc_lane(), r = lane % DC_TILE, base = lane - r;
  bool open = want;
  found = false;
  for (;;) {
    const u32 all = __ballot_sync(DC_FULL, open);
    if (all == 0u) break;
    u32 waiting = (all >> base) & DC_TILE_MASK;
    u32 ld[DC_TILE_KEYS];
    bool live[DC_TILE_KEYS];
    wm_key sk[DC_TILE_KEYS];
#pragma unroll
    for (int q = 0; q < DC_TILE_KEYS; q++) {
      live[q] = waiting != 0u;
      ld[q] = base + (live[q] ? (u32)__ffs(waiting) - 1u : 0u);
      waiting &= waiting - 1u;
      sk[q] = __shfl_sync(DC_FULL, k, ld[q]);
      if (live[q] && lane == ld[q]) open = false;
    }
#pragma unroll
    for (int j = 0; j < DC_D; j++) {
      u32 sj[DC_TILE_KEYS], bj[DC_TILE_KEYS];
      dc_slice sl[DC_TILE_KEYS];
#pragma unroll
      for (int q = 0; q < DC_TILE_KEYS; q++) {
        sj[q] = __shfl_sync(DC_FULL, sub[j], ld[q]);
        bj[q] = __shfl_sync(DC_FULL, bucket[j], ld[q]);
        if (live[q] && sj[q] != skip) {
          sl[q] = dc_read_slice(dc_keys_of(t, sj[q]) + (u64)bj[q] * DC_SLOTS, r);
        } else {
#pragma unroll
          for (int x = 0; x < DC_SPL; x++) sl[q].s[x] = WM_KEY_EMPTY;
        }
      }
#pragma unroll
      for (int q = 0; q < DC_TILE_KEYS; q++) {
        int x_hit = -1;
#pragma unroll
        for (int x = DC_SPL - 1; x >= 0; x--) {
          if (sl[q].s[x] == sk[q]) x_hit = x;
        }
        const u32 m = (__ballot_sync(DC_FULL, live[q] && sj[q] != skip && x_hit >= 0) >> base) & DC_TILE_MASK;
        const u32 owner = m != 0u ? (u32)__ffs(m) - 1u : 0u;
        const int xs = __shfl_sync(DC_FULL, x_hit, base + owner);
        if (m != 0u && lane == ld[q]) {
          found = true;
          found_sub = sj[q];
          found_at = dc_slot(bj[q], owner * DC_SPL + (u32)xs);
        }
        live[q] = live[q] && m == 0u;
      }
      bool any = false;
#pragma unroll
      for (int q = 0; q < DC_TILE_KEYS; q++) any |= live[q];
      if (!__any_sync(DC_FULL, any)) break;
    }
  }
}

// Hashes each lane's key (where `want`), orders its buckets target first, and searches them by
// tiles (dc_search_tiles): the phase-separated kernels' lookup.
__device__ __forceinline__ void dc_locate(const dc_view& t, const dc_choice& choice, bool want, wm_key k, u32 skip,
                                          bool& found, u32& found_sub, u64& found_at) {
  u32 cand[DC_D], sub[DC_D], bucket[DC_D];
  dc_buckets(t, k, want, cand);
  dc_search_order(t, choice, k, want, cand, sub, bucket);
  dc_search_tiles(t, want, k, sub, bucket, skip, found, found_sub, found_at);
}

// Whether the phase-separated kernels (find, erase) search with their buckets staged
// (dc_locate_staged) rather than by tiles (dc_locate). 1 by default; 0 for measurements.
#ifndef DC_STAGED_SEARCH
#define DC_STAGED_SEARCH 1
#endif

// dc_locate with each lane's buckets staged by its warp in shared memory (kernels/common/
// stage.cuh): round j copies the j-th bucket of the search order of every lane still looking
// (one request to L2 per bucket, where a tile's lanes make one per 16-byte slice), and each
// lane scans its own; a lane stops at its key, the warp once every lane has. Every lane of the
// warp calls it.
__device__ __forceinline__ void dc_locate_staged(const dc_view& t, const dc_choice& choice, bool want, wm_key k,
                                                 u32 skip, wm_stage& stage, bool& found, u32& found_sub,
                                                 u64& found_at) {
  u32 cand[DC_D], sub[DC_D], bucket[DC_D];
  dc_buckets(t, k, want, cand);
  dc_search_order(t, choice, k, want, cand, sub, bucket);
  found = false;
  bool open = want;
#pragma unroll
  for (int j = 0; j < DC_D; j++) {
    if (!__any_sync(DC_FULL, open)) break;
    const bool look = open && sub[j] != skip;
    wm_stage_lines(stage, look, dc_keys_of(t, sub[j]) + (u64)bucket[j] * DC_SLOTS);
    if (look) {
      int hit = -1, empty = -1;
      dc_scan_staged(stage, k, hit, empty);
      if (hit >= 0) {
        found = true;
        found_sub = sub[j];
        found_at = dc_slot(bucket[j], (u32)hit);
        open = false;
      }
    }
  }
}

// The phase-separated kernels' lookup (see DC_STAGED_SEARCH).
__device__ __forceinline__ void dc_lookup(const dc_view& t, const dc_choice& choice, bool want, wm_key k, u32 skip,
                                          wm_stage& stage, bool& found, u32& found_sub, u64& found_at) {
#if DC_STAGED_SEARCH
  dc_locate_staged(t, choice, want, k, skip, stage, found, found_sub, found_at);
#else
  (void)stage;
  dc_locate(t, choice, want, k, skip, found, found_sub, found_at);
#endif
}

// b.found[i] = 1 and b.out[i] = value where b.keys[i] is present; 0 otherwise (b.out[i] left
// alone). b.out may be null (contains).
extern "C" __global__ void DC_SEARCH_BOUNDS dycuckoo_find(dc_view t, wm_bulk b) {
  const dc_choice choice = dc_weights(t);
  __shared__ wm_stage stages[WM_BLOCK / 32];
  wm_stage& stage = stages[threadIdx.x >> 5];
  dc_for_each_round(b.n, [&](u64 i, bool active) {
    const wm_key k = active ? b.keys[i] : (wm_key)0;
    const bool on_side = active && wm_side_slot(k) >= 0;
    bool found = false;
    for (u32 q = __ballot_sync(DC_FULL, on_side); q != 0u; q &= q - 1u) {
      const int src = __ffs(q) - 1;
      const wm_key sk = __shfl_sync(DC_FULL, k, src);
      const u64 si = __shfl_sync(DC_FULL, i, src);
      const bool f = dc_side_find<false>(t, wm_side_slot(sk), b.out != nullptr ? b.out + si : nullptr);
      if ((int)dc_lane() == src) found = f;
    }
    // Where each lane's key was found; the values are copied after the search, all lanes
    // together (one round trip for the warp's hits, not one per hit).
    u32 hit_sub = 0;
    u64 hit_at = 0;
    bool in_table = false;
    dc_lookup(t, choice, active && !on_side, k, DC_NONE, stage, in_table, hit_sub, hit_at);
    if (b.out != nullptr) {
#ifdef WM_VALUE_WIDE
      for (u32 q = __ballot_sync(DC_FULL, in_table); q != 0u; q &= q - 1u) {
        const int src = __ffs(q) - 1;
        const u64 si = __shfl_sync(DC_FULL, i, src), at = __shfl_sync(DC_FULL, hit_at, src);
        dc_copy_value<false>(b.out + si, dc_values_of(t, __shfl_sync(DC_FULL, hit_sub, src)) + at);
      }
#else
      if (in_table) b.out[i] = dc_values_of(t, hit_sub)[hit_at];
#endif
    }
    if (active) b.found[i] = found || in_table ? 1 : 0;
  });
}

// The erase kernels' body. UNPLACE (a failed downsize's rollback): at most t.scratch[0] keys,
// never from subtable t.exclude, and t.meta untouched (the keys stay in the old subtable).
template <bool UNPLACE>
__device__ __forceinline__ void dc_erase_batch(const dc_view& t, const wm_bulk& b) {
  const dc_choice choice = dc_weights(t);
  const u64 n = UNPLACE ? min(b.n, __ldcg(t.scratch)) : b.n;
  const u32 skip = UNPLACE ? t.exclude : DC_NONE;
  // 32-bit per lane (a lane erases at most one key a round), widened at the flush: registers
  // are what bounds this kernel's resident warps (DC_SEARCH_MIN_BLOCKS).
  u32 erased = 0;
  u32 gone[DC_D];
#pragma unroll
  for (int j = 0; j < DC_D; j++) gone[j] = 0;
  __shared__ wm_stage stages[WM_BLOCK / 32];
  wm_stage& stage = stages[threadIdx.x >> 5];
  dc_for_each_round(n, [&](u64 i, bool active) {
    const wm_key k = active ? b.keys[i] : (wm_key)0;
    const bool on_side = active && wm_side_slot(k) >= 0;
    if (on_side) {
      // A side-path key clears its flag (an exchange: of two erases of one key, one counts).
      if (atomicExch(t.side + 2 + wm_side_slot(k), 0u) != 0u) erased++;
    }
    // The slot is cleared by a CAS, so that of two erases of one key one counts (the lanes of
    // the warp all at once, after the search).
    bool tried = false;
    u32 from = 0;
    u64 slot = 0;
    dc_lookup(t, choice, active && !on_side, k, skip, stage, tried, from, slot);
    wm_key old = WM_KEY_EMPTY;
    if (tried) {
      wm_key* at = dc_keys_of(t, from) + slot;
#if WM_KEY_BYTES == 4
      old = atomicCAS(at, k, WM_KEY_EMPTY);
#else
      old = atomicCAS(reinterpret_cast<unsigned long long*>(at), k, WM_KEY_EMPTY);
#endif
    }
    if (tried && old == k) {
      erased++;
#pragma unroll
      for (int j = 0; j < DC_D; j++) gone[j] += from == (u32)j ? 1u : 0u;
    }
  });
  if (!UNPLACE) wm_add_count(t.meta, -(long long)erased);
  long long delta[DC_D];
#pragma unroll
  for (int j = 0; j < DC_D; j++) delta[j] = -(long long)gone[j];
  dc_flush_counts(t.counts, delta);
}

// Erases every present key; t.meta[0] decreases by the number erased. Phase-separated from
// inserts (the paper's rule): never run concurrently with an insert.
extern "C" __global__ void DC_SEARCH_BOUNDS dycuckoo_erase(dc_view t, wm_bulk b) { dc_erase_batch<false>(t, b); }

// A failed downsize's rollback: erases the residuals b.keys (at most t.scratch[0]) from the
// subtables other than t.exclude.
extern "C" __global__ void DC_SEARCH_BOUNDS dycuckoo_unplace(dc_view t, wm_bulk b) { dc_erase_batch<true>(t, b); }

// A mixed batch: b.ops[i] = WM_OP_INSERT inserts (b.assign) and writes b.status[i]; WM_OP_FIND
// looks b.keys[i] up into b.out[i] / b.found[i] while the inserts run (reads validated by the
// bucket locks: a key inserted by an earlier launch is found with its value; one inserted or
// updated in this launch is found with its old or its new value, or not at all if it is new).
// Erases are left alone (the host refuses them: phase-separated, as in the paper).
extern "C" __global__ void DC_BOUNDS dycuckoo_mixed(dc_view t, wm_bulk b) {
  const dc_choice choice = dc_weights(t);
  const bool assign = b.assign != 0u;
  long long inserted = 0, failed = 0;
  long long delta[DC_D];
#pragma unroll
  for (int j = 0; j < DC_D; j++) delta[j] = 0;
  dc_for_each_round(b.n, [&](u64 i, bool active) {
    const u32 op = active ? b.ops[i] : 255u;
    const bool known = op == WM_OP_INSERT || op == WM_OP_FIND;
    const wm_key k = known ? b.keys[i] : (wm_key)0;
    const u32 target = op == WM_OP_INSERT ? dc_choose(t, choice, k) : 0u;
    bool pending = known, found = false;
    u32 status = 0, attempts = 0;
    u32 cand[DC_D];
    dc_buckets(t, k, op == WM_OP_INSERT, cand);
    const dc_value_in_hand hand(b, i, op == WM_OP_INSERT);
    // The round's inserts first (tile attempts, then the serial path), then its finds.
    bool inserting = op == WM_OP_INSERT;
    dc_insert_keys<false>(t, b, k, cand, target, i, hand, assign, inserting, status, attempts, delta);
    if (op == WM_OP_INSERT) pending = false;
    dc_vote(pending, [&](int src) {
      const wm_key sk = __shfl_sync(DC_FULL, k, src);
      const u64 si = __shfl_sync(DC_FULL, i, src);
      const bool f = dc_find_validated(t, sk, b.out + si);
      if ((int)dc_lane() == src) {
        found = f;
        pending = false;
      }
    });
    if (op == WM_OP_INSERT) {
      if (status & WM_STATUS_FAILURE_MASK) failed++;
      else if (dc_is_new(status)) inserted++;
      b.status[i] = status;
    } else if (op == WM_OP_FIND) {
      b.found[i] = found ? 1 : 0;
    }
  });
  wm_add_count(t.meta, inserted);
  wm_add_count(t.meta + 1, failed);
  dc_flush_counts(t.counts, delta);
}

// Position i of the subtables' slots, in subtable order: its subtable and slot.
__device__ __forceinline__ void dc_locate(const dc_view& t, u64 i, u32& sub, u64& slot) {
  sub = 0;
  slot = i;
#pragma unroll
  for (int j = 0; j < DC_D - 1; j++) {
    const u64 size = (u64)t.sub[j].buckets * DC_SLOTS;
    if (sub == (u32)j && slot >= size) {
      slot -= size;
      sub = (u32)j + 1u;
    }
  }
}

__device__ __forceinline__ u64 dc_total_slots(const dc_view& t) {
  u64 total = 0;
#pragma unroll
  for (int j = 0; j < DC_D; j++) total += (u64)t.sub[j].buckets * DC_SLOTS;
  return total;
}

// Writes every stored pair to b.out_keys / b.out at positions from *b.counter, at most b.n of
// them, in no particular order (kernels/common/bulk.cuh wm_compact); the side path's first.
extern "C" __global__ void dycuckoo_retrieve(dc_view t, wm_bulk b) {
  const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (tid < 2 && t.side[2 + tid] != 0u) {
    const u64 pos = atomicAdd(b.counter, 1ull);
    if (pos < b.n) {
      b.out_keys[pos] = tid == 0 ? WM_KEY_EMPTY : WM_KEY_TOMBSTONE;
      wm_copy_elem(b.out, pos, t.side_values, tid);
    }
  }
  u32 sub = 0;
  u64 slot = 0;
  wm_key key = WM_KEY_EMPTY;
  wm_compact(
      dc_total_slots(t), b.counter, b.n,
      [&](u64 i) {
        dc_locate(t, i, sub, slot);
        key = dc_sub(t, sub).keys[slot];
        return key != WM_KEY_EMPTY;
      },
      [&](u64, u64 pos) {
        b.out_keys[pos] = key;
        wm_copy_elem(b.out, pos, dc_sub(t, sub).values, slot);
      });
}

// Counts the keys stored in each subtable into t.scratch[0 .. d) (zeroed by the host): the
// check of t.counts, and its repair after a rolled-back downsize.
extern "C" __global__ void dycuckoo_recount(dc_view t, wm_bulk b) {
  long long c[DC_D];
#pragma unroll
  for (int j = 0; j < DC_D; j++) c[j] = 0;
  const u64 total = dc_total_slots(t);
  const u64 threads = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += threads) {
    u32 sub;
    u64 slot;
    dc_locate(t, i, sub, slot);
    if (dc_sub(t, sub).keys[slot] != WM_KEY_EMPTY) dc_count(c, sub, 1);
  }
  dc_flush_counts(t.scratch, c);
}

// Counts into t.scratch[0] the keys of the batch (those of insert operations where b.ops is not
// null) that are absent from the subtables: at most the keys the batch can add (a key absent
// and repeated in the batch counts each time). The host's growth decision (the side path's keys
// take no slot and are not counted).
extern "C" __global__ void DC_SEARCH_BOUNDS dycuckoo_count_absent(dc_view t, wm_bulk b) {
  const dc_choice choice = dc_weights(t);
  long long absent = 0;
  __shared__ wm_stage stages[WM_BLOCK / 32];
  wm_stage& stage = stages[threadIdx.x >> 5];
  dc_for_each_round(b.n, [&](u64 i, bool active) {
    const bool insert = active && (b.ops == nullptr || b.ops[i] == WM_OP_INSERT);
    const wm_key k = insert ? b.keys[i] : (wm_key)0;
    const bool subtable_key = insert && wm_side_slot(k) < 0;
    bool found = false;
    u32 sub_at = 0;
    u64 slot_at = 0;
    dc_lookup(t, choice, subtable_key, k, DC_NONE, stage, found, sub_at, slot_at);
    if (subtable_key && !found) absent++;
  });
  wm_add_count(t.scratch, absent);
}

// Upsize (§5.3): subtable t.resize_subtable (|h| buckets) into t.new_keys / t.new_values
// (t.new_buckets = 2|h| buckets, not initialised): the key in slot s of bucket loc goes to slot s
// of bucket loc or loc + |h| (its hash mod 2|h|), and the same slot of the other bucket gets the
// empty key. So every slot of the new arrays is written, in whole sectors: no fill before, and
// no partial-sector writes that the L2 would first read from DRAM. The value goes to both slots
// (the empty one's is never read). No two keys meet, so nothing is locked. A thread per old slot.
extern "C" __global__ void dycuckoo_upsize(dc_view t, wm_bulk b) {
  const dc_subtable s = dc_sub(t, t.resize_subtable);
  const u64 slots = (u64)s.buckets * DC_SLOTS;  // bucket loc + |h| starts `slots` slots on
  const u64 threads = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < slots; i += threads) {
    const wm_key k = s.keys[i];
    const bool high = k != WM_KEY_EMPTY && dc_reduce(dc_universal(k, s.a, s.b), t.new_buckets) >= s.buckets;
    t.new_keys[i] = high ? WM_KEY_EMPTY : k;
    t.new_keys[i + slots] = high ? k : WM_KEY_EMPTY;
    wm_copy_elem(t.new_values, i, s.values, i);
    wm_copy_elem(t.new_values, i + slots, s.values, i);
  }
}

// Places a key of a downsize: at position `pos` of new bucket `nb` if it fits, else in the
// residual list (from *t.scratch, at most t.res_capacity: beyond, only counted, and the host
// rolls the downsize back). Every lane calls it (warp-aggregated residual count).
__device__ __forceinline__ void dc_downsize_place(const dc_view& t, const dc_subtable& s, wm_key k, bool live,
                                                  u64 from, u32 nb, u32 pos, long long& residuals) {
  const bool residual = live && pos >= DC_SLOTS;
  const u64 r = wm_aggregated_inc(t.scratch, residual);
  if (live && !residual) {
    const u64 at = dc_slot(nb, pos);
    t.new_keys[at] = k;
    wm_copy_elem(t.new_values, at, s.values, from);
  } else if (residual) {
    residuals++;
    if (r < t.res_capacity) {
      t.res_keys[r] = k;
      wm_copy_elem(t.res_values, r, s.values, from);
    }
  }
}

// Downsize (§5.3): subtable t.resize_subtable (2h buckets) into t.new_keys / t.new_values
// (t.new_buckets = h buckets, keys all empty): buckets loc and loc + h merge into loc (a key's
// hash mod h is its old bucket mod h), a warp per new bucket, the keys of loc first, then those
// of loc + h, in slot order; the keys beyond DC_SLOTS are the residuals, counted in t.scratch[0]
// and moved out of the subtable's count (dycuckoo_reinsert places them).
extern "C" __global__ void dycuckoo_downsize(dc_view t, wm_bulk b) {
  const dc_subtable s = dc_sub(t, t.resize_subtable);
  const u32 h = t.new_buckets;
  const u32 lane = dc_lane();
  const u32 below = (1u << lane) - 1u;
  long long residuals = 0;
  const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
  for (u64 w = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; w < h; w += warps) {
    const u32 j = (u32)w;
    const wm_key k1 = dc_read_key<false>(s, j), k2 = dc_read_key<false>(s, j + h);
    const bool l1 = k1 != WM_KEY_EMPTY, l2 = k2 != WM_KEY_EMPTY;
    const u32 m1 = __ballot_sync(DC_FULL, l1), m2 = __ballot_sync(DC_FULL, l2);
    const u32 p1 = __popc(m1 & below), p2 = __popc(m1) + __popc(m2 & below);
    dc_downsize_place(t, s, k1, l1, dc_slot(j, lane), j, p1, residuals);
    dc_downsize_place(t, s, k2, l2, dc_slot(j + h, lane), j, p2, residuals);
  }
  wm_add_count(t.counts + t.resize_subtable, -residuals);
}
