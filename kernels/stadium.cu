// Stadium hashing (stadium-hashing.txt §III): a ticket board in GPU memory, buckets of key-value
// records in GPU memory or in pinned host memory mapped into the GPU (out-of-core).
// Host side: src/table/stadium.rs. Assembled after kernels/common/*.cuh (src/kernels.rs).
//
// Defines: WM_KEY_BYTES, WM_VALUE_BYTES (multiples of 4), WM_HASH, ST_TICKET_BITS (1, 2, 4, 8),
// ST_HOST_BUCKETS (0: buckets in device memory, 1: in mapped host memory).
//
// The table has `size` buckets, `size` prime. Key k starts at bucket __umulhi(h1, size) and
// steps by 1 + __umulhi(h2, size - 1) (Fig. 5): the step is in [1, size-1], coprime with the
// prime size, so `size` probes visit every bucket and load factors up to 1 work.
//
// The ticket board. Each bucket has a ticket of T = ST_TICKET_BITS bits: the availability bit
// (bit 0) and T-1 info bits drawn from the key's hash (§III), and beside it the access bit of
// §III-B (bit T). One board entry is these T+1 bits; ST_PER_WORD = floor(32 / (T+1)) entries
// share a 32-bit word, so one atomic on the word changes an entry's bits together. Entry states
// (A = availability, C = access):
//
//   A C
//   1 1  empty      never used since the last clear: a search stops here
//   0 1  busy       reserved and being written, or held while a value is replaced or read
//   0 0  live       info bits and bucket hold a key
//   1 0  deleted    erased: searches go on past it, inserts may take it
//
// We store the access bit inverted with respect to the paper (1 = "being accessed"), so that
// both the reservation (the paper's atomicAnd clearing the availability bit, Fig. 7) and the
// publication of a finished insert are an atomicAnd, and a reservation that loses its race
// changes nothing (the winner's entry already has A = 0). With the paper's polarity the losing
// atomicAnd would also clear the winner's access bit.
//
// Insert (one thread per pair as in the paper, or collaborative lanes: see clStash below): walk
// the key's probe sequence as a lookup does, remembering the first deleted entry. Finding the
// key: update (assign) or keep (if absent). An empty entry ends the chain: the key is not in the
// table, so reserve the first deleted entry seen (by CAS: deleted -> busy) or else this empty one
// (atomicAnd, the paper's). Then write the record with plain stores (for host buckets one
// write-only transfer over PCIe), and publish it with one release-ordered atomicAnd (gpu scope,
// or system scope for host buckets: the paper's barrier) that writes the info bits (Fig. 8) and
// clears the access bit together.
//
// Duplicate keys (warpmap's contract, beyond the paper whose insert does not check): a key is
// stored once, even when one batch holds it many times. During an insert phase entries only
// move empty -> busy -> live, deleted -> busy -> live, live -> busy -> live (a held value), so a
// position seen occupied stays occupied and keeps its key. A thread reserves only the first
// free position of its chain; a thread that meets a busy entry whose info bits may be its key's
// waits until it is live and compares the key; a thread that loses a reservation re-examines
// that position. So two threads with one key can never reserve two positions: the one with the
// later position would have passed the earlier one, seen it busy or live, and waited for it.
// A replaced value is written while the entry is held busy (atomicOr of the access bit), so two
// writers of one key never interleave words and the value kept is one of the batch's values.
//
// Mixed batches (§III-B): finds run beside inserts. A find waits on busy entries that may hold
// its key, as the paper's retrievals must when the user supplies no barrier, and reads a value
// while holding the entry, so it sees the old or the new value, never a mix. A key inserted by
// an earlier launch is always found. Erases are phase-separated (never in the same launch as
// inserts or finds).
//
// Records: a bucket is the key's words followed by the value's words (4-byte words; every key
// and value type of warpmap is a multiple of 4 bytes), copied with the widest vector access the
// record's alignment allows.

#ifndef ST_TICKET_BITS
#error "ST_TICKET_BITS must be defined (1, 2, 4 or 8)"
#endif
#if ST_TICKET_BITS != 1 && ST_TICKET_BITS != 2 && ST_TICKET_BITS != 4 && ST_TICKET_BITS != 8
#error "ST_TICKET_BITS must be 1, 2, 4 or 8"
#endif
#ifndef ST_HOST_BUCKETS
#error "ST_HOST_BUCKETS must be defined (0 or 1)"
#endif
#ifndef WM_HASH
#define WM_HASH WM_HASH_MURMUR
#endif
#if WM_KEY_BYTES % 4 != 0 || WM_VALUE_BYTES % 4 != 0
#error "Stadium records are copied as 4-byte words: key and value widths must be multiples of 4"
#endif

