// The relational operators' own device steps (host side: src/ops/device.rs), around the hash
// tables' bulk calls: row numbers, the count and sum of a join's matches, the canonical k-mers
// of reads, and two tables of the operators' own: the group table of a one-pass group-by and
// the join table of a hash join.
//
//   ops_iota         out[i] = start + i
//   ops_found_sum    over the rows where found[i] != 0: their count, and the sum of
//                    values[index ? index[i] : i] (4- or 8-byte integers, signed or not, summed
//                    in 64 bits with wrap-around) into totals[0] and totals[1]
//   ops_kmers        every k-mer of every read, canonical (the smaller of the k-mer and its
//                    reverse complement, 2 bits a base, A=0 C=1 G=2 T=3), one key per window,
//                    and a count of 1 beside it; a window with a base other than ACGT (either
//                    case) gets the key OPS_NOT_A_KMER (all ones), which no canonical k-mer of
//                    k <= 31 can equal (they fit 62 bits): its count is the windows skipped
//   ops_group_init / ops_group_reduce / ops_group_emit
//                    a group-by's table: start every row from a template, fold the rows' keys
//                    and columns into it in one pass, pack its groups (below)
//   ops_distinct_sketch
//                    a HyperLogLog sketch of the keys, which sizes a group table
//   ops_join_build / ops_join_probe / ops_join_probe_sum
//                    a join's build side into its table, and its probes (below)
//   ops_run_heads / ops_scan_tiles / ops_fill / ops_sorted_reduce
//                    a group-by of rows sorted on their key, by runs, without a table (below)
//
// No defines: every width is a run-time argument. Grid-stride loops, any grid covers n.

// Sums `v` over the warp; lane 0 gets the total.
__device__ __forceinline__ u64 ops_warp_sum(u64 v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

extern "C" __global__ void ops_iota(u32* __restrict__ out, u64 n, u32 start) {
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    out[i] = start + (u32)i;
  }
}

// The grid's threads walk whole warps' worth of rows so that every lane reaches the shuffles.
extern "C" __global__ void ops_found_sum(const u8* __restrict__ found, const u32* __restrict__ index,
                                        const u8* __restrict__ values, u32 value_bytes, u32 is_signed,
                                        u64 n, u64* __restrict__ totals) {
  u64 count = 0, sum = 0;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    if (found[i] == 0) continue;
    const u64 row = index ? (u64)index[i] : i;
    u64 v;
    if (value_bytes == 8u) {
      v = ((const u64*)values)[row];
    } else {
      const u32 w = ((const u32*)values)[row];
      v = is_signed ? (u64)(i64)(int)w : (u64)w;
    }
    count += 1;
    sum += v;
  }
  count = ops_warp_sum(count);
  sum = ops_warp_sum(sum);
  if ((threadIdx.x & 31u) == 0u && count != 0) {
    atomicAdd((unsigned long long*)&totals[0], (unsigned long long)count);
    atomicAdd((unsigned long long*)&totals[1], (unsigned long long)sum);
  }
}

// 2-bit code of a base, or 4 for anything but A, C, G, T (either case).
__device__ __forceinline__ u32 ops_base_code(u8 b) {
  switch (b | 0x20) {
    case 'a': return 0u;
    case 'c': return 1u;
    case 'g': return 2u;
    case 't': return 3u;
    default: return 4u;
  }
}

#define OPS_NOT_A_KMER 0xffffffffffffffffull

// Reads are `reads` consecutive runs of `read_len` bytes in `bases`; read r's windows are
// keys[r * per_read + p] for p < per_read = read_len - k + 1 (1 <= k <= 31, k <= read_len).
extern "C" __global__ void ops_kmers(const u8* __restrict__ bases, u64 reads, u32 read_len, u32 k,
                                     u64* __restrict__ keys, u32* __restrict__ ones) {
  const u64 per_read = (u64)(read_len - k + 1u);
  const u64 n = reads * per_read;
  const u64 mask = (1ull << (2u * k)) - 1ull;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    const u64 r = i / per_read, p = i - r * per_read;
    const u8* s = bases + r * read_len + p;
    u64 fwd = 0, rev = 0;
    u32 bad = 0;
    for (u32 j = 0; j < k; j++) {
      const u32 c = ops_base_code(s[j]);
      bad |= c >> 2;
      const u64 c2 = (u64)(c & 3u);
      fwd = ((fwd << 2) | c2) & mask;
      rev = (rev >> 2) | ((3ull - c2) << (2u * (k - 1u)));
    }
    keys[i] = bad ? OPS_NOT_A_KMER : (fwd < rev ? fwd : rev);
    ones[i] = 1u;
  }
}

