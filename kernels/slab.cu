// The slab hash: dynamic chaining with slab lists and the warp-synchronous SlabAlloc
// (slab-hash.txt §III-§V). Host side: src/table/slab.rs. Assembled after kernels/common/*.cuh.
//
// A slab is 32 words, read by a warp in one coalesced load (each lane one word): lanes 0..29 hold
// 15 pairs (key in the even lane, value in the odd lane after it), lane 30 is the auxiliary lane
// (unused), lane 31 the address of the next slab. Words are 4 bytes for 4-byte keys with 4-byte
// values (128-byte slabs, the paper's layout) and 8 bytes otherwise (256-byte slabs: keys and
// values zero-extended), so a pair is placed by one CAS of two words (64-bit, or 128-bit on
// sm_90). Bucket b's list starts at base slab b of a fixed array; B buckets, plus two more
// whose lists hold the user keys equal to the sentinels (below).
//
// Warp-cooperative work sharing (WCWS, §IV-A): every lane takes one operation of the batch; the
// warp ballots a work queue of the lanes with work, and processes them one at a time in lane
// order: the source lane's key (and operation, in mixed batches) is shuffled to the warp, which
// reads one slab per step, ballots for the key or an empty slot, and moves along the list by
// the address lane. All lanes run every step, so nothing diverges.
//
// Operations (§III-B): REPLACE (unique keys: the HashTable insert), INSERT (duplicates kept: the
// MultiMap insert), SEARCH, SEARCHALL (count + find_all), DELETE (unique: the key becomes a
// tombstone, so that a later REPLACE cannot insert the key again in front of a live copy),
// DELETEALL (multimap: every copy becomes empty, reusable by INSERT), and FLUSH (a kernel of its
// own: compacts each list and frees its emptied slabs). SL_UNIQUE (from the host) picks the
// unique table (1) or the multimap (0). Insert, search and delete may share one concurrent batch
// (slab_mixed).
//
// In the unique table empty slots exist only in a list's last slab (nothing becomes empty:
// deletes leave tombstones until FLUSH), so the first empty slot found is past every copy of the
// key, and a new slab is linked only behind a full one. Two REPLACEs of one key race for the
// same first empty slot; the loser re-reads the slab and finds the key.
//
// SlabAlloc (§V): super blocks of N_M memory blocks of 1024 slabs; a 32-bit slab address is
// (super block: 8 bits, memory block: 14 bits, unit: 10 bits). Each warp has a resident memory
// block and holds its 1024-bit bitmap (lane i: units 32i..32i+31; in shared memory here, the
// paper's registers); an allocation
// sets the lowest free bit by one atomicOr of the owning lane; a full resident block is replaced
// by hashing (warp id, attempt), then, after `resident_probes` misses, by a scan of every block,
// and only when every block is full does the allocation fail (the key gets TABLE_FULL and the
// host grows the pool by adding super blocks: src/table/slab_alloc.rs). Free slabs are kept all
// ones (the empty slab), so a new slab is linked without writing it first.
//
// Beyond the paper, for speed (bench/NOTES.md has the measurements): (1) searches, inserts,
// deletes and mixed batches run in half-warp groups: 16 lanes read a slab, a pair per lane, so a
// warp serves two operations per step (sl_g*; the slab layout is the paper's, and the walks,
// SEARCHALL, FLUSH and the allocator stay warp-wide); (2) each group's work queue reads the base
// slabs of its next sources ahead (SL_AHEAD_*), so a warp has several reads in flight; (3) an
// insert's pair CAS into its base slab, and a delete's tombstone CAS, are issued without waiting
// and checked after the warp's other operations (the fast step); only operations that must walk
// a list, or whose CAS lost, take the paper's step-by-step path (the slow step, warp-wide);
// (4) SlabAlloc's per-warp state lives in shared memory (the insert kernels are register-bound).
//
// Every key value is insertable: a user key equal to a sentinel word (empty or tombstone) is
// stored in bucket B (empty) or B + 1 (tombstone) under the proxy word 0, so it has a slab list
// of its own (duplicates included) and the same code serves it.

#ifndef WM_ENGINE
#error "slab.cu is a table module: built through src/table/engine/ (WM_ENGINE and its sizes)"
#endif
#ifndef SL_MIN_BLOCKS
#error "SL_MIN_BLOCKS must be defined (0, or the insert kernels' blocks per multiprocessor)"
#endif
#ifndef SL_UNIQUE
#error "SL_UNIQUE must be defined (1: unique keys, REPLACE/DELETE; 0: multimap, INSERT/DELETEALL)"
#endif
#ifndef WM_HASH
#define WM_HASH WM_HASH_MURMUR
#endif
#if defined(WM_KEY_WIDE) || defined(WM_VALUE_WIDE)
#error "the slab hash stores 4- or 8-byte keys and values"
#endif

#if WM_KEY_BYTES == 4 && WM_VALUE_BYTES == 4
typedef u32 sl_word;
typedef u64 sl_pair;  // two words, one 64-bit CAS
#define SL_WORD_BYTES 4
#else
typedef u64 sl_word;
typedef ulonglong2 sl_pair;  // two words, one 128-bit CAS (sm_90)
#define SL_WORD_BYTES 8
#endif
#define SL_SLAB_BYTES (32 * SL_WORD_BYTES)
#define SL_EMPTY ((sl_word)~0ull)           // an empty slot's key (free slabs are all ones)
#define SL_TOMBSTONE ((sl_word)~0ull - 1)   // a deleted key (unique table)
#define SL_PROXY ((sl_word)0)               // the key word of sentinel-valued keys (buckets B, B+1)
#define SL_NULL 0xffffffffu                 // no slab (the address lane of a list's last slab)
#define SL_NULL_WORD ((sl_word)~0ull)       // the address lane's word of a list's last slab
#define SL_KEY_LANES 0x15555555u            // lanes 0, 2, ..., 28
#define SL_ADDRESS_LANE 31
#define SL_UNITS 1024                       // slabs per memory block
#define SL_MAX_SUPER_BLOCKS 255             // super block 255 would make SL_NULL an address
#define SL_FULL 0xffffffffu

// The table as the kernels see it: twin of src/table/slab.rs `SlabView`.
struct sl_view {
  sl_word* base;            // (buckets + 2) base slabs
  const u64* super_blocks;  // device address of each super block (slabs, then bitmaps)
  u64* meta;                // [stored pairs, pairs left unplaced by all inserts so far]
  u64* alloc_meta;          // [slabs allocated from the pool (net, two's complement sums)]
  u32 buckets;              // B: the hash's range (B and B + 1 hold the sentinel keys)
  u32 super_block_count;    // super blocks in use (< SL_MAX_SUPER_BLOCKS)
  u32 memory_blocks;        // N_M: memory blocks per super block
  u32 resident_probes;      // hashed resident changes before an allocation scans every block
  u64 seed;
};
WM_CHECK_VIEW(sl_view);

__device__ __forceinline__ u32 sl_lane() { return threadIdx.x & 31u; }

// ---------------------------------------------------------------------------------------------
// Words, keys and slabs

__device__ __forceinline__ sl_word sl_shfl(sl_word w, int src) { return __shfl_sync(SL_FULL, w, src); }