#define ST_T ST_TICKET_BITS
#define ST_ENTRY_BITS (ST_T + 1)
#define ST_PER_WORD (32 / ST_ENTRY_BITS)
#define ST_INFO_BITS (ST_T - 1)
#define ST_INFO_MASK ((1u << ST_INFO_BITS) - 1u)
#define ST_ENTRY_MASK ((1u << ST_ENTRY_BITS) - 1u)
#define ST_AVAILABLE 1u                 // within an entry
#define ST_ACCESS (1u << ST_T)          // within an entry
#define ST_INFO_FIELD (ST_INFO_MASK << 1)

#define ST_KEY_WORDS (WM_KEY_BYTES / 4)
#define ST_VALUE_WORDS (WM_VALUE_BYTES / 4)
#define ST_RECORD_WORDS (ST_KEY_WORDS + ST_VALUE_WORDS)
#define ST_NONE 0xffffffffu

typedef wm_words<ST_KEY_WORDS> st_key;  // keys and values as their words (kernels/common/types.cuh)
typedef wm_words<ST_VALUE_WORDS> st_value;

// Bucket i's record starts at word i * ST_RECORD_WORDS of a 256-byte aligned allocation.
#define ST_RECORD_ALIGN wm_vec(ST_RECORD_WORDS, ST_RECORD_WORDS)
#define ST_KEY_VEC wm_vec(ST_KEY_WORDS, ST_RECORD_ALIGN)
#define ST_VALUE_VEC wm_vec(ST_VALUE_WORDS, wm_vec(ST_KEY_WORDS, ST_RECORD_ALIGN))

#ifndef WM_ENGINE
#error "stadium.cu is a table module: built through src/table/engine/ (WM_ENGINE and its sizes)"
#endif

// The table as the kernels see it: twin of src/table/stadium.rs `StadiumView`.
struct st_view {
  u32* board;       // the ticket board: ST_PER_WORD entries per word
  u32* buckets;     // size records of ST_RECORD_WORDS words, in device or mapped host memory
  u64* meta;        // [stored keys, keys left unplaced by all inserts so far]
  u32 size;         // buckets (prime)
  u32 max_probes;   // buckets probed before an insert gives up
  u64 seed;
  u64 cl_from;      // clStash / hybrid: the stored keys from which warps collaborate
};
WM_CHECK_VIEW(st_view);

// The batch's keys and values as words (the input arrays hold wm_key / wm_value elements, whose
// bytes are the same).
__device__ __forceinline__ const st_key* st_keys(const wm_bulk& b) { return reinterpret_cast<const st_key*>(b.keys); }
__device__ __forceinline__ const st_value* st_values(const wm_bulk& b) { return reinterpret_cast<const st_value*>(b.values); }
__device__ __forceinline__ st_value* st_out(const wm_bulk& b) { return reinterpret_cast<st_value*>(b.out); }

__device__ __forceinline__ u32* st_record(u32* buckets, u32 i) { return buckets + (u64)i * ST_RECORD_WORDS; }

// Where bucket i's entry lives on the board: its word, and the shift of its availability bit.
struct st_slot {
  u32 word;
  u32 shift;
  __device__ __forceinline__ explicit st_slot(u32 i) : word(i / ST_PER_WORD), shift((i % ST_PER_WORD) * ST_ENTRY_BITS) {}
};

__device__ __forceinline__ u32 st_entry(u32 word_bits, const st_slot& s) { return (word_bits >> s.shift) & ST_ENTRY_MASK; }
__device__ __forceinline__ bool st_is_empty(u32 e) { return (e & (ST_AVAILABLE | ST_ACCESS)) == (ST_AVAILABLE | ST_ACCESS); }
__device__ __forceinline__ bool st_is_deleted(u32 e) { return (e & (ST_AVAILABLE | ST_ACCESS)) == ST_AVAILABLE; }
__device__ __forceinline__ bool st_is_busy(u32 e) { return (e & (ST_AVAILABLE | ST_ACCESS)) == ST_ACCESS; }
__device__ __forceinline__ bool st_is_live(u32 e) { return (e & (ST_AVAILABLE | ST_ACCESS)) == 0u; }
__device__ __forceinline__ u32 st_info_of(u32 e) { return (e >> 1) & ST_INFO_MASK; }