// ---------------------------------------------------------------------------------------------
// The group table: SELECT key, agg(c0), ..., agg(c{cols-1}) [, COUNT(*)] GROUP BY key in one
// pass over the rows (ops_group_reduce), where the table-per-aggregate way reads the rows once
// per column and looks every group up again.
//
// A row of the table is `stride` u64 words (a power of two, so that a row of up to four words
// sits in one 32-byte sector: the claim and the aggregates' atomics touch one sector): word 0
// the key widened to 64 bits (OPS_EMPTY_KEY, all ones, marks a free row), words 1..=cols the
// columns' accumulators in their own width (a 4-byte column in the word's low half), then the
// count where there is one. Rows 0..capacity are hashed (linear probing from
// __umul64hi(hash, capacity)); row `capacity` is the side row of the key all ones (only an
// 8-byte key can be it): its key word turns from all ones to 0 when that key arrives. Every
// accumulator starts at its reduction's identity (ops_group_init writes the host's template):
// 0 for sums, the type's largest / smallest value for an integer min / max, NaN for a float
// min / max (fmin(NaN, x) = x: a NaN loses to a number, as in wm_apply and Rust's f32::min).
//
// Rows that repeat a key next to each other (a table sorted or clustered on its key: TPC-H's
// lineitem on l_orderkey) are folded in the warp first: the first lane of each run of equal
// keys (the run's head) probes once and applies the run's reduced values, so a run of r rows
// costs one probe and one atomic per column instead of r.
//
// A key that probes `max_probes` rows (the host's MAX_PROBES, or the whole table once it has
// room for every row) without finding its row or a free one sets counters[1] and its rows are
// not applied: the host sizes the table again, larger, and runs the pass over (nothing is lost,
// nothing hangs). counters[0] counts the groups.

#define OPS_EMPTY_KEY 0xffffffffffffffffull
#define OPS_NO_ROW 0xffffffffffffffffull
// A key that probes this many rows of a block's shared table goes to the global one.
#define OPS_SHARED_PROBES 64ull
#define OPS_SLOT_SALT 0x2545f4914f6cdd1dull

__device__ __forceinline__ u64 ops_load_key(const u8* keys, u32 key_bytes, u64 i) {
  return key_bytes == 8u ? ((const u64*)keys)[i] : (u64)((const u32*)keys)[i];
}

__device__ __forceinline__ u64 ops_load_value(const u8* column, u32 value_bytes, u64 i) {
  return value_bytes == 8u ? ((const u64*)column)[i] : (u64)((const u32*)column)[i];
}

// op(a, b) on two values' bits in their own width: what wm_apply32 / wm_apply64 do atomically.
__device__ __forceinline__ u64 ops_combine(u64 a, u64 b, u32 value_bytes, u32 word) {
  const u32 op = wm_reduce_of(word), kind = wm_kind_of(word);
  if (value_bytes == 4u) {
    const u32 x = (u32)a, y = (u32)b;
    if (kind == WM_NUM_FLOAT) {
      const float fx = __uint_as_float(x), fy = __uint_as_float(y);
      return (u64)__float_as_uint(op == WM_REDUCE_SUM ? fx + fy : wm_reduce_float(fx, fy, op));
    }
    if (op == WM_REDUCE_SUM) return (u64)(x + y);
    if (kind == WM_NUM_SIGNED) {
      const int sx = (int)x, sy = (int)y;
      return (u64)(u32)(op == WM_REDUCE_MIN ? min(sx, sy) : max(sx, sy));
    }
    return (u64)(op == WM_REDUCE_MIN ? min(x, y) : max(x, y));
  }
  if (kind == WM_NUM_FLOAT) {
    const double fx = __longlong_as_double((long long)a), fy = __longlong_as_double((long long)b);
    return (u64)__double_as_longlong(op == WM_REDUCE_SUM ? fx + fy : wm_reduce_double(fx, fy, op));
  }
  if (op == WM_REDUCE_SUM) return a + b;
  if (kind == WM_NUM_SIGNED) {
    const long long sx = (long long)a, sy = (long long)b;
    return (u64)(op == WM_REDUCE_MIN ? min(sx, sy) : max(sx, sy));
  }
  return op == WM_REDUCE_MIN ? min(a, b) : max(a, b);
}

// The reduction of lanes lane..=end's values into lane (the lanes of one run: end is its last
// lane). Every lane of the warp calls it together. Lane l holds op over [l, min(l + 2o - 1,
// end)] after the step of offset o, so the run's head ends with the whole run.
__device__ __forceinline__ u64 ops_run_reduce(u64 v, u32 lane, u32 end, u32 value_bytes, u32 word) {
  for (u32 o = 1; o < 32u; o <<= 1) {
    const u64 other = __shfl_down_sync(0xffffffffu, v, o);
    if (lane + o <= end) v = ops_combine(v, other, value_bytes, word);
  }
  return v;
}