__device__ __forceinline__ sl_word* sl_base_slab(const sl_view& t, u32 bucket) {
  return t.base + (u64)bucket * 32;
}
// The first byte of super block `sb` (read-only during a kernel: the pool grows between them).
__device__ __forceinline__ u8* sl_super_block(const sl_view& t, u32 sb) {
  return reinterpret_cast<u8*>(__ldg(t.super_blocks + sb));
}
// Pool slab `addr` (§V: the super block's address, then (memory block * 1024 + unit) slabs in).
__device__ __forceinline__ sl_word* sl_pool_slab(const sl_view& t, u32 addr) {
  return reinterpret_cast<sl_word*>(sl_super_block(t, addr >> 24) + (u64)(addr & 0xffffffu) * SL_SLAB_BYTES);
}
// The bitmap of memory block `mb` of super block `sb`: 32 words after the super block's slabs.
__device__ __forceinline__ u32* sl_bitmap(const sl_view& t, u32 sb, u32 mb) {
  u8* s = sl_super_block(t, sb);
  return reinterpret_cast<u32*>(s + (u64)t.memory_blocks * SL_UNITS * SL_SLAB_BYTES) + (u64)mb * 32;
}

// A key as the word stored in its slot, and the bucket whose list holds it.
__device__ __forceinline__ void sl_place(const sl_view& t, wm_key k, sl_word& word, u32& bucket) {
  const sl_word w = (sl_word)k;
  if (w == SL_EMPTY || w == SL_TOMBSTONE) {
    word = SL_PROXY;
    bucket = t.buckets + (w == SL_EMPTY ? 0u : 1u);
  } else {
    word = w;
    bucket = wm_map_to_range(wm_hash_key<WM_HASH>(k, t.seed).x, t.buckets);
  }
}

// Loads this lane's word of a slab. `coherent`: from L2, for kernels in which other warps write.
template <bool coherent>
__device__ __forceinline__ sl_word sl_read(const sl_view& t, const sl_word* slab) {
  return coherent ? __ldcg(slab + sl_lane()) : slab[sl_lane()];
}

// A pair CAS that has been issued: its old contents arrive while the warp goes on, so a warp
// can have the CASes of many operations in flight (sl_gfast_step) and check them afterwards.
#if SL_WORD_BYTES == 4
struct sl_cas {
  u64 old, expected;
  __device__ __forceinline__ bool succeeded() const { return old == expected; }
};
#elif WM_HAS_CAS128
struct sl_cas {
  ulonglong2 old, expected;
  __device__ __forceinline__ bool succeeded() const { return old.x == expected.x && old.y == expected.y; }
};
#else
struct sl_cas {
  u64 old, expected;  // of the key word only (below)
  __device__ __forceinline__ bool succeeded() const { return old == expected; }
};
#endif

// Places the pair (key, value) in slot `lane` (a key lane) of `slab` if that slot still holds
// (seen_key, seen_value): one CAS over both words. Check the result with .succeeded().
__device__ __forceinline__ sl_cas sl_cas_pair(sl_word* slab, u32 lane, sl_word seen_key, sl_word seen_value,
                                              sl_word key, sl_word value) {
#if SL_WORD_BYTES == 4
  const u64 cmp = (u64)seen_key | ((u64)seen_value << 32);
  return sl_cas{atomicCAS(reinterpret_cast<sl_pair*>(slab + lane), cmp, (u64)key | ((u64)value << 32)), cmp};
#elif WM_HAS_CAS128
  const ulonglong2 cmp = make_ulonglong2(seen_key, seen_value);
  return sl_cas{wm_cas128(reinterpret_cast<sl_pair*>(slab + lane), cmp, make_ulonglong2(key, value)), cmp};
#else
  // Before sm_90: claim the key word, then write the value (a concurrent search may see the key
  // with the slot's old value; mixed batches of 8-byte words are refused there by the host).
  const u64 old = atomicCAS(reinterpret_cast<unsigned long long*>(slab + lane), seen_key, key);
  if (old == seen_key) atomicExch(reinterpret_cast<unsigned long long*>(slab + lane + 1), value);
  return sl_cas{old, seen_key};
#endif
}

__device__ __forceinline__ sl_word sl_cas_word(sl_word* at, sl_word cmp, sl_word v) {
#if SL_WORD_BYTES == 4
  return atomicCAS(at, cmp, v);
#else
  return atomicCAS(reinterpret_cast<unsigned long long*>(at), cmp, v);
#endif
}
__device__ __forceinline__ void sl_exch_word(sl_word* at, sl_word v) {
#if SL_WORD_BYTES == 4
  atomicExch(at, v);
#else
  atomicExch(reinterpret_cast<unsigned long long*>(at), v);
#endif
}

// ---------------------------------------------------------------------------------------------
// SlabAlloc: the warp-synchronous allocator (§V). Every function is called by all 32 lanes.
//
// The paper keeps the resident block's bitmap in registers; here it lives in shared memory, one
// record per warp (sl_alloc_state, declared by each kernel that allocates), because insert
// kernels are register-bound (bench/NOTES.md) and the allocator runs only when a list grows.

struct sl_alloc_state {
  u32 block;       // resident memory block (global index sb * N_M + mb), SL_NULL for none
  u32 attempts;    // resident changes in this kernel
  u32 exhausted;   // every block was seen full: later allocations fail at once
  u32 bitmap[32];  // the resident block's bitmap (lane i's word: units 32i..32i+31)
};
#define SL_ALLOC_WARPS (WM_BLOCK / 32)

struct sl_alloc {
  sl_alloc_state* s;  // this warp's record
  int net;            // slabs allocated minus freed by this lane (summed per warp at the end)
};

// `warps`: the kernel's __shared__ sl_alloc_state[SL_ALLOC_WARPS].
__device__ __forceinline__ void sl_alloc_init(sl_alloc& a, sl_alloc_state* warps) {
  a.s = warps + (threadIdx.x >> 5);
  a.net = 0;
  if (sl_lane() == 0) {
    a.s->block = SL_NULL;
    a.s->attempts = 0;
    a.s->exhausted = 0;
  }
  a.s->bitmap[sl_lane()] = SL_FULL;
  __syncwarp();
}