// A key's probe sequence (Fig. 5: double hashing, kernels/common/probe.cuh, `pos` the bucket)
// and its info bits.
struct st_probe : wm_double_hash {
  u32 info;
  __device__ __forceinline__ st_probe() {}
  __device__ __forceinline__ st_probe(const st_key& k, u32 size, u64 seed) {
    const uint2 h = wm_hash_key_words<WM_HASH, ST_KEY_WORDS>(k.w, seed);
    *static_cast<wm_double_hash*>(this) = wm_double_hash(h, size);  // InitHash and Rehash's step
    // Info bits from a third mix, independent of the position and the step (their high bits).
    info = wm_hash_third(h, 0x5851f42d4c957f2dull) & ST_INFO_MASK;
  }
};

// Loads the board word of slot s. `coherent`: from L2 (other SMs change it in this launch).
template <bool coherent>
__device__ __forceinline__ u32 st_load_board(const u32* board, const st_slot& s) {
  return coherent ? __ldcg(board + s.word) : board[s.word];
}

// Loads slot s's entry; while it is busy and may hold a key with `info` (its info bits equal, or
// not yet written: all ones), waits for it to become live (the paper's access-bit wait).
template <bool coherent>
__device__ __forceinline__ u32 st_settled_entry(const u32* board, const st_slot& s, u32 info) {
  while (true) {
    const u32 e = st_entry(st_load_board<coherent>(board, s), s);
    if (!coherent || !st_is_busy(e)) return e;
    const u32 seen = st_info_of(e);
    if (seen != info && seen != ST_INFO_MASK) return e;  // being written, but not with our key
    __nanosleep(20);
  }
}

// Whether live entry e of bucket i holds k: info bits (second level), then the bucket's key
// (third level, the only bucket access). The fence orders the key read after the entry read
// (the inserter wrote the key before publishing the entry).
template <bool coherent>
__device__ __forceinline__ bool st_holds(const u32* buckets, u32 i, u32 e, const st_key& k, u32 info) {
  if (st_info_of(e) != info) return false;
  if (coherent) __threadfence();
  st_key stored;
  wm_load_words<ST_KEY_WORDS, ST_KEY_VEC, coherent>(st_record(const_cast<u32*>(buckets), i), stored.w);
  bool eq = true;
#pragma unroll
  for (int w = 0; w < ST_KEY_WORDS; w++) eq &= stored.w[w] == k.w[w];
  return eq;
}

// Holds live bucket s (sets its access bit: busy) so that its value can be replaced or read
// whole; waits while another thread holds it.
__device__ __forceinline__ void st_hold(u32* board, const st_slot& s) {
  while (atomicOr(board + s.word, ST_ACCESS << s.shift) & (ST_ACCESS << s.shift)) __nanosleep(20);
  __threadfence();  // the value accesses after taking the hold
}
// A release-ordered atomic AND that returns nothing: every store of this thread before it (the
// bucket's record or value) is visible before the AND is (to the GPU, or to the system for host
// buckets, where it plays the paper's __threadfence_system). One `red.release` costs less than
// a sequentially consistent fence followed by an atomic.
__device__ __forceinline__ void st_and_release(u32* word, u32 mask) {
#if ST_HOST_BUCKETS
  asm volatile("red.release.sys.and.b32 [%0], %1;" ::"l"(word), "r"(mask) : "memory");
#else
  asm volatile("red.release.gpu.and.b32 [%0], %1;" ::"l"(word), "r"(mask) : "memory");
#endif
}

// Releases a hold, or publishes a newly written bucket: the bucket's stores before the entry.
__device__ __forceinline__ void st_release(u32* board, const st_slot& s) {
  st_and_release(board + s.word, ~(ST_ACCESS << s.shift));
}

__device__ __forceinline__ u32* st_value_ptr(u32* buckets, u32 i) { return st_record(buckets, i) + ST_KEY_WORDS; }

// Replaces the value of live bucket i (holding it meanwhile).
__device__ __forceinline__ void st_replace_value(u32* board, u32* buckets, u32 i, const st_value& v) {
  const st_slot s(i);
  st_hold(board, s);
  wm_store_words<ST_VALUE_WORDS, ST_VALUE_VEC>(st_value_ptr(buckets, i), v.w);
  st_release(board, s);
}

// Reads the value of live bucket i. `concurrent`: inserts may replace it in this launch, so hold
// the bucket while reading.
template <bool concurrent>
__device__ __forceinline__ void st_read_value(u32* board, const u32* buckets, u32 i, st_value* out) {
  st_value v;
  u32* rec = st_value_ptr(const_cast<u32*>(buckets), i);
  if (concurrent) {
    const st_slot s(i);
    st_hold(board, s);
    wm_load_words<ST_VALUE_WORDS, ST_VALUE_VEC, true>(rec, v.w);
    __threadfence();  // the reads before the release (nothing was written: no system fence)
    atomicAnd(board + s.word, ~(ST_ACCESS << s.shift));
  } else {
    wm_load_words<ST_VALUE_WORDS, ST_VALUE_VEC, false>(rec, v.w);
  }
  wm_store_elem(out, 0, v);
}