// Where a table's keys start probing (linear probing from there): their hash mapped to the
// rows (scale == 0), or their place in the keys' range [lo, hi] (scale = rows / (hi - lo + 1)):
// the range map, which the host takes where the keys fill enough of their range (a primary
// key, a dense id, TPC-H's orderkey). It keeps keys that are near each other in rows near each
// other, so rows sorted or clustered on their key (a fact table on its foreign key) touch the
// table in order, not at random; the hash's spread is not needed where the keys are spread over
// their range already. A key outside [lo, hi] (a probe's) is absent (ops_find_row). If keys
// crowd a part of their range, probes grow long: the host falls back to the hash then.
struct ops_map {
  u64 lo, hi;
  double scale;
};

__device__ __forceinline__ u64 ops_home_row(u64 key, u64 capacity, const ops_map& m) {
  if (m.scale == 0.0) return __umul64hi(wm_fmix64(key ^ OPS_SLOT_SALT), capacity);
  const u64 pos = (u64)((double)(key - m.lo) * m.scale);
  return pos < capacity ? pos : capacity - 1u;
}

// The row of `key` in a table of `capacity` hashed rows (and the side row), claimed if the key
// is new (*claimed set); OPS_NO_ROW if `max_probes` rows hold other keys. `rows` may be in
// global or shared memory. A row is read first and CASed only where free (measured on the
// H200: a CAS straight away was slower even where most keys are new).
__device__ __forceinline__ u64 ops_group_row(u64* rows, u64 capacity, u32 stride, u64 max_probes,
                                             const ops_map& m, u64 key, bool* claimed) {
  if (key == OPS_EMPTY_KEY) {
    u64* side = rows + capacity * stride;
    if (*(volatile u64*)side == OPS_EMPTY_KEY) {
      *claimed = atomicCAS((unsigned long long*)side, OPS_EMPTY_KEY, 0ull) == OPS_EMPTY_KEY;
    }
    return capacity;
  }
  u64 pos = ops_home_row(key, capacity, m);
  for (u64 p = 0; p < max_probes; p++) {
    u64* slot = rows + pos * stride;
    u64 seen = *(volatile u64*)slot;
    if (seen == OPS_EMPTY_KEY) {
      seen = atomicCAS((unsigned long long*)slot, OPS_EMPTY_KEY, (unsigned long long)key);
      if (seen == OPS_EMPTY_KEY) {
        *claimed = true;
        return pos;
      }
    }
    if (seen == key) return pos;
    pos = pos + 1u == capacity ? 0u : pos + 1u;
  }
  return OPS_NO_ROW;
}

// The row of `key` in a table that is no longer written (a join's build side): OPS_NO_ROW where
// it is absent.
__device__ __forceinline__ u64 ops_find_row(const u64* __restrict__ rows, u64 capacity, u32 stride,
                                            const ops_map& m, u64 key) {
  if (key == OPS_EMPTY_KEY) return __ldg(rows + capacity * stride) != OPS_EMPTY_KEY ? capacity : OPS_NO_ROW;
  if (m.scale != 0.0 && (key < m.lo || key > m.hi)) return OPS_NO_ROW;
  u64 pos = ops_home_row(key, capacity, m);
  for (u64 p = 0; p < capacity; p++) {
    const u64 seen = __ldg(rows + pos * stride);
    if (seen == key) return pos;
    if (seen == OPS_EMPTY_KEY) return OPS_NO_ROW;
    pos = pos + 1u == capacity ? 0u : pos + 1u;
  }
  return OPS_NO_ROW;
}

// The first lane of a run of equal keys in the warp (its head), and the run's last lane: `key`
// is this lane's (any value where !valid). Every lane of the warp calls it together.
struct ops_run {
  bool head;  // this lane starts a run
  u32 heads;  // the lanes that start one
  u32 end;    // the last lane of this lane's run (meaningful at heads)
  u32 first;  // the head of this lane's run
};
__device__ __forceinline__ ops_run ops_runs(u64 key, bool valid, u32 lane) {
  ops_run r;
  const u64 prev = __shfl_up_sync(0xffffffffu, key, 1);
  r.head = valid && (lane == 0u || prev != key);
  r.heads = __ballot_sync(0xffffffffu, r.head);
  const u32 live = __ballot_sync(0xffffffffu, valid);
  const u32 later = r.heads & ~((2u << lane) - 1u);  // lane 31: 2u << 31 is 0, so none later
  r.end = later ? (u32)(__ffs(later) - 2) : (u32)(31 - __clz(live));
  const u32 upto = r.heads & ((2u << lane) - 1u);    // lane 31: every head
  r.first = upto ? (u32)(31 - __clz(upto)) : 0u;
  return r;
}

// Applies a value's bits (its width) into an accumulator word.
__device__ __forceinline__ void ops_apply(u64* acc, u64 v, u32 value_bytes, u32 word) {
  if (value_bytes == 4u) wm_apply32(reinterpret_cast<u32*>(acc), (u32)v, word);
  else wm_apply64(acc, v, word);
}