// Moves the warp to another resident block: hashed (warp id, attempt) for the first
// resident_probes changes, then every block in turn; false once all were tried.
__device__ __forceinline__ bool sl_next_resident(const sl_view& t, sl_alloc& a) {
  const u32 blocks = t.super_block_count * t.memory_blocks;
  const u32 n = a.s->attempts;
  const bool exhausted = a.s->exhausted != 0;
  __syncwarp();
  if (blocks == 0 || exhausted) return false;
  const u32 warp = (u32)(((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  u32 block = SL_NULL;
  if (n < t.resident_probes) {
    block = wm_map_to_range(wm_fmix32(warp * 0x9e3779b9u ^ wm_fmix32(n + (u32)t.seed)), blocks);
  } else if (n - t.resident_probes < blocks) {
    block = (wm_fmix32(warp) + (n - t.resident_probes)) % blocks;
  }
  if (sl_lane() == 0) {
    a.s->attempts = n + 1;
    a.s->block = block;
    a.s->exhausted = block == SL_NULL;
  }
  if (block != SL_NULL) {
    a.s->bitmap[sl_lane()] = __ldcg(sl_bitmap(t, block / t.memory_blocks, block % t.memory_blocks) + sl_lane());
  }
  __syncwarp();
  return block != SL_NULL;
}

// Allocates one slab for the warp: its address (the same in every lane), or SL_NULL when every
// memory block is full.
__device__ __forceinline__ u32 sl_allocate(const sl_view& t, sl_alloc& a) {
  for (;;) {
    const u32 bitmap = a.s->bitmap[sl_lane()];
    const u32 free_lanes = __ballot_sync(SL_FULL, bitmap != SL_FULL);
    if (free_lanes == 0u) {
      if (!sl_next_resident(t, a)) return SL_NULL;
      continue;
    }
    const int src = __ffs(free_lanes) - 1;
    u32 addr = SL_NULL;
    if ((int)sl_lane() == src) {
      const int bit = __ffs(~bitmap) - 1;
      const u32 block = a.s->block;
      const u32 sb = block / t.memory_blocks, mb = block % t.memory_blocks;
      const u32 old = atomicOr(sl_bitmap(t, sb, mb) + sl_lane(), 1u << bit);
      a.s->bitmap[sl_lane()] = old | (1u << bit);  // other warps' allocations from this block, too
      if ((old & (1u << bit)) == 0u) {
        addr = (sb << 24) | (mb << 10) | (sl_lane() * 32u + (u32)bit);
        a.net++;
      }
    }
    addr = __shfl_sync(SL_FULL, addr, src);
    __syncwarp();
    if (addr != SL_NULL) return addr;
  }
}

// Returns pool slab `addr` (all ones again) to its memory block. Called by one lane.
__device__ __forceinline__ void sl_free(const sl_view& t, u32 addr, sl_alloc& a) {
  const u32 unit = addr & 1023u;
  atomicAnd(sl_bitmap(t, addr >> 24, (addr >> 10) & 0x3fffu) + unit / 32u, ~(1u << (unit % 32u)));
  a.net--;
}

// ---------------------------------------------------------------------------------------------
// The operations, one source lane's at a time (all lanes call them with the source's key word
// and bucket). `first` is this lane's word of the bucket's base slab, read ahead
// by the work queue; later slabs are read as the list is walked. A word read ahead may be stale
// by the operations of the warp's earlier sources: a CAS then fails and the slab is read again,
// and a search or delete takes effect at the moment of that read.

// SEARCHALL: every copy of `kw`; `emit(value, rank)` for each (rank: 0, 1, ... in list order).
// Returns the number of copies.
template <typename Emit>
__device__ __forceinline__ u32 sl_search_all(const sl_view& t, u32 bucket, sl_word first, sl_word kw, Emit emit) {
  const sl_word* slab = sl_base_slab(t, bucket);
  sl_word w = first;
  u32 count = 0;
  for (;;) {
    const u32 hit = __ballot_sync(SL_FULL, w == kw) & SL_KEY_LANES;
    const sl_word v = sl_shfl(w, (sl_lane() + 1) & 31u);
    if (hit & (1u << sl_lane())) emit(v, count + __popc(hit & ((1u << sl_lane()) - 1u)));
    count += __popc(hit);
    const u32 next = (u32)sl_shfl(w, SL_ADDRESS_LANE);
    if (next == SL_NULL) return count;
    slab = sl_pool_slab(t, next);
    w = sl_read<false>(t, slab);
  }
}

// What a source lane's operation is waiting for after its fast step (sl_gfast_step): nothing,
// the CAS it issued, or the walk of the list (the slow step).
#define SL_DONE 0u
#define SL_PENDING 1u
#define SL_SLOW 2u

// REPLACE (unique) or INSERT (multimap) of (kw, vw) by source lane `src`, walking the list from
// `slab`: its base slab, or a slab before which the key cannot be (a unique list's slabs before
// its first empty slot are full, and a REPLACE places keys only at that slot) and which a
// multimap INSERT found full. Returns the status. `assign`: REPLACE gives a present key the new
// value (else it keeps its own).
__device__ __forceinline__ u32 sl_insert(const sl_view& t, sl_alloc& a, sl_word* slab, sl_word kw, sl_word vw,
                                         bool assign, int src) {
  const bool me = (int)sl_lane() == src;
  sl_word w = sl_read<true>(t, slab);
  for (;;) {
#if SL_UNIQUE
    const u32 hit = __ballot_sync(SL_FULL, w == kw) & SL_KEY_LANES;
    if (hit != 0u) {
      if (me && assign) sl_exch_word(slab + __ffs(hit), vw);
      return assign ? WM_STATUS_UPDATED : WM_STATUS_PRESENT;
    }
#endif
    const u32 empty = __ballot_sync(SL_FULL, w == SL_EMPTY) & SL_KEY_LANES;
    if (empty != 0u) {
      const int dest = __ffs(empty) - 1;
      const sl_word seen_value = sl_shfl(w, dest + 1);
      bool placed = false;
      if (me) placed = sl_cas_pair(slab, dest, SL_EMPTY, seen_value, kw, vw).succeeded();
      if (__shfl_sync(SL_FULL, placed, src)) return WM_STATUS_OK;
      w = sl_read<true>(t, slab);  // another warp took the slot: read the slab again
      continue;
    }
    const u32 next = (u32)sl_shfl(w, SL_ADDRESS_LANE);
    if (next == SL_NULL) {
      // The list's last slab is full: allocate one and link it (a warp that loses the link
      // frees its slab and follows the winner's).
      const u32 fresh = sl_allocate(t, a);
      if (fresh == SL_NULL) return WM_STATUS_TABLE_FULL;
      u32 linked = SL_NULL;
      if (sl_lane() == SL_ADDRESS_LANE) {
        linked = (u32)sl_cas_word(slab + SL_ADDRESS_LANE, SL_NULL_WORD, fresh);
        if (linked != SL_NULL) sl_free(t, fresh, a);
      }
      linked = __shfl_sync(SL_FULL, linked, SL_ADDRESS_LANE);
      slab = sl_pool_slab(t, linked == SL_NULL ? fresh : linked);
    } else {
      slab = sl_pool_slab(t, next);
    }
    w = sl_read<true>(t, slab);
  }
}

// DELETE (unique: the first copy becomes a tombstone) or DELETEALL (multimap: every copy becomes
// empty), walking the list from `slab`: its base slab, or (DELETE) a slab before which the key
// cannot be. Returns the number of copies this call removed.
__device__ __forceinline__ u32 sl_delete(const sl_view& t, sl_word* slab, sl_word kw) {
  sl_word w = sl_read<true>(t, slab);
  u32 removed = 0;
  for (;;) {
    const u32 hit = __ballot_sync(SL_FULL, w == kw) & SL_KEY_LANES;
#if SL_UNIQUE
    if (hit != 0u) {
      const int dest = __ffs(hit) - 1;
      bool done = false;
      if ((int)sl_lane() == dest) done = sl_cas_word(slab + dest, kw, SL_TOMBSTONE) == kw;
      if (__shfl_sync(SL_FULL, done, dest)) return 1;
      w = sl_read<true>(t, slab);  // changed under us: read the slab again
      continue;
    }
#else
    const bool mine = (hit >> sl_lane()) & 1u;
    const bool done = mine && sl_cas_word(slab + sl_lane(), kw, SL_EMPTY) == kw;
    removed += __popc(__ballot_sync(SL_FULL, done));
#endif
    const u32 next = (u32)sl_shfl(w, SL_ADDRESS_LANE);
    if (next == SL_NULL) return removed;
    slab = sl_pool_slab(t, next);
    w = sl_read<true>(t, slab);
  }
}

// ---------------------------------------------------------------------------------------------
// The batch loop: 32 operations per warp per round, one per lane; warps stride over the batch.

// Calls body(i, active) in every lane of every warp, for rounds of 32 consecutive items (lane l:
// item base + l); `active` is false past the end. Every lane takes part in every round.
template <typename F>
__device__ __forceinline__ void sl_for_each_round(u64 n, F body) {
  const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
  const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  for (u64 base = warp * 32; base < n; base += warps * 32) {
    const u64 i = base + sl_lane();
    body(i, i < n);
  }
}

// One lane's operation: its key as stored (word) and its bucket, each lane hashing its own key.
struct sl_job {
  sl_word kw;
  u32 bucket;
};
__device__ __forceinline__ sl_job sl_job_of(const sl_view& t, bool active, wm_key k) {
  sl_job j{0, 0};
  if (active) sl_place(t, k, j.kw, j.bucket);
  return j;
}

// Source lane `src`'s job, in every lane.
__device__ __forceinline__ sl_job sl_job_from(sl_job j, int src) {
  return sl_job{sl_shfl(j.kw, src), __shfl_sync(SL_FULL, j.bucket, src)};
}

// Base slabs each kernel's work queue reads ahead (from the host: src/table/slab.rs read_ahead;
// 1: one at a time, as the paper).
#if !defined(SL_AHEAD_INSERT) || !defined(SL_AHEAD_FIND) || !defined(SL_AHEAD_ERASE) || !defined(SL_AHEAD_MIXED)
#error "SL_AHEAD_INSERT, SL_AHEAD_FIND, SL_AHEAD_ERASE and SL_AHEAD_MIXED must be defined (1 to 16)"
#endif

// Takes the next source lane off `queue` (-1 when it is empty) and reads its base slab.
template <bool coherent>
__device__ __forceinline__ void sl_take(const sl_view& t, u32& queue, u32 bucket, int& src, sl_word& first) {
  src = queue != 0u ? __ffs(queue) - 1 : -1;
  queue &= queue - 1u;
  const u32 b = __shfl_sync(SL_FULL, bucket, src < 0 ? 0 : src);
  first = src < 0 ? (sl_word)0 : sl_read<coherent>(t, sl_base_slab(t, b));
}

// The work queue (§IV-A): calls op(src, source's job, first) for each lane src whose
// `has_work` is set, in lane order, with the source's job shuffled to the warp and `first` its
// base slab's word. The base slabs of the next P sources are read ahead, so a warp has that
// many reads in flight, not one (beyond the paper: its warp waits a full memory latency per
// operation).
template <bool coherent, int P, typename F>
__device__ __forceinline__ void sl_work_queue(const sl_view& t, bool has_work, sl_job job, F op) {
  static_assert(P >= 1 && P <= 16, "read-ahead: 1 to 16 base slabs");
  u32 queue = __ballot_sync(SL_FULL, has_work);
  int src[P];
  sl_word first[P];
#pragma unroll
  for (int j = 0; j < P; j++) sl_take<coherent>(t, queue, job.bucket, src[j], first[j]);
  // Slot j is used, then refilled in place (moving a word whose read is still in flight to
  // another register would wait for it).
  while (src[0] >= 0) {
#pragma unroll
    for (int j = 0; j < P; j++) {
      if (src[j] >= 0) {
        op(src[j], sl_job_from(job, src[j]), first[j]);
        sl_take<coherent>(t, queue, job.bucket, src[j], first[j]);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Half-warp groups (beyond the paper). A slab's 32 words are also 16 pairs (the paper's layout
// unchanged: pair i is words 2i, 2i + 1; the last "pair" is the auxiliary word and the next
// address). A group of 16 lanes reads a slab in one coalesced load, a pair per lane, so a warp
// serves two operations per step: every ballot and shuffle does the work of two, and a warp has
// twice the reads in flight. Lanes 0-15 and 16-31 are two groups with a work queue each (the
// paper's WCWS inside each group).

#if SL_WORD_BYTES == 4
typedef u64 sl_gpair;  // key | value << 32
__device__ __forceinline__ sl_word sl_gkey(const sl_gpair& p) { return (u32)p; }
__device__ __forceinline__ sl_word sl_gval(const sl_gpair& p) { return (u32)(p >> 32); }
__device__ __forceinline__ sl_gpair sl_gnone() { return ~0ull; }
#else
typedef ulonglong2 sl_gpair;  // (key, value)
__device__ __forceinline__ sl_word sl_gkey(const sl_gpair& p) { return p.x; }
__device__ __forceinline__ sl_word sl_gval(const sl_gpair& p) { return p.y; }
__device__ __forceinline__ sl_gpair sl_gnone() { return make_ulonglong2(~0ull, ~0ull); }
#endif
#define SL_G_PAIR_LANES 0x7fffu  // group lanes 0..14 hold pairs; lane 15: auxiliary word, next

__device__ __forceinline__ u32 sl_sub() { return threadIdx.x & 15u; }        // lane in its group
__device__ __forceinline__ u32 sl_gshift() { return threadIdx.x & 16u; }     // its group's first lane

// This lane's pair of a slab.
template <bool coherent>
__device__ __forceinline__ sl_gpair sl_gread(const sl_word* slab) {
  const sl_gpair* p = reinterpret_cast<const sl_gpair*>(slab) + sl_sub();
  return coherent ? __ldcg(p) : *p;
}
// A ballot of this lane's group (16 bits) and a shuffle inside it (src: a lane of the group).
__device__ __forceinline__ u32 sl_gballot(bool pred) { return (__ballot_sync(SL_FULL, pred) >> sl_gshift()) & 0xffffu; }
template <typename T>
__device__ __forceinline__ T sl_gshfl(T v, int src) { return __shfl_sync(SL_FULL, v, src, 16); }

// Takes the group's next source off `queue` (-1 when empty) and reads its base slab.
template <bool coherent>
__device__ __forceinline__ void sl_gtake(const sl_view& t, u32& queue, u32 bucket, int& src, sl_gpair& first) {
  src = queue != 0u ? __ffs(queue) - 1 : -1;
  queue &= queue - 1u;
  const u32 b = sl_gshfl(bucket, src < 0 ? 0 : src);
  first = src < 0 ? sl_gnone() : sl_gread<coherent>(sl_base_slab(t, b));
}

// SEARCH by a group (src: its source, -1 for none) from the base slab's pair `first`, walking
// the list while needed; both groups of a warp step together. The source lane gets found and
// value.
template <bool coherent>
__device__ __forceinline__ void sl_gsearch(const sl_view& t, int src, sl_gpair w, sl_word key_word, bool& found,
                                           sl_word& value) {
  const sl_word kw = sl_gshfl(key_word, src < 0 ? 0 : src);
  bool walking = src >= 0;
  for (;;) {
    const u32 hit = sl_gballot(walking && sl_gkey(w) == kw) & SL_G_PAIR_LANES;
    const sl_word v = sl_gshfl(sl_gval(w), hit != 0u ? __ffs(hit) - 1 : 0);
    const u32 next = (u32)sl_gshfl(sl_gval(w), 15);
    if (walking && (hit != 0u || next == SL_NULL)) {
      if ((int)sl_sub() == src) {
        found = hit != 0u;
        value = v;
      }
      walking = false;
    }
    if (!__any_sync(SL_FULL, walking)) return;
    if (walking) w = sl_gread<coherent>(sl_pool_slab(t, next));
  }
}

// The groups' work queues for searches: P base slabs read ahead per group.
template <bool coherent, int P>
__device__ __forceinline__ void sl_gsearches(const sl_view& t, bool active, sl_job job, bool& found, sl_word& value) {
  u32 queue = sl_gballot(active);
  int src[P];
  sl_gpair first[P];
#pragma unroll
  for (int j = 0; j < P; j++) sl_gtake<coherent>(t, queue, job.bucket, src[j], first[j]);
  while (__any_sync(SL_FULL, src[0] >= 0)) {
#pragma unroll
    for (int j = 0; j < P; j++) {
      sl_gsearch<coherent>(t, src[j], first[j], job.kw, found, value);
      sl_gtake<coherent>(t, queue, job.bucket, src[j], first[j]);
    }
  }
}

// A source's fast step by its group (src: the source lane in the group, -1 for none; both
// groups of a warp call it together), on its base slab's pair `first` (kernels of one KIND, or
// -1: mixed, each lane's `kind`). Every lane passes its own operation (kw, kind, vw); the source
// lane's is shuffled to its group. Ballots and shuffles come first, in every lane; then only the
// source lane acts:
// - a search takes its value, or proves the key absent where the list ends; otherwise the group
//   walks the list (sl_gsearch's loop: the other group waits or walks too);
// - an insert updates its present key (unique table) or issues the pair's CAS into the first
//   empty slot, checked after the warp's other operations (sl_settle_insert); a full base slab
//   leaves it to the slow step;
// - a delete (unique table) issues its key's tombstone CAS (checked in sl_settle_delete), or
//   proves the key absent where the base slab ends the list; the multimap's DELETEALL, and a
//   key not in its base slab's longer list, take the slow step.
template <int KIND, bool coherent>
__device__ __forceinline__ void sl_gfast_step(const sl_view& t, int src, const sl_gpair& first, sl_word kw_lane,
                                              u32 kind_lane, sl_word vw, u32 bucket, bool assign, u32& state,
                                              u32& result, sl_word& value, sl_cas& cas, sl_word& old) {
  const bool have = src >= 0;
  const int s0 = have ? src : 0;
  const sl_word kw = sl_gshfl(kw_lane, s0);
  const u32 kind = KIND >= 0 ? (u32)KIND : sl_gshfl(kind_lane, s0);
  const bool me = have && (int)sl_sub() == src;
  const u32 hit = sl_gballot(have && sl_gkey(first) == kw) & SL_G_PAIR_LANES;
  const u32 next = (u32)sl_gshfl(sl_gval(first), 15);
  u32 empty = 0u;
  sl_word empty_value = 0;
  if (KIND != WM_OP_ERASE) {
    empty = sl_gballot(have && kind == WM_OP_INSERT && sl_gkey(first) == SL_EMPTY) & SL_G_PAIR_LANES;
    empty_value = sl_gshfl(sl_gval(first), empty != 0u ? __ffs(empty) - 1 : 0);
  }
  if (KIND < 0) {  // searches in a mixed batch: their walks, as sl_gsearch
    bool walking = have && kind == WM_OP_FIND;
    sl_gpair w = first;
    u32 h = hit, nx = next;
    for (;;) {
      const sl_word v = sl_gshfl(sl_gval(w), h != 0u ? __ffs(h) - 1 : 0);
      if (walking && (h != 0u || nx == SL_NULL)) {
        if (me) {
          result = h != 0u ? 1u : 0u;
          value = v;
          state = SL_DONE;
        }
        walking = false;
      }
      if (!__any_sync(SL_FULL, walking)) break;
      if (walking) w = sl_gread<coherent>(sl_pool_slab(t, nx));
      h = sl_gballot(walking && sl_gkey(w) == kw) & SL_G_PAIR_LANES;
      nx = (u32)sl_gshfl(sl_gval(w), 15);
    }
  }
  if (!me || kind == WM_OP_FIND) return;
  sl_word* slab = sl_base_slab(t, bucket);
  state = SL_SLOW;
  if (kind == WM_OP_INSERT) {
#if SL_UNIQUE
    if (hit != 0u) {
      if (assign) sl_exch_word(slab + 2 * (__ffs(hit) - 1) + 1, vw);
      result = assign ? WM_STATUS_UPDATED : WM_STATUS_PRESENT;
      state = SL_DONE;
      return;
    }
#endif
    if (empty != 0u) {
      cas = sl_cas_pair(slab, 2 * (__ffs(empty) - 1), SL_EMPTY, empty_value, kw, vw);
      state = SL_PENDING;
    }
  } else {
#if SL_UNIQUE
    if (hit != 0u) {
      old = sl_cas_word(slab + 2 * (__ffs(hit) - 1), kw, SL_TOMBSTONE);
      state = SL_PENDING;
    } else if (next == SL_NULL) {
      result = 0;  // absent: not in its only slab
      state = SL_DONE;
    }
#endif
  }
}

// The groups' work queues: calls step(src, first) for each source of each group (src -1 where
// a group has none left while the other has), P base slabs read ahead per group.
template <bool coherent, int P, typename F>
__device__ __forceinline__ void sl_gwork_queue(const sl_view& t, bool has_work, u32 bucket, F step) {
  static_assert(P >= 1 && P <= 16, "read-ahead: 1 to 16 base slabs");
  u32 queue = sl_gballot(has_work);
  int src[P];
  sl_gpair first[P];
#pragma unroll
  for (int j = 0; j < P; j++) sl_gtake<coherent>(t, queue, bucket, src[j], first[j]);
  while (__any_sync(SL_FULL, src[0] >= 0)) {
#pragma unroll
    for (int j = 0; j < P; j++) {
      step(src[j], first[j]);
      sl_gtake<coherent>(t, queue, bucket, src[j], first[j]);
    }
  }
}

// The insert and mixed kernels' occupancy: SL_MIN_BLOCKS (from the host; 0: the compiler's
// choice) blocks per multiprocessor, which caps their registers.
#if SL_MIN_BLOCKS > 0
#define SL_BOUNDS __launch_bounds__(WM_BLOCK, SL_MIN_BLOCKS)
#else
#define SL_BOUNDS
#endif

__device__ __forceinline__ bool sl_is_sentinel(wm_key k) {
  const sl_word w = (sl_word)k;
  return w == SL_EMPTY || w == SL_TOMBSTONE;
}

// Calls slow(src, source's job) for each lane whose `state` is SL_SLOW, in lane order.
template <typename F>
__device__ __forceinline__ void sl_slow_steps(u32 state, sl_job job, F slow) {
  for (u32 q = __ballot_sync(SL_FULL, state == SL_SLOW); q != 0u; q &= q - 1u) {
    const int src = __ffs(q) - 1;
    slow(src, sl_job_from(job, src));
  }
}

// The end of an insert's fast step: its CAS succeeded (OK) or it takes the slow step.
__device__ __forceinline__ void sl_settle_insert(u32& state, u32& status, const sl_cas& cas) {
  if (state != SL_PENDING) return;
  if (cas.succeeded()) {
    status = WM_STATUS_OK;
    state = SL_DONE;
  } else {
    state = SL_SLOW;
  }
}

// The end of a delete's fast step: its tombstone CAS met the key (removed) or it walks.
__device__ __forceinline__ void sl_settle_delete(u32& state, u32& removed, sl_word old, sl_word kw) {
  if (state != SL_PENDING) return;
  if (old == kw) {
    removed = 1;
    state = SL_DONE;
  } else {
    state = SL_SLOW;
  }
}

// Counts an insert's outcome and marks keys stored on their sentinel lists.
__device__ __forceinline__ void sl_insert_result(wm_key k, u32& status, long long& inserted, long long& failed) {
  if (sl_is_sentinel(k) && (status & WM_STATUS_FAILURE_MASK) == 0u) status |= WM_STATUS_SENTINEL_KEY;
  if (status & WM_STATUS_FAILURE_MASK) failed++;
  else if ((status & (WM_STATUS_UPDATED | WM_STATUS_PRESENT)) == 0u) inserted++;
}

// ---------------------------------------------------------------------------------------------
// A thread per operation (beyond the paper; 4-byte words). A warp-wide or half-warp step serves
// one or two operations per round trip and spends tens of instructions (ballots, shuffles, the
// work queue) on each; a mixed batch of 2^20 operations then runs out of instruction issue long
// before memory (bench/NOTES.md, issue 11). Here the warp copies the 32 slabs its lanes need
// into shared memory together (sl_tread), and each lane scans its own and goes on alone; lanes
// whose key lies further along their lists read their next slabs together, in as many rounds as
// the longest walk. Inserts that need a new slab, CASes that lost, and the multimap's DELETEALL
// take the warp-wide slow step, from the slab where the lane stopped. Slabs of 8-byte words (256
// bytes) stay with the half-warp groups.

#if SL_WORD_BYTES == 4
// Blocks per multiprocessor for the thread kernels: a lane holds a whole slab (32 registers)
// while it scans, so the group kernels' cap (SL_MIN_BLOCKS) would spill it.
#ifndef SL_THREAD_MIN_BLOCKS
#define SL_THREAD_MIN_BLOCKS 4
#endif
#define SL_THREAD_BOUNDS __launch_bounds__(WM_BLOCK, SL_THREAD_MIN_BLOCKS)
// The batch kernels that run a thread per operation (bits: 1 find, 2 insert, 4 erase, 8 mixed);
// the others run the half-warp groups. Measured per kernel: bench/NOTES.md, issue 11.
#ifndef SL_THREAD_KERNELS
#define SL_THREAD_KERNELS 11
#endif
#else
#define SL_THREAD_KERNELS 0
#endif

#if SL_THREAD_KERNELS
#define SL_NO_SLOT 15u  // a scan's "no such slot" (slots are 0..14)

// What one lane saw of one slab: the first slot holding its key and that slot's value, the
// first empty slot and its value (a pair CAS compares both words), and the next slab.
struct sl_tscan {
  u32 hit, empty, next;
  sl_word hit_value, empty_value;
};

// Scans a slab (q[i]: pairs 2i in .x and 2i + 1 in .y; q[7].y: the auxiliary word, then the
// next slab's address) for `kw` and for the first empty slot.
__device__ __forceinline__ sl_tscan sl_tscan_of(const ulonglong2 (&q)[8], sl_word kw) {
  sl_tscan s{SL_NO_SLOT, SL_NO_SLOT, (u32)(q[7].y >> 32), 0, 0};
#pragma unroll
  for (int j = 14; j >= 0; j--) {  // downwards: the lowest slot wins
    const u64 pair = (j & 1) ? q[j >> 1].y : q[j >> 1].x;
    const sl_word k = (u32)pair, v = (u32)(pair >> 32);
    if (k == kw) {
      s.hit = (u32)j;
      s.hit_value = v;
    }
    if (k == SL_EMPTY) {
      s.empty = (u32)j;
      s.empty_value = v;
    }
  }
  return s;
}

// Reads `slab` (each lane its own) for the lanes whose `has` is set, staged by the warp
// (kernels/common/stage.cuh), and scans it for `kw`. Every lane calls it (warp-synchronous).
__device__ __forceinline__ sl_tscan sl_tread(wm_stage& stage, bool has, const sl_word* slab, sl_word kw) {
  wm_stage_lines(stage, has, slab);
  ulonglong2 q[8];
#pragma unroll
  for (int i = 0; i < 8; i++) q[i] = wm_staged(stage, (u32)i);
  return sl_tscan_of(q, kw);
}

// One lane's operation on its list. A search walks until its key or the list's end; a REPLACE
// (unique) walks likewise, then updates the key where it found it or issues the pair's CAS
// into the last slab's first empty slot; an INSERT (multimap) walks to the first slab with an
// empty slot and issues its CAS there; a DELETE (unique) issues its key's tombstone CAS where it
// found it. The CASes are checked by sl_settle_*; what needs a new slab (every slot to the
// list's end full), and DELETEALL, is left to the slow step, which starts at `resume`. Every
// lane calls it (the slabs are read by the warp); `known`: this lane has an operation.
__device__ __forceinline__ void sl_tstep(const sl_view& t, wm_stage& stage, bool known, u32 kind, sl_job job,
                                         sl_word vw, bool assign, u32& state, u32& result, sl_word& value,
                                         sl_cas& cas, sl_word& old, sl_word*& resume) {
  const bool deletes_all = !SL_UNIQUE && kind == WM_OP_ERASE;
  const bool want_empty = !SL_UNIQUE && kind == WM_OP_INSERT;
  sl_word* slab = sl_base_slab(t, job.bucket);
  bool reading = known && !deletes_all;
  sl_tscan s = sl_tread(stage, reading, slab, job.kw);
  reading = reading && (want_empty ? s.empty : s.hit) == SL_NO_SLOT && s.next != SL_NULL;
  while (__any_sync(SL_FULL, reading)) {
    if (reading) slab = sl_pool_slab(t, s.next);
    const sl_tscan n = sl_tread(stage, reading, slab, job.kw);
    if (reading) {
      s = n;
      reading = (want_empty ? s.empty : s.hit) == SL_NO_SLOT && s.next != SL_NULL;
    }
  }
  resume = slab;
  if (!known) return;
  if (deletes_all) {
    state = SL_SLOW;
  } else if (kind == WM_OP_FIND) {
    result = s.hit != SL_NO_SLOT ? 1u : 0u;
    value = s.hit_value;
  } else if (kind == WM_OP_INSERT) {
    if (SL_UNIQUE && s.hit != SL_NO_SLOT) {
      if (assign) sl_exch_word(slab + 2 * s.hit + 1, vw);
      result = assign ? WM_STATUS_UPDATED : WM_STATUS_PRESENT;
    } else if (s.empty != SL_NO_SLOT) {
      // Unique table: past the key's every slab, so the empty slot is in the list's last slab.
      cas = sl_cas_pair(slab, 2 * s.empty, SL_EMPTY, s.empty_value, job.kw, vw);
      state = SL_PENDING;
    } else {
      state = SL_SLOW;
    }
  } else if (s.hit != SL_NO_SLOT) {
    old = sl_cas_word(slab + 2 * s.hit, job.kw, SL_TOMBSTONE);
    state = SL_PENDING;
  } else {
    result = 0;  // absent: not in its list
  }
}

// A batch kernel's body with a thread per operation: KIND one of WM_OP_*, or -1 (mixed: the
// operation of each key from b.ops). `a`: the warp's allocator (unused by searches).
template <int KIND>
__device__ __forceinline__ void sl_thread_batch(const sl_view& t, const wm_bulk& b, sl_alloc& a, wm_stage& stage,
                                                long long& inserted, long long& failed) {
  const bool assign = b.assign != 0;
  sl_for_each_round(b.n, [&](u64 i, bool active) {
    const u32 op = !active ? 255u : KIND >= 0 ? (u32)KIND : (u32)b.ops[i];
    const bool known = op == WM_OP_INSERT || op == WM_OP_FIND || op == WM_OP_ERASE;
    const wm_key k = known ? b.keys[i] : wm_key(0);
    const sl_word vw = op == WM_OP_INSERT ? (sl_word)b.values[i] : 0;
    const sl_job job = sl_job_of(t, known, k);
    u32 state = SL_DONE, result = 0;
    sl_word value = 0, old = 0;
    sl_cas cas;
    sl_word* resume;
    sl_tstep(t, stage, known, op, job, vw, assign, state, result, value, cas, old, resume);
    if (KIND != WM_OP_FIND) {
      if (op == WM_OP_INSERT) sl_settle_insert(state, result, cas);
      if (op == WM_OP_ERASE) sl_settle_delete(state, result, old, job.kw);
      sl_slow_steps(state, job, [&](int src, sl_job s) {
        const bool me = (int)sl_lane() == src;
        sl_word* from = reinterpret_cast<sl_word*>(__shfl_sync(SL_FULL, reinterpret_cast<u64>(resume), src));
        if (__shfl_sync(SL_FULL, op, src) == WM_OP_INSERT) {
          const u32 st = sl_insert(t, a, from, s.kw, sl_shfl(vw, src), assign, src);
          if (me) result = st;
        } else {
          const u32 r = sl_delete(t, from, s.kw);
          if (me) result = r;
        }
      });
    }
    if (!known) return;
    if (op == WM_OP_INSERT) {
      sl_insert_result(k, result, inserted, failed);
      if (b.status != nullptr) b.status[i] = result;
    } else if (op == WM_OP_FIND) {
      if (result != 0u && b.out != nullptr) b.out[i] = (wm_value)value;
      b.found[i] = result != 0u ? 1 : 0;
    } else {
      if (KIND < 0) b.found[i] = result != 0u ? 1 : 0;
      inserted -= result;
    }
  });
}

// The thread kernels' shared memory, and a kernel's start: the warp's stage and allocator.
#define SL_THREAD_KERNEL_START                                  \
  __shared__ sl_alloc_state alloc_warps[SL_ALLOC_WARPS];       \
  __shared__ wm_stage stages[SL_ALLOC_WARPS];                   \
  wm_stage& stage = stages[threadIdx.x >> 5];                   \
  sl_alloc a;                                                  \
  sl_alloc_init(a, alloc_warps);                               \
  long long inserted = 0, failed = 0
#define SL_THREAD_KERNEL_END                  \
  wm_add_count_warp(t.meta, inserted);         \
  wm_add_count_warp(t.meta + 1, failed);       \
  wm_add_count_warp(t.alloc_meta, a.net)
#endif

#if SL_THREAD_KERNELS & 2
extern "C" __global__ void SL_THREAD_BOUNDS slab_insert(sl_view t, wm_bulk b) {
  SL_THREAD_KERNEL_START;
  sl_thread_batch<WM_OP_INSERT>(t, b, a, stage, inserted, failed);
  SL_THREAD_KERNEL_END;
}
#else
extern "C" __global__ void SL_BOUNDS slab_insert(sl_view t, wm_bulk b) {
  __shared__ sl_alloc_state alloc_warps[SL_ALLOC_WARPS];
  sl_alloc a;
  sl_alloc_init(a, alloc_warps);
  long long inserted = 0, failed = 0;
  const bool assign = b.assign != 0;
  sl_for_each_round(b.n, [&](u64 i, bool active) {
    const wm_key k = active ? b.keys[i] : wm_key(0);
    const sl_word vw = active ? (sl_word)b.values[i] : 0;
    const sl_job job = sl_job_of(t, active, k);
    u32 state = SL_DONE, status = 0;
    sl_word value = 0, old = 0;
    sl_cas cas;
    sl_gwork_queue<true, SL_AHEAD_INSERT>(t, active, job.bucket, [&](int src, const sl_gpair& first) {
      sl_gfast_step<WM_OP_INSERT, true>(t, src, first, job.kw, WM_OP_INSERT, vw, job.bucket, assign, state, status,
                                         value, cas, old);
    });
    sl_settle_insert(state, status, cas);
    sl_slow_steps(state, job, [&](int src, sl_job s) {
      const u32 st = sl_insert(t, a, sl_base_slab(t, s.bucket), s.kw, sl_shfl(vw, src), assign, src);
      if ((int)sl_lane() == src) status = st;
    });
    if (active) {
      sl_insert_result(k, status, inserted, failed);
      if (b.status != nullptr) b.status[i] = status;
    }
  });
  wm_add_count_warp(t.meta, inserted);
  wm_add_count_warp(t.meta + 1, failed);
  wm_add_count_warp(t.alloc_meta, a.net);
}

#endif

#if SL_THREAD_KERNELS & 1
extern "C" __global__ void SL_THREAD_BOUNDS slab_find(sl_view t, wm_bulk b) {
  SL_THREAD_KERNEL_START;
  sl_thread_batch<WM_OP_FIND>(t, b, a, stage, inserted, failed);
  SL_THREAD_KERNEL_END;
}
#else
extern "C" __global__ void slab_find(sl_view t, wm_bulk b) {
  sl_for_each_round(b.n, [&](u64 i, bool active) {
    const wm_key k = active ? b.keys[i] : wm_key(0);
    sl_word value = 0;
    bool found = false;
    sl_gsearches<false, SL_AHEAD_FIND>(t, active, sl_job_of(t, active, k), found, value);
    if (active) {
      if (found && b.out != nullptr) b.out[i] = (wm_value)value;
      b.found[i] = found ? 1 : 0;
    }
  });
}

#endif

#if SL_THREAD_KERNELS & 4
extern "C" __global__ void SL_THREAD_BOUNDS slab_erase(sl_view t, wm_bulk b) {
  SL_THREAD_KERNEL_START;
  sl_thread_batch<WM_OP_ERASE>(t, b, a, stage, inserted, failed);
  SL_THREAD_KERNEL_END;
}
#else
// DELETE (unique) or DELETEALL (multimap) of each key.
extern "C" __global__ void slab_erase(sl_view t, wm_bulk b) {
  long long removed_total = 0;
  sl_for_each_round(b.n, [&](u64 i, bool active) {
    const wm_key k = active ? b.keys[i] : wm_key(0);
    const sl_job job = sl_job_of(t, active, k);
    u32 state = SL_DONE, removed = 0;
    sl_word value = 0, old = 0;
    sl_cas cas;
    sl_gwork_queue<true, SL_AHEAD_ERASE>(t, active, job.bucket, [&](int src, const sl_gpair& first) {
      sl_gfast_step<WM_OP_ERASE, true>(t, src, first, job.kw, WM_OP_ERASE, 0, job.bucket, false, state, removed,
                                        value, cas, old);
    });
    sl_settle_delete(state, removed, old, job.kw);
    sl_slow_steps(state, job, [&](int src, sl_job s) {
      const u32 r = sl_delete(t, sl_base_slab(t, s.bucket), s.kw);
      if ((int)sl_lane() == src) removed = r;
    });
    removed_total += removed;
  });
  wm_add_count_warp(t.meta, -removed_total);
}

#endif

#if SL_THREAD_KERNELS & 8
// Insert (REPLACE / INSERT), search and delete in one concurrent batch.
extern "C" __global__ void SL_THREAD_BOUNDS slab_mixed(sl_view t, wm_bulk b) {
  SL_THREAD_KERNEL_START;
  sl_thread_batch<-1>(t, b, a, stage, inserted, failed);
  SL_THREAD_KERNEL_END;
}
#else
// Insert (REPLACE / INSERT), search and delete in one concurrent batch: each source's operation
// is shuffled to its group with its key.
extern "C" __global__ void SL_BOUNDS slab_mixed(sl_view t, wm_bulk b) {
  __shared__ sl_alloc_state alloc_warps[SL_ALLOC_WARPS];
  sl_alloc a;
  sl_alloc_init(a, alloc_warps);
  long long inserted = 0, failed = 0;
  const bool assign = b.assign != 0;
  sl_for_each_round(b.n, [&](u64 i, bool active) {
    const u32 op = active ? b.ops[i] : 255u;
    const bool known = op == WM_OP_INSERT || op == WM_OP_FIND || op == WM_OP_ERASE;
    const wm_key k = known ? b.keys[i] : wm_key(0);
    const sl_word vw = op == WM_OP_INSERT ? (sl_word)b.values[i] : 0;
    const sl_job job = sl_job_of(t, known, k);
    u32 state = SL_DONE, result = 0;
    sl_word value = 0, old = 0;
    sl_cas cas;
    sl_gwork_queue<true, SL_AHEAD_MIXED>(t, known, job.bucket, [&](int src, const sl_gpair& first) {
      sl_gfast_step<-1, true>(t, src, first, job.kw, op, vw, job.bucket, assign, state, result, value, cas, old);
    });
    if (op == WM_OP_INSERT) sl_settle_insert(state, result, cas);
    if (op == WM_OP_ERASE) sl_settle_delete(state, result, old, job.kw);
    sl_slow_steps(state, job, [&](int src, sl_job s) {
      const bool me = (int)sl_lane() == src;
      if (__shfl_sync(SL_FULL, op, src) == WM_OP_INSERT) {
        const u32 st = sl_insert(t, a, sl_base_slab(t, s.bucket), s.kw, sl_shfl(vw, src), assign, src);
        if (me) result = st;
      } else {
        const u32 r = sl_delete(t, sl_base_slab(t, s.bucket), s.kw);
        if (me) result = r;
      }
    });
    if (!known) return;
    if (op == WM_OP_INSERT) {
      sl_insert_result(k, result, inserted, failed);
      b.status[i] = result;
    } else if (op == WM_OP_FIND) {
      if (result != 0u) b.out[i] = (wm_value)value;
      b.found[i] = result != 0u ? 1 : 0;
    } else {
      b.found[i] = result != 0u ? 1 : 0;
      inserted -= result;
    }
  });
  wm_add_count_warp(t.meta, inserted);
  wm_add_count_warp(t.meta + 1, failed);
  wm_add_count_warp(t.alloc_meta, a.net);
}

#endif

// SEARCHALL, first pass: the number of copies of each key, into b.status (u32 per key).
extern "C" __global__ void slab_count(sl_view t, wm_bulk b) {
  sl_for_each_round(b.n, [&](u64 i, bool active) {
    const wm_key k = active ? b.keys[i] : wm_key(0);
    u32 count = 0;
    sl_work_queue<false, SL_AHEAD_FIND>(t, active, sl_job_of(t, active, k), [&](int src, sl_job s, sl_word first) {
      const u32 c = sl_search_all(t, s.bucket, first, s.kw, [](sl_word, u32) {});
      if ((int)sl_lane() == src) count = c;
    });
    if (active) b.status[i] = count;
  });
}

// SEARCHALL, second pass: the values of key i into b.out from offset b.counter[i] (the exclusive
// prefix sum of the first pass's counts), at most the count of the first pass.
extern "C" __global__ void slab_find_all(sl_view t, wm_bulk b) {
  sl_for_each_round(b.n, [&](u64 i, bool active) {
    const wm_key k = active ? b.keys[i] : wm_key(0);
    const u64 start = active ? b.counter[i] : 0, end = active ? b.counter[i + 1] : 0;
    sl_work_queue<false, SL_AHEAD_FIND>(t, active, sl_job_of(t, active, k), [&](int src, sl_job s, sl_word first) {
      const u64 from = __shfl_sync(SL_FULL, start, src), to = __shfl_sync(SL_FULL, end, src);
      sl_search_all(t, s.bucket, first, s.kw, [&](sl_word v, u32 rank) {
        if (from + rank < to) b.out[from + rank] = (wm_value)v;
      });
    });
  });
}

// Calls body(bucket) for every bucket (the sentinel ones too), one warp per bucket.
template <typename F>
__device__ __forceinline__ void sl_for_each_bucket(const sl_view& t, F body) {
  const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
  for (u64 w = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; w < (u64)t.buckets + 2; w += warps) body((u32)w);
}

// Every stored pair, a warp per list (keys of buckets B and B + 1 are the sentinels).
extern "C" __global__ void slab_retrieve(sl_view t, wm_bulk b) {
  sl_for_each_bucket(t, [&](u32 bucket) {
    const sl_word* slab = sl_base_slab(t, bucket);
    for (;;) {
      const sl_word w = sl_read<false>(t, slab);
      const bool live = ((SL_KEY_LANES >> sl_lane()) & 1u) && w != SL_EMPTY && w != SL_TOMBSTONE;
      const sl_word v = sl_shfl(w, (sl_lane() + 1) & 31u);
      const u64 pos = wm_aggregated_inc(b.counter, live);
      if (live && pos < b.n) {
        b.out_keys[pos] = bucket < t.buckets ? (wm_key)w : (wm_key)(bucket == t.buckets ? SL_EMPTY : SL_TOMBSTONE);
        b.out[pos] = (wm_value)v;
      }
      const u32 next = (u32)sl_shfl(w, SL_ADDRESS_LANE);
      if (next == SL_NULL) break;
      slab = sl_pool_slab(t, next);
    }
  });
}

// FLUSH: compacts each list (a warp per list) so that its live pairs fill its first slabs in
// order, then frees the slabs after the last one it needs (written all ones again). Nothing else
// may run on the table meanwhile (a kernel of its own, as in the paper).
extern "C" __global__ void slab_flush(sl_view t, wm_bulk b) {
  __shared__ sl_alloc_state alloc_warps[SL_ALLOC_WARPS];
  sl_alloc a;
  sl_alloc_init(a, alloc_warps);
  sl_for_each_bucket(t, [&](u32 bucket) {
    sl_word* write = sl_base_slab(t, bucket);  // the slab receiving pairs
    u32 filled = 0;                            // pairs already in it
    sl_word* read = write;
    for (;;) {
      const sl_word w = read[sl_lane()];
      __syncwarp();
      const u32 next = (u32)sl_shfl(w, SL_ADDRESS_LANE);
      const bool live = ((SL_KEY_LANES >> sl_lane()) & 1u) && w != SL_EMPTY && w != SL_TOMBSTONE;
      const u32 live_lanes = __ballot_sync(SL_FULL, live);
      const sl_word v = sl_shfl(w, (sl_lane() + 1) & 31u);
      // The slab after `write` in the list: `write` <= `read`, so it exists wherever a pair
      // spills over (the pairs read so far fit in the slabs read so far).
      const u32 after_write = (u32)sl_shfl(write[sl_lane()], SL_ADDRESS_LANE);
      __syncwarp();
      if (live) {
        const u32 at = filled + __popc(live_lanes & ((1u << sl_lane()) - 1u));
        sl_word* dest = at < 15u ? write : sl_pool_slab(t, after_write);
        dest[2 * (at % 15u)] = w;
        dest[2 * (at % 15u) + 1] = v;
      }
      __syncwarp();
      filled += __popc(live_lanes);
      if (filled > 15u) {  // spilled into the next slab, which now receives
        filled -= 15u;
        write = sl_pool_slab(t, after_write);
      }
      if (next == SL_NULL) break;
      read = sl_pool_slab(t, next);
    }
    // Empty the rest of `write` (it holds `filled` pairs, 0..15), end the list there, and free
    // the slabs after it.
    u32 rest = (u32)sl_shfl(write[sl_lane()], SL_ADDRESS_LANE);
    __syncwarp();
    if (sl_lane() < 30u && sl_lane() >= 2u * filled) write[sl_lane()] = SL_EMPTY;
    if (sl_lane() == SL_ADDRESS_LANE) write[SL_ADDRESS_LANE] = SL_NULL_WORD;
    while (rest != SL_NULL) {
      sl_word* s = sl_pool_slab(t, rest);
      const u32 after = (u32)sl_shfl(s[sl_lane()], SL_ADDRESS_LANE);
      __syncwarp();
      s[sl_lane()] = SL_EMPTY;  // free slabs are all ones (the next kernel allocates it)
      __syncwarp();
      if (sl_lane() == 0) sl_free(t, rest, a);
      rest = after;
    }
  });
  wm_add_count_warp(t.alloc_meta, a.net);
}

// SlabAlloc's rate: allocates b.n slabs, one per thread (each warp serves its lanes in turn, as
// its inserts do), and writes their addresses to b.status (SL_NULL where the pool was full).
extern "C" __global__ void slab_alloc(sl_view t, wm_bulk b) {
  __shared__ sl_alloc_state alloc_warps[SL_ALLOC_WARPS];
  sl_alloc a;
  sl_alloc_init(a, alloc_warps);
  sl_for_each_round(b.n, [&](u64 i, bool active) {
    u32 mine = SL_NULL;
    for (u32 queue = __ballot_sync(SL_FULL, active); queue != 0u; queue &= queue - 1u) {
      const u32 addr = sl_allocate(t, a);
      if ((int)sl_lane() == __ffs(queue) - 1) mine = addr;
    }
    if (active) b.status[i] = mine;
  });
  wm_add_count_warp(t.alloc_meta, a.net);
}

// Frees the b.n slabs whose addresses are in b.status (SL_NULL entries are skipped).
extern "C" __global__ void slab_free(sl_view t, wm_bulk b) {
  __shared__ sl_alloc_state alloc_warps[SL_ALLOC_WARPS];
  sl_alloc a;
  sl_alloc_init(a, alloc_warps);
  sl_for_each_round(b.n, [&](u64 i, bool active) {
    const u32 addr = active ? b.status[i] : SL_NULL;
    if (addr != SL_NULL) sl_free(t, addr, a);
  });
  wm_add_count_warp(t.alloc_meta, a.net);
}