// Reserves bucket i, seen empty: the paper's TryBookASeat (Fig. 7), one atomicAnd clearing the
// availability bit. The entry's access bit is already set (empty), so it is now busy. A loser
// changes nothing: the entry's availability bit was already clear.
__device__ __forceinline__ bool st_reserve_empty(u32* board, u32 i) {
  const st_slot s(i);
  const u32 permit = ST_AVAILABLE << s.shift;
  return (atomicAnd(board + s.word, ~permit) & permit) != 0u;
}

// Reserves bucket i, seen deleted (A = 1, C = 0): deleted -> busy by CAS, retried while only
// neighbouring entries of the word change. (An atomicAnd would make it live at once, with the
// erased key still in the bucket.)
__device__ __forceinline__ bool st_reserve_deleted(u32* board, u32 i) {
  const st_slot s(i);
  u32 seen = __ldcg(board + s.word);
  while (st_is_deleted(st_entry(seen, s))) {
    const u32 want = (seen & ~(ST_AVAILABLE << s.shift)) | (ST_ACCESS << s.shift);
    const u32 old = atomicCAS(board + s.word, seen, want);
    if (old == seen) return true;
    seen = old;
  }
  return false;
}

// Fills reserved bucket i: the record in one store sequence, then one release-ordered atomicAnd
// that writes the info bits (Fig. 8: the info in a field of ones) and clears the access bit
// together. The paper writes the info bits first with an atomicAnd of their own; here they stay
// all ones while the entry is busy, which every reader treats as "may be my key" (it waits), so
// one atomic fewer per insert changes nothing a reader can observe.
__device__ __forceinline__ void st_fill(u32* board, u32* buckets, u32 i, u32 info, const st_key& k,
                                        const st_value& v) {
  const st_slot s(i);
  u32 rec[ST_RECORD_WORDS];
#pragma unroll
  for (int w = 0; w < ST_KEY_WORDS; w++) rec[w] = k.w[w];
#pragma unroll
  for (int w = 0; w < ST_VALUE_WORDS; w++) rec[ST_KEY_WORDS + w] = v.w[w];
  wm_store_words<ST_RECORD_WORDS, ST_RECORD_ALIGN>(st_record(buckets, i), rec);
  const u32 clear_info = ST_INFO_BITS > 0 ? (~info & ST_INFO_MASK) << (s.shift + 1) : 0u;
  st_and_release(board + s.word, ~((ST_ACCESS << s.shift) | clear_info));
}

// The chain ended without the key: take its first deleted entry (CAS deleted -> busy); lost to
// another insert, walk on from there (the entries before it cannot have changed).
__device__ __forceinline__ u32 st_take_deleted(u32* board, u32* buckets, struct st_job& j, const st_value* values);

// An insert in progress: its input index, key, probe sequence, probes made, and the first
// deleted entry of its chain. clStash parks these in shared memory between attempts.
struct st_job {
  u64 idx;
  st_key k;
  st_probe p;
  u32 probe;
  u32 deleted_pos;
  u32 deleted_probe;
  __device__ __forceinline__ st_job() : p() {}
  __device__ __forceinline__ st_job(u64 i, const st_key& key, u32 size, u64 seed)
      : idx(i), k(key), p(key, size, seed), probe(0), deleted_pos(ST_NONE), deleted_probe(0) {}
};

// st_insert_step's answer while the job goes on (not a status: statuses are below 0x800).
#define ST_PENDING 0xffffffffu