// Every accumulator of the table's rows from the template's `stride` words (rows: `words`
// words, a multiple of the stride; the stride a power of two of at least 2).
extern "C" __global__ void ops_group_init(u64* __restrict__ rows, u64 words, u32 stride,
                                          const u64* __restrict__ row_template) {
  const u64 pairs = words / 2u;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < pairs; i += (u64)gridDim.x * blockDim.x) {
    const u64 w = (2u * i) & (stride - 1u);
    reinterpret_cast<ulonglong2*>(rows)[i] = make_ulonglong2(row_template[w], row_template[w + 1u]);
  }
}

// The rows' keys and columns into the table: `columns` holds cols pointers to the columns, then
// cols mode words (kernels/common/apply.cuh: the reduction and the value's kind); with
// `count` the row count goes to word cols + 1. With `shared_rows` > 0 each block first folds
// its rows into a table of that many rows in shared memory (groups few enough to fit: every row
// of a group then costs a shared-memory atomic, not a global one; it starts from the same
// row_template as the global one; its last row is its side row) and adds that table into the
// global one at its end; a key the shared table cannot place goes to the global table. The grid
// walks whole warps of rows, so every lane reaches the shuffles.
// Column j of row i reduced over its run into the head's row (every lane calls it together).
__device__ __forceinline__ void ops_fold_column(u64 v, const ops_run& run, bool any_runs, u32 lane,
                                                u64* acc, u32 value_bytes, u32 word) {
  if (any_runs) v = ops_run_reduce(v, lane, run.end, value_bytes, word);
  if (acc) ops_apply(acc, v, value_bytes, word);
}

// Columns read before the probe, so that their loads are in flight during it.
#define OPS_PRELOAD 4u

// Row i of the first OPS_PRELOAD columns (0 past the columns or where !valid).
__device__ __forceinline__ void ops_preload(u64 (&pre)[OPS_PRELOAD], const u64* __restrict__ columns,
                                            u32 cols, u32 value_bytes, u64 i, bool valid) {
#pragma unroll
  for (u32 j = 0; j < OPS_PRELOAD; j++) {
    pre[j] = valid && j < cols ? ops_load_value((const u8*)__ldg(columns + j), value_bytes, i) : 0ull;
  }
}

// The reduce, with (SHARED) or without a block's table in shared memory: without it, every
// accumulator is known to be global, so an atomic whose result is unused compiles to a
// reduction (RED) rather than a generic ATOM.
template <bool SHARED>
__device__ __forceinline__ void ops_group_reduce_body(const u8* __restrict__ keys, u32 key_bytes, u64 n,
                                            const u64* __restrict__ columns, u32 cols,
                                            u32 value_bytes, u32 count, u64* rows, u64 capacity,
                                            u32 stride, const u64* __restrict__ row_template,
                                            u64* counters, u32 shared_rows, u64 max_probes,
                                            u64 map_lo, u64 map_hi, double map_scale) {
  const ops_map map = {map_lo, map_hi, map_scale};
  const ops_map hashed = {0ull, 0ull, 0.0};  // a block's shared table
  extern __shared__ u64 ops_shared[];
  const u32 lane = threadIdx.x & 31u;
  const u64 warp = (blockIdx.x * (u64)blockDim.x + threadIdx.x) >> 5;
  const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
  const u64 local_rows = shared_rows ? (u64)shared_rows - 1u : 0u;  // the last: the side row
  const u64 local_probes = local_rows < OPS_SHARED_PROBES ? local_rows : OPS_SHARED_PROBES;
  if (SHARED) {
    for (u32 w = threadIdx.x; w < shared_rows * stride; w += blockDim.x) {
      ops_shared[w] = __ldg(row_template + (w & (stride - 1u)));
    }
    __syncthreads();
  }
  u32 claims = 0;
  for (u64 base = warp * 32u; base < n; base += warps * 32u) {
    const u64 i = base + lane;
    const bool valid = i < n;
    const u64 key = valid ? ops_load_key(keys, key_bytes, i) : 0ull;
    u64 pre[OPS_PRELOAD];
    ops_preload(pre, columns, cols, value_bytes, i, valid);
    const ops_run run = ops_runs(key, valid, lane);
    bool claimed = false;
    u64* table = rows;
    u64 row = OPS_NO_ROW;
    if (run.head) {
      if (SHARED) {
        bool local_claim = false;
        row = ops_group_row(ops_shared, local_rows, stride, local_probes, hashed, key, &local_claim);
        if (row != OPS_NO_ROW) table = ops_shared;
      }
      if (row == OPS_NO_ROW) {
        row = ops_group_row(rows, capacity, stride, max_probes, map, key, &claimed);
        if (row == OPS_NO_ROW) atomicOr((unsigned long long*)&counters[1], 1ull);
      }
    }
    const bool any_runs = run.heads != __ballot_sync(0xffffffffu, valid);
    u64* acc = row == OPS_NO_ROW ? nullptr : table + row * stride + 1u;
#pragma unroll
    for (u32 j = 0; j < OPS_PRELOAD; j++) {
      if (j < cols) ops_fold_column(pre[j], run, any_runs, lane, acc ? acc + j : nullptr, value_bytes, (u32)__ldg(columns + cols + j));
    }
    for (u32 j = OPS_PRELOAD; j < cols; j++) {
      const u64 v = valid ? ops_load_value((const u8*)__ldg(columns + j), value_bytes, i) : 0ull;
      ops_fold_column(v, run, any_runs, lane, acc ? acc + j : nullptr, value_bytes, (u32)__ldg(columns + cols + j));
    }
    if (count && acc) {
      atomicAdd((unsigned long long*)(acc + cols), (unsigned long long)(run.end - lane + 1u));
    }
    claims += __popc(__ballot_sync(0xffffffffu, claimed));
  }
  if (SHARED) {
    // The block's groups into the global table.
    __syncthreads();
    for (u32 r = threadIdx.x; r < shared_rows; r += blockDim.x) {
      const u64* local = ops_shared + (u64)r * stride;
      const u64 marker = local[0];
      if (marker == OPS_EMPTY_KEY) continue;
      const u64 key = r == local_rows ? OPS_EMPTY_KEY : marker;
      bool claimed = false;
      const u64 row = ops_group_row(rows, capacity, stride, max_probes, map, key, &claimed);
      if (row == OPS_NO_ROW) {
        atomicOr((unsigned long long*)&counters[1], 1ull);
        continue;
      }
      if (claimed) atomicAdd((unsigned long long*)&counters[0], 1ull);
      for (u32 j = 0; j < cols; j++) {
        ops_apply(rows + row * stride + 1u + j, local[1u + j], value_bytes, (u32)__ldg(columns + cols + j));
      }
      if (count) atomicAdd((unsigned long long*)(rows + row * stride + 1u + cols), (unsigned long long)local[1u + cols]);
    }
  }
  if (lane == 0u && claims) atomicAdd((unsigned long long*)&counters[0], (unsigned long long)claims);
}

#define OPS_GROUP_REDUCE_PARAMS                                                               \
  const u8 *__restrict__ keys, u32 key_bytes, u64 n, const u64 *__restrict__ columns, u32 cols, \
      u32 value_bytes, u32 count, u64 *rows, u64 capacity, u32 stride,                          \
      const u64 *__restrict__ row_template, u64 *counters, u32 shared_rows, u64 max_probes,     \
      u64 map_lo, u64 map_hi, double map_scale
#define OPS_GROUP_REDUCE_ARGS                                                                 \
  keys, key_bytes, n, columns, cols, value_bytes, count, rows, capacity, stride, row_template,  \
      counters, shared_rows, max_probes, map_lo, map_hi, map_scale

extern "C" __global__ void ops_group_reduce(OPS_GROUP_REDUCE_PARAMS) {
  ops_group_reduce_body<false>(OPS_GROUP_REDUCE_ARGS);
}
extern "C" __global__ void ops_group_reduce_shared(OPS_GROUP_REDUCE_PARAMS) {
  ops_group_reduce_body<true>(OPS_GROUP_REDUCE_ARGS);
}

// The table's groups, packed: keys (key_bytes each), each column's aggregate (value_bytes each,
// into the arrays whose pointers `out_columns` holds) and the counts where there are. A block
// takes a tile of OPS_EMIT_ITEMS rows a thread (each warp 32 consecutive rows at a time, so the
// rows are read and the groups written coalesced), counts its groups, reserves their places
// with one atomic on *cursor (one per tile: a single counter hit once per warp is the
// bottleneck otherwise) and writes them in the rows' order within the tile.
#define OPS_EMIT_ITEMS 8u

extern "C" __global__ void ops_group_emit(const u64* __restrict__ rows, u64 capacity, u32 stride,
                                          u32 key_bytes, u32 cols, u32 value_bytes, u32 count,
                                          u8* __restrict__ out_keys,
                                          const u64* __restrict__ out_columns,
                                          u64* __restrict__ out_counts, u64* cursor) {
  __shared__ u32 warp_offset[32];
  __shared__ u64 tile_base;
  const u32 lane = threadIdx.x & 31u, wid = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const u64 total_rows = capacity + 1u;
  const u64 tile = (u64)blockDim.x * OPS_EMIT_ITEMS;
  for (u64 t0 = blockIdx.x * tile; t0 < total_rows; t0 += (u64)gridDim.x * tile) {
    const u64 w0 = t0 + (u64)wid * 32u * OPS_EMIT_ITEMS;  // this warp's first row
    u32 want[OPS_EMIT_ITEMS];
    u32 groups = 0;
#pragma unroll
    for (u32 j = 0; j < OPS_EMIT_ITEMS; j++) {
      const u64 r = w0 + j * 32u + lane;
      want[j] = __ballot_sync(0xffffffffu, r < total_rows && rows[r * stride] != OPS_EMPTY_KEY);
      groups += __popc(want[j]);
    }
    if (lane == 0u) warp_offset[wid] = groups;
    __syncthreads();
    if (threadIdx.x == 0) {
      u32 total = 0;
      for (u32 w = 0; w < nwarps; w++) {
        const u32 c = warp_offset[w];
        warp_offset[w] = total;
        total += c;
      }
      tile_base = total ? atomicAdd((unsigned long long*)cursor, (unsigned long long)total) : 0ull;
    }
    __syncthreads();
    u64 at = tile_base + warp_offset[wid];
#pragma unroll
    for (u32 j = 0; j < OPS_EMIT_ITEMS; j++) {
      if (want[j] >> lane & 1u) {
        const u64 r = w0 + j * 32u + lane;
        const u64 o = at + __popc(want[j] & ((1u << lane) - 1u));
        const u64* row = rows + r * stride;
        const u64 key = r == capacity ? OPS_EMPTY_KEY : row[0];
        if (key_bytes == 8u) ((u64*)out_keys)[o] = key;
        else ((u32*)out_keys)[o] = (u32)key;
        for (u32 c = 0; c < cols; c++) {
          u8* out = (u8*)__ldg(out_columns + c);
          if (value_bytes == 8u) ((u64*)out)[o] = row[1u + c];
          else ((u32*)out)[o] = (u32)row[1u + c];
        }
        if (count) out_counts[o] = row[1u + cols];
      }
      at += __popc(want[j]);
    }
    __syncthreads();  // warp_offset and tile_base are the next tile's
  }
}