// One attempt of an insert (one pass of Fig. 6's loop, with warpmap's duplicate check): looks at
// the job's current bucket and either finishes the job (returns its status) or moves it on
// (returns ST_PENDING). A busy entry that may hold the job's key, or a reservation lost to
// another thread, leaves the job at the same bucket: the next attempt looks again (basic Stash
// retries at once; clStash parks the job and does other work first).
// assign: a present key gets its value (UPDATED); otherwise it keeps its own (PRESENT).
__device__ __forceinline__ u32 st_insert_step(u32* board, u32* buckets, st_job& j, const st_value* values, u32 size,
                                              u32 max_probes, bool assign) {
  if (j.probe < max_probes) {
    const st_slot s(j.p.pos);
    const u32 e = st_entry(__ldcg(board + s.word), s);
    if (st_is_busy(e)) {
      const u32 seen = st_info_of(e);
      if (seen == j.p.info || seen == ST_INFO_MASK) return ST_PENDING;  // may become our key: look again
    } else if (st_is_live(e)) {
      if (st_holds<true>(buckets, j.p.pos, e, j.k, j.p.info)) {
        if (assign) st_replace_value(board, buckets, j.p.pos, wm_load_elem(values, j.idx));
        return assign ? WM_STATUS_UPDATED : WM_STATUS_PRESENT;
      }
    } else if (st_is_deleted(e)) {
      if (j.deleted_pos == ST_NONE) {
        j.deleted_pos = j.p.pos;
        j.deleted_probe = j.probe;
      }
    } else if (j.deleted_pos == ST_NONE) {
      // An empty entry ends the chain: the key is not in the table, and no deleted entry came
      // before, so take this one (the paper's TryBookASeat).
      if (!st_reserve_empty(board, j.p.pos)) return ST_PENDING;  // lost: look at it again (it may be k)
      st_fill(board, buckets, j.p.pos, j.p.info, j.k, wm_load_elem(values, j.idx));
      return WM_STATUS_OK;
    } else {
      return st_take_deleted(board, buckets, j, values);  // the chain ends: take its first deleted entry
    }
    j.p.next(size);  // the chain goes on
    j.probe++;
    return ST_PENDING;
  }
  if (j.deleted_pos == ST_NONE) return max_probes >= size ? WM_STATUS_TABLE_FULL : WM_STATUS_PROBE_LIMIT;
  return st_take_deleted(board, buckets, j, values);
}

__device__ __forceinline__ u32 st_take_deleted(u32* board, u32* buckets, st_job& j, const st_value* values) {
  if (st_reserve_deleted(board, j.deleted_pos)) {
    st_fill(board, buckets, j.deleted_pos, j.p.info, j.k, wm_load_elem(values, j.idx));
    return WM_STATUS_OK;
  }
  j.p.pos = j.deleted_pos;
  j.probe = j.deleted_probe;
  j.deleted_pos = ST_NONE;
  return ST_PENDING;
}

// Counts a finished insert's status into inserted / failed.
__device__ __forceinline__ void st_count(u32 st, u32& inserted, u32& failed) {
  inserted += st == WM_STATUS_OK ? 1u : 0u;
  failed += (st & WM_STATUS_FAILURE_MASK) != 0u ? 1u : 0u;
}

// Inserts one pair to the end, one attempt after another (basic Stash: the thread owns its job).
__device__ __forceinline__ u32 st_insert_one(u32* board, u32* buckets, st_job& j, const st_value* values, u32 size,
                                             u32 max_probes, bool assign) {
  u32 st;
  while ((st = st_insert_step(board, buckets, j, values, size, max_probes, assign)) == ST_PENDING) {
  }
  return st;
}

// Looks k up: the bucket holding it, or ST_NONE (Fig. 9 and 10, going on past deleted entries).
// `concurrent`: inserts run in the same launch (mixed batches).
template <bool concurrent>
__device__ __forceinline__ u32 st_find_one(const u32* board, const u32* buckets, const st_key& k, u32 size,
                                           u32 max_probes, u64 seed) {
  st_probe p(k, size, seed);
  for (u32 probe = 0; probe < max_probes; probe++) {
    const st_slot s(p.pos);
    const u32 e = st_settled_entry<concurrent>(board, s, p.info);
    if (st_is_empty(e)) return ST_NONE;  // first level: the key was never placed further on
    if (st_is_live(e) && st_holds<concurrent>(buckets, p.pos, e, k, p.info)) return p.pos;
    p.next(size);
  }
  return ST_NONE;
}

// Inserts b.keys[i] -> b.values[i] (basic Stash: a thread per pair); b.status (if not null) gets
// each key's status; t.meta[0] counts the stored keys, t.meta[1] the keys left unplaced by all
// inserts so far. b.assign = 1: a present key gets the new value (UPDATED); 0: it keeps its own
// (PRESENT).
extern "C" __global__ void stadium_insert(st_view t, wm_bulk b) {
  u32 inserted = 0, failed = 0;
  wm_for_each<1>(b.n, [&](u64 idx) {
    st_job j(idx, wm_load_elem(st_keys(b), idx), t.size, t.seed);  // the key into registers: the walk compares it many times
    const u32 st = st_insert_one(t.board, t.buckets, j, st_values(b), t.size, t.max_probes, b.assign != 0u);
    st_count(st, inserted, failed);
    if (b.status != nullptr) b.status[idx] = st;
  });
  wm_add_count(t.meta, inserted);
  wm_add_count(t.meta + 1, failed);
}