// ---------------------------------------------------------------------------------------------
// The join table: a group table of two words a row (the key, the build row), written once by
// ops_join_build and then only read. A probe folds runs of equal keys in the warp as the group
// table does: the run's head looks the key up and its lanes take the answer by a shuffle.
//
//   ops_join_build      every build key's row claimed, its build row stored; counters[0]
//                       counts keys that were already there, counters[1] is set if a key
//                       probed max_probes rows (the host builds again with the hash)
//   ops_join_probe      found[i] and build_row[i] of every probe row, in input order
//   ops_join_probe_sum  the count of the probe rows that match and the sum of their column
//                       (4- or 8-byte integers, signed or not, summed in 64 bits with
//                       wrap-around) into totals[0] and totals[1]

extern "C" __global__ void ops_join_build(const u8* __restrict__ keys, u32 key_bytes, u64 n,
                                          u64* rows, u64 capacity, u64 max_probes, u64 map_lo,
                                          u64 map_hi, double map_scale, u64* counters) {
  const ops_map map = {map_lo, map_hi, map_scale};
  u32 repeats = 0;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    const u64 key = ops_load_key(keys, key_bytes, i);
    bool claimed = false;
    const u64 row = ops_group_row(rows, capacity, 2u, max_probes, map, key, &claimed);
    if (row == OPS_NO_ROW) atomicOr((unsigned long long*)&counters[1], 1ull);
    else if (claimed) rows[row * 2u + 1u] = i;
    else repeats++;
  }
  if (repeats) atomicAdd((unsigned long long*)&counters[0], (unsigned long long)repeats);
}

// The matches of the warp's rows: each lane's key looked up once per run (by its head).
__device__ __forceinline__ u64 ops_join_lookup(const u64* __restrict__ rows, u64 capacity,
                                               const ops_map& m, u64 key, bool valid, u32 lane,
                                               bool* found) {
  const ops_run run = ops_runs(key, valid, lane);
  u64 build_row = OPS_NO_ROW;
  if (run.head) {
    const u64 r = ops_find_row(rows, capacity, 2u, m, key);
    if (r != OPS_NO_ROW) build_row = __ldg(rows + r * 2u + 1u);
  }
  build_row = __shfl_sync(0xffffffffu, build_row, run.first);
  *found = valid && build_row != OPS_NO_ROW;
  return build_row;
}

extern "C" __global__ void ops_join_probe(const u8* __restrict__ keys, u32 key_bytes, u64 n,
                                          const u64* __restrict__ rows, u64 capacity,
                                          u64 map_lo, u64 map_hi, double map_scale,
                                          u32* __restrict__ build_row, u8* __restrict__ found) {
  const ops_map map = {map_lo, map_hi, map_scale};
  const u32 lane = threadIdx.x & 31u;
  const u64 warp = (blockIdx.x * (u64)blockDim.x + threadIdx.x) >> 5;
  const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
  for (u64 base = warp * 32u; base < n; base += warps * 32u) {
    const u64 i = base + lane;
    const bool valid = i < n;
    const u64 key = valid ? ops_load_key(keys, key_bytes, i) : 0ull;
    bool hit;
    const u64 b = ops_join_lookup(rows, capacity, map, key, valid, lane, &hit);
    if (valid) {
      found[i] = hit ? 1u : 0u;
      build_row[i] = hit ? (u32)b : 0xffffffffu;
    }
  }
}