// ---- clStash: collaborative lanes (§III-C, Fig. 12) and the Stash+clStash hybrid ----------
//
// Basic Stash gives each thread one pair to the end, so a warp waits for its slowest lane (the
// paper measured 40-50 % warp execution efficiency, Table I). In clStash each warp keeps a queue
// of up to 32 unfinished jobs in shared memory. Every lane makes one attempt; while the
// unfinished jobs would not fit the queue (unfinished + queued > 32), the lanes that finished
// pop queued jobs (an intra-warp prefix sum over the ballot of free lanes gives each its slot)
// and every lane attempts again; then the unfinished jobs are pushed (another prefix sum) and
// all 32 lanes fetch fresh pairs. When the input runs out the queue is drained.
//
// A job is parked whole: its input index, key (when at most 16 bytes; wider keys are read
// again from the input), probe position, step, info bits, probes made and first deleted entry.
//
// The hybrid (§III-C 2): clStash costs ballots, prefix sums and shared-memory traffic, which do
// not pay while the table is nearly empty and first attempts succeed. A warp processes a chunk
// of 32 fresh pairs with basic Stash while the table holds fewer than `cl_from` keys (read
// from the live count, meta[0], which the warps update every ST_CL_FLUSH chunks), and with
// collaborative lanes after. cl_from = 0: clStash throughout; cl_from = ~0: Stash throughout.
// The host derives cl_from from the threshold load factor measured as Fig. 13 describes.
//
// Launched with WM_BLOCK threads per block and a grid that fits the GPU at once (persistent
// warps striding over chunks), so the input is consumed in order and the live count tracks the
// load.

#define ST_CL_WARPS (WM_BLOCK / 32)
#define ST_CL_FLUSH 8  // chunks between the warps' updates of the live count
#define ST_CL_KEY_WORDS (ST_KEY_WORDS <= 4 ? ST_KEY_WORDS : 1)

// One block's queues, structure of arrays so that the 32 lanes of a warp touch 32 banks.
struct st_queues {
  u64 idx[ST_CL_WARPS][32];
  u32 pos[ST_CL_WARPS][32];
  u32 step[ST_CL_WARPS][32];
  u32 info[ST_CL_WARPS][32];
  u32 probe[ST_CL_WARPS][32];
  u32 deleted_pos[ST_CL_WARPS][32];
  u32 deleted_probe[ST_CL_WARPS][32];
  u32 key[ST_CL_KEY_WORDS][ST_CL_WARPS][32];
};

__device__ __forceinline__ void st_park(st_queues& q, u32 w, u32 slot, const st_job& j) {
  q.idx[w][slot] = j.idx;
  q.pos[w][slot] = j.p.pos;
  q.step[w][slot] = j.p.step;
  q.info[w][slot] = j.p.info;
  q.probe[w][slot] = j.probe;
  q.deleted_pos[w][slot] = j.deleted_pos;
  q.deleted_probe[w][slot] = j.deleted_probe;
#if ST_KEY_WORDS <= 4
#pragma unroll
  for (int i = 0; i < ST_KEY_WORDS; i++) q.key[i][w][slot] = j.k.w[i];
#endif
}

__device__ __forceinline__ void st_unpark(const st_queues& q, u32 w, u32 slot, const st_key* keys, st_job& j) {
  j.idx = q.idx[w][slot];
  j.p.pos = q.pos[w][slot];
  j.p.step = q.step[w][slot];
  j.p.info = q.info[w][slot];
  j.probe = q.probe[w][slot];
  j.deleted_pos = q.deleted_pos[w][slot];
  j.deleted_probe = q.deleted_probe[w][slot];
#if ST_KEY_WORDS <= 4
#pragma unroll
  for (int i = 0; i < ST_KEY_WORDS; i++) j.k.w[i] = q.key[i][w][slot];
#else
  j.k = wm_load_elem(keys, j.idx);
#endif
}

// A finished job: its status, and the lane's counts.
__device__ __forceinline__ void st_finish(u32* status, const st_job& j, u32 st, u32& inserted, u32& failed) {
  st_count(st, inserted, failed);
  if (status != nullptr) status[j.idx] = st;
}