extern "C" __global__ void ops_join_probe_sum(const u8* __restrict__ keys, u32 key_bytes, u64 n,
                                              const u8* __restrict__ column, u32 value_bytes,
                                              u32 is_signed, const u64* __restrict__ rows,
                                              u64 capacity, u64 map_lo, u64 map_hi,
                                              double map_scale, u64* totals) {
  const ops_map map = {map_lo, map_hi, map_scale};
  const u32 lane = threadIdx.x & 31u;
  const u64 warp = (blockIdx.x * (u64)blockDim.x + threadIdx.x) >> 5;
  const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
  u64 count = 0, sum = 0;
  for (u64 base = warp * 32u; base < n; base += warps * 32u) {
    const u64 i = base + lane;
    const bool valid = i < n;
    const u64 key = valid ? ops_load_key(keys, key_bytes, i) : 0ull;
    u64 v = 0;
    if (valid) {
      v = ops_load_value(column, value_bytes, i);
      if (value_bytes == 4u && is_signed) v = (u64)(i64)(int)(u32)v;
    }
    bool hit;
    ops_join_lookup(rows, capacity, map, key, valid, lane, &hit);
    if (hit) {
      count += 1u;
      sum += v;
    }
  }
  count = ops_warp_sum(count);
  sum = ops_warp_sum(sum);
  if (lane == 0u && count != 0u) {
    atomicAdd((unsigned long long*)&totals[0], (unsigned long long)count);
    atomicAdd((unsigned long long*)&totals[1], (unsigned long long)sum);
  }
}

// A HyperLogLog sketch of the keys (2^OPS_SKETCH_BITS registers, each the largest rank seen:
// the leading zeros + 1 of the hash's bits below the register's), for the host's estimate of
// the distinct keys (src/ops/device.rs: estimate_distinct) that sizes a group table, and the
// keys' smallest and largest (bounds[0], bounds[1]; all ones and 0 to start) for the range map.
// Each block keeps its registers in shared memory and raises the global ones at its end.
#define OPS_SKETCH_BITS 12
#define OPS_SKETCH_SALT 0x9e3779b97f4a7c15ull

extern "C" __global__ void ops_distinct_sketch(const u8* __restrict__ keys, u32 key_bytes, u64 n,
                                               u32* registers, u64* bounds) {
  u64 lo = OPS_EMPTY_KEY, hi = 0;
  __shared__ u32 local[1u << OPS_SKETCH_BITS];
  for (u32 r = threadIdx.x; r < (1u << OPS_SKETCH_BITS); r += blockDim.x) local[r] = 0u;
  __syncthreads();
  // Four keys a thread at a time (four loads in flight: the pass is bound by their latency).
  const u64 step = (u64)gridDim.x * blockDim.x;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += 4u * step) {
    u64 k[4];
#pragma unroll
    for (u32 j = 0; j < 4u; j++) k[j] = i + j * step < n ? ops_load_key(keys, key_bytes, i + j * step) : 0ull;
#pragma unroll
    for (u32 j = 0; j < 4u; j++) {
      if (i + j * step >= n) break;
      lo = min(lo, k[j]);
      hi = max(hi, k[j]);
      const u64 h = wm_fmix64(k[j] ^ OPS_SKETCH_SALT);
      const u32 r = (u32)(h >> (64 - OPS_SKETCH_BITS));
      const u32 rank = (u32)__clzll((h << OPS_SKETCH_BITS) | (1ull << (OPS_SKETCH_BITS - 1))) + 1u;
      if (local[r] < rank) atomicMax(&local[r], rank);
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    lo = min(lo, (u64)__shfl_down_sync(0xffffffffu, lo, o));
    hi = max(hi, (u64)__shfl_down_sync(0xffffffffu, hi, o));
  }
  if ((threadIdx.x & 31u) == 0u) {
    atomicMin((unsigned long long*)&bounds[0], (unsigned long long)lo);
    atomicMax((unsigned long long*)&bounds[1], (unsigned long long)hi);
  }
  __syncthreads();
  for (u32 r = threadIdx.x; r < (1u << OPS_SKETCH_BITS); r += blockDim.x) {
    if (local[r] > *(volatile u32*)&registers[r]) atomicMax(&registers[r], local[r]);
  }
}

// ---------------------------------------------------------------------------------------------
// A group-by of rows sorted on their key (every key's rows one run): no table. Group g is the
// g-th run; its aggregates are reduced into element g of the output arrays, which start at the
// reductions' identities (ops_fill). Rows are taken in tiles of OPS_TILE; a tile's first group
// is the runs that start before it (ops_run_heads counts them per tile, ops_scan_tiles sums).
//
//   ops_run_heads    per tile, the rows that start a run (row 0, or a key other than the row
//                    before's) into tile_heads[t]; flags[0] set if a key is smaller than the
//                    row before's (not sorted, as unsigned bits: then the host takes the table)
//   ops_scan_tiles   one block of 1024 threads: tile_heads into their exclusive offsets, in
//                    place (wm_block_exclusive_scan), and their total
//   ops_fill         n elements of `bytes` (4 or 8) set to `bits`
//   ops_sorted_reduce
//                    every row's key and columns into its group: a run within a warp folded
//                    to its first lane (ops_runs), which applies it atomically (a run that
//                    crosses warps is applied once per warp); the run's first row writes its key
#define OPS_TILE 1024u