// Inserts like stadium_insert, with collaborative lanes once the table holds cl_from keys.
// Launched with a grid of at most one wave (the host asks the occupancy of this kernel).
extern "C" __global__ void __launch_bounds__(WM_BLOCK) stadium_insert_cl(st_view t, wm_bulk b) {
  u32* const board = t.board;
  u32* const buckets = t.buckets;
  u64* const meta = t.meta;
  const st_key* const keys = st_keys(b);
  const st_value* const values = st_values(b);
  u32* const status = b.status;
  const u64 n = b.n, seed = t.seed, cl_from = t.cl_from;
  const u32 size = t.size, max_probes = t.max_probes, assign = b.assign;
  __shared__ st_queues q;
  const u32 lane = threadIdx.x & 31u, w = threadIdx.x >> 5;
  const u32 below = (1u << lane) - 1u;  // lanes before this one
  const u64 warps = (u64)gridDim.x * ST_CL_WARPS;
  const bool set = assign != 0u;
  u32 inserted = 0, failed = 0, unflushed = 0;  // unflushed: inserted, not yet added to meta[0]
  u32 queued = 0;                               // jobs in this warp's queue (the same in every lane)
  bool collaborate = cl_from == 0ull;
  u64 chunk_no = 0;
  for (u64 chunk = ((u64)blockIdx.x * ST_CL_WARPS + w) * 32u;; chunk += warps * 32u, chunk_no++) {
    const bool fresh = chunk < n;
    if (!fresh && queued == 0u) break;
    // Every ST_CL_FLUSH chunks: add the new keys to the live count and, in hybrid mode, read it.
    if (chunk_no % ST_CL_FLUSH == 0u && !collaborate) {
      const u32 total = __reduce_add_sync(0xffffffffu, unflushed);
      u64 stored = 0;
      if (lane == 0u) stored = (total != 0u ? atomicAdd(meta, (u64)total) : __ldcg(meta)) + total;
      stored = __shfl_sync(0xffffffffu, stored, 0);
      inserted -= unflushed;
      unflushed = 0;
      collaborate = stored >= cl_from;
    }
    st_job j;
    bool have = false;
    if (fresh && chunk + lane < n) {
      j = st_job(chunk + lane, wm_load_elem(keys, chunk + lane), size, seed);
      have = true;
    }
    if (!collaborate) {  // basic Stash: each lane to the end of its own job
      if (have) {
        const u32 st = st_insert_one(board, buckets, j, values, size, max_probes, set);
        st_finish(status, j, st, inserted, failed);
        unflushed += st == WM_STATUS_OK ? 1u : 0u;
      }
      continue;
    }
    // clStash (Fig. 12, lines 3-27).
    while (true) {
      if (have) {
        const u32 st = st_insert_step(board, buckets, j, values, size, max_probes, set);
        if (st != ST_PENDING) {
          st_finish(status, j, st, inserted, failed);
          have = false;
        }
      }
      const u32 unfinished = __ballot_sync(0xffffffffu, have);
      const u32 n_unfinished = __popc(unfinished);
      if (fresh ? n_unfinished + queued <= 32u : n_unfinished + queued == 0u) break;
      // Free lanes pop queued jobs from the top (a prefix sum over the free lanes).
      const u32 n_pop = min(queued, 32u - n_unfinished);
      const u32 rank = __popc(~unfinished & below);
      if (!have && rank < n_pop) {
        st_unpark(q, w, queued - 1u - rank, keys, j);
        have = true;
      }
      __syncwarp();
      queued -= n_pop;
    }
    if (!fresh) break;  // drained
    // Park the unfinished jobs (a prefix sum over the unfinished lanes), then fetch fresh ones.
    const u32 unfinished = __ballot_sync(0xffffffffu, have);
    if (have) st_park(q, w, queued + __popc(unfinished & below), j);
    __syncwarp();
    queued += __popc(unfinished);
  }
  wm_add_count(meta, inserted);
  wm_add_count(meta + 1, failed);
}

// found[i] = 1 and out[i] = value where keys[i] is present; found[i] = 0 otherwise (out[i]
// untouched). out may be null (contains).
// With tickets of 4 or 8 bits a bucket whose info bits match holds the key 7 times in 8 or more
// (a random key matches another's 3 or 7 info bits with probability 1/8 or 1/128), so a lookup
// that wants the value reads the whole record at once: key and value arrive together, one
// bucket access instead of a key read and then a dependent value read (for host buckets, one
// bus round trip instead of two). With fewer info bits most matches are other keys, and reading
// their values would waste bandwidth.
#define ST_FIND_WHOLE_RECORD (ST_INFO_BITS >= 3)

// Looks k up like st_find_one (phase-separated) and, where found, copies its value to *out.
__device__ __forceinline__ u32 st_find_record(const u32* board, const u32* buckets, const st_key& k, u32 size,
                                              u32 max_probes, u64 seed, st_value* out) {
  st_probe p(k, size, seed);
  for (u32 probe = 0; probe < max_probes; probe++) {
    const st_slot s(p.pos);
    const u32 e = st_entry(board[s.word], s);
    if (st_is_empty(e)) return ST_NONE;
    if (st_is_live(e) && st_info_of(e) == p.info) {
      u32 rec[ST_RECORD_WORDS];
      wm_load_words<ST_RECORD_WORDS, ST_RECORD_ALIGN, false>(st_record(const_cast<u32*>(buckets), p.pos), rec);
      bool eq = true;
#pragma unroll
      for (int w = 0; w < ST_KEY_WORDS; w++) eq &= rec[w] == k.w[w];
      if (eq) {
        st_value v;
#pragma unroll
        for (int w = 0; w < ST_VALUE_WORDS; w++) v.w[w] = rec[ST_KEY_WORDS + w];
        wm_store_elem(out, 0, v);
        return p.pos;
      }
    }
    p.next(size);
  }
  return ST_NONE;
}