extern "C" __global__ void ops_run_heads(const u8* __restrict__ keys, u32 key_bytes, u64 n,
                                         u64* __restrict__ tile_heads, u32* flags) {
  const u32 lane = threadIdx.x & 31u;
  const u64 warp = (blockIdx.x * (u64)blockDim.x + threadIdx.x) >> 5;
  const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
  const u64 tiles = (n + OPS_TILE - 1u) / OPS_TILE;
  bool descent = false;
  for (u64 t = warp; t < tiles; t += warps) {
    u64 heads = 0;
    for (u32 k = 0; k < OPS_TILE; k += 32u) {
      const u64 i = t * OPS_TILE + k + lane;
      if (i < n) {
        const u64 key = ops_load_key(keys, key_bytes, i);
        const u64 prev = i ? ops_load_key(keys, key_bytes, i - 1u) : key;
        heads += (i == 0 || key != prev) ? 1u : 0u;
        descent |= key < prev;
      }
    }
    heads = ops_warp_sum(heads);
    if (lane == 0u) tile_heads[t] = heads;
  }
  if (__any_sync(0xffffffffu, descent) && lane == 0u) atomicOr(&flags[0], 1u);
}

extern "C" __global__ void ops_scan_tiles(u64* __restrict__ tile_heads, u64 tiles, u64* __restrict__ total) {
  const u64 sum = wm_block_exclusive_scan<u64, 1024u>(tile_heads, tiles, [&](u64 t, u64 excl) { tile_heads[t] = excl; });
  if (threadIdx.x == 0) total[0] = sum;
}

extern "C" __global__ void ops_fill(u8* __restrict__ out, u64 n, u32 bytes, u64 bits) {
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    if (bytes == 8u) ((u64*)out)[i] = bits;
    else ((u32*)out)[i] = (u32)bits;
  }
}

extern "C" __global__ void ops_sorted_reduce(const u8* __restrict__ keys, u32 key_bytes, u64 n,
                                             const u64* __restrict__ columns, u32 cols,
                                             u32 value_bytes, u32 count,
                                             const u64* __restrict__ tile_offsets,
                                             u8* __restrict__ out_keys,
                                             const u64* __restrict__ out_columns,
                                             u64* __restrict__ out_counts) {
  const u32 lane = threadIdx.x & 31u;
  const u64 warp = (blockIdx.x * (u64)blockDim.x + threadIdx.x) >> 5;
  const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
  const u64 tiles = (n + OPS_TILE - 1u) / OPS_TILE;
  for (u64 t = warp; t < tiles; t += warps) {
    u64 group = tile_offsets[t];  // the runs that start before this warp's rows
    for (u32 k = 0; k < OPS_TILE; k += 32u) {
      const u64 i = t * OPS_TILE + k + lane;
      const bool valid = i < n;
      const u64 key = valid ? ops_load_key(keys, key_bytes, i) : 0ull;
      u64 pre[OPS_PRELOAD];
      ops_preload(pre, columns, cols, value_bytes, i, valid);
      u64 prev = __shfl_up_sync(0xffffffffu, key, 1);
      if (lane == 0u && valid && i > 0) prev = ops_load_key(keys, key_bytes, i - 1u);
      const bool starts = valid && (i == 0 || key != prev);
      const u32 starting = __ballot_sync(0xffffffffu, starts);
      // This row's group: the runs started up to and including it, less one.
      const u64 g = group + __popc(starting & ((2u << lane) - 1u)) - 1u;
      group += __popc(starting);
      const ops_run run = ops_runs(key, valid, lane);
      const bool any_runs = run.heads != __ballot_sync(0xffffffffu, valid);
      if (starts) {
        if (key_bytes == 8u) ((u64*)out_keys)[g] = key;
        else ((u32*)out_keys)[g] = (u32)key;
      }
#pragma unroll
      for (u32 j = 0; j < OPS_PRELOAD; j++) {
        if (j < cols) {
          u8* out = (u8*)__ldg(out_columns + j);
          ops_fold_column(pre[j], run, any_runs, lane, run.head ? (u64*)(out + g * value_bytes) : nullptr,
                          value_bytes, (u32)__ldg(columns + cols + j));
        }
      }
      for (u32 j = OPS_PRELOAD; j < cols; j++) {
        const u64 v = valid ? ops_load_value((const u8*)__ldg(columns + j), value_bytes, i) : 0ull;
        u8* out = (u8*)__ldg(out_columns + j);
        ops_fold_column(v, run, any_runs, lane, run.head ? (u64*)(out + g * value_bytes) : nullptr,
                        value_bytes, (u32)__ldg(columns + cols + j));
      }
      if (count && run.head) atomicAdd((unsigned long long*)(out_counts + g), (unsigned long long)(run.end - lane + 1u));
    }
  }
}