extern "C" __global__ void stadium_find(st_view t, wm_bulk b) {
  st_value* const out = st_out(b);
  wm_for_each<1>(b.n, [&](u64 idx) {
    const st_key k = wm_load_elem(st_keys(b), idx);
    u32 at;
    if (ST_FIND_WHOLE_RECORD && out != nullptr) {
      at = st_find_record(t.board, t.buckets, k, t.size, t.max_probes, t.seed, out + idx);
    } else {
      at = st_find_one<false>(t.board, t.buckets, k, t.size, t.max_probes, t.seed);
      if (at != ST_NONE && out != nullptr) st_read_value<false>(t.board, t.buckets, at, out + idx);
    }
    b.found[idx] = at != ST_NONE ? 1 : 0;
  });
}

// A mixed batch (§III-B): b.ops[i] = WM_OP_INSERT inserts (b.keys[i], b.values[i]) (assign) and
// writes b.status[i]; WM_OP_FIND looks b.keys[i] up into b.out[i] / b.found[i] while the inserts
// run. Other ops are left alone (erases are phase-separated: the host refuses them).
extern "C" __global__ void stadium_mixed(st_view t, wm_bulk b) {
  u32 inserted = 0, failed = 0;
  wm_for_each<1>(b.n, [&](u64 idx) {
    const st_key k = wm_load_elem(st_keys(b), idx);
    const u8 op = b.ops[idx];
    if (op == WM_OP_INSERT) {
      st_job j(idx, k, t.size, t.seed);
      const u32 st = st_insert_one(t.board, t.buckets, j, st_values(b), t.size, t.max_probes, true);
      b.status[idx] = st;
      st_count(st, inserted, failed);
    } else if (op == WM_OP_FIND) {
      const u32 at = st_find_one<true>(t.board, t.buckets, k, t.size, t.max_probes, t.seed);
      if (at != ST_NONE) st_read_value<true>(t.board, t.buckets, at, st_out(b) + idx);
      b.found[idx] = at != ST_NONE ? 1 : 0;
    }
  });
  wm_add_count(t.meta, inserted);
  wm_add_count(t.meta + 1, failed);
}

// Erases every present key: its entry becomes deleted (availability bit set again, info bits
// reset to ones for the next reservation's atomicAnd, access bit clear), in one atomicOr whose
// old value says which of several erases of one key won. Searches go on past deleted entries
// (§III-B: "deletion includes more iterations after rejecting a position"). Phase-separated.
extern "C" __global__ void stadium_erase(st_view t, wm_bulk b) {
  long long erased = 0;
  wm_for_each<1>(b.n, [&](u64 idx) {
    const st_key k = wm_load_elem(st_keys(b), idx);
    const u32 at = st_find_one<false>(t.board, t.buckets, k, t.size, t.max_probes, t.seed);
    if (at == ST_NONE) return;
    const st_slot s(at);
    const u32 old = atomicOr(t.board + s.word, (ST_AVAILABLE | ST_INFO_FIELD) << s.shift);
    if (st_is_live(st_entry(old, s))) erased++;
  });
  wm_add_count(t.meta, -erased);
}

// Writes every stored pair to b.out_keys / b.out at positions from *b.counter, at most b.n of
// them, in no particular order (kernels/common/bulk.cuh wm_compact).
extern "C" __global__ void stadium_retrieve(st_view t, wm_bulk b) {
  st_key* const out_keys = reinterpret_cast<st_key*>(b.out_keys);
  st_value* const out_values = st_out(b);
  wm_compact(
      t.size, b.counter, b.n,
      [&](u64 i) {
        const st_slot s((u32)i);
        return st_is_live(st_entry(t.board[s.word], s));
      },
      [&](u64 i, u64 pos) {
        const u32* rec = st_record(t.buckets, (u32)i);
        wm_load_words<ST_KEY_WORDS, ST_KEY_VEC, false>(rec, out_keys[pos].w);
        wm_load_words<ST_VALUE_WORDS, ST_VALUE_VEC, false>(rec + ST_KEY_WORDS, out_values[pos].w);
      });
}
