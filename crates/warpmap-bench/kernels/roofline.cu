// The in-run roofline of `warpmap bench` (crates/warpmap-bench/src/harness/roofline.rs): what
// the memory system gives to random 8-byte accesses, the access pattern of every hash table here.
// Indices come from a hash of the operation number, so no index array is read. Grid-stride loops.

__device__ __forceinline__ u64 rl_index(u64 op, u64 seed, u64 n) {
  return __umul64hi(wm_fmix64(op ^ seed), n);  // uniform in [0, n)
}

// n_ops random 8-byte reads from table[0..n); each thread writes its XOR to sink[thread] so the
// loads cannot be removed.
extern "C" __global__ void roofline_gather8(const u64* table, u64 n, u64 n_ops, u64 seed, u64* sink) {
  const u64 threads = (u64)gridDim.x * blockDim.x;
  const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  u64 acc = 0;
  for (u64 op = tid; op < n_ops; op += threads) acc ^= table[rl_index(op, seed, n)];
  sink[tid] = acc;
}

// n_ops random 8-byte CAS on table[0..n).
extern "C" __global__ void roofline_cas8(u64* table, u64 n, u64 n_ops, u64 seed) {
  const u64 threads = (u64)gridDim.x * blockDim.x;
  const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  for (u64 op = tid; op < n_ops; op += threads) {
    const u64 j = rl_index(op, seed, n);
    atomicCAS(table + j, 0xffffffffffffffffull, op);
  }
}

// dst[i] = src[i] for i < n (16 bytes of traffic per element).
extern "C" __global__ void roofline_copy(const u64* src, u64* dst, u64 n) {
  const u64 threads = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += threads) dst[i] = src[i];
}

// The out-of-core bound of `warpmap bench` (roofline::measure_host_bound): random accesses of
// whole R-byte records (R = 4 * record_words, a Stadium bucket: key then value) into a buffer of
// n_records records, which the bench allocates as pinned host memory mapped into the GPU. The
// widest vector access the record's alignment allows (the buffer is page-aligned), as Stadium's
// kernels do.
__device__ __forceinline__ void rl_store_record(u32* rec, u32 words, u32 v) {
  if ((words & 3u) == 0) {
    uint4* p = reinterpret_cast<uint4*>(rec);
    for (u32 i = 0; i < words / 4; ++i) p[i] = make_uint4(v, v, v, v);
  } else if ((words & 1u) == 0) {
    uint2* p = reinterpret_cast<uint2*>(rec);
    for (u32 i = 0; i < words / 2; ++i) p[i] = make_uint2(v, v);
  } else {
    for (u32 i = 0; i < words; ++i) rec[i] = v;
  }
}

__device__ __forceinline__ u64 rl_load_record(const u32* rec, u32 words) {
  u64 acc = 0;
  if ((words & 3u) == 0) {
    const uint4* p = reinterpret_cast<const uint4*>(rec);
    for (u32 i = 0; i < words / 4; ++i) {
      const uint4 w = p[i];
      acc ^= ((u64)w.x << 32 | w.y) ^ ((u64)w.z << 32 | w.w);
    }
  } else if ((words & 1u) == 0) {
    const uint2* p = reinterpret_cast<const uint2*>(rec);
    for (u32 i = 0; i < words / 2; ++i) {
      const uint2 w = p[i];
      acc ^= (u64)w.x << 32 | w.y;
    }
  } else {
    for (u32 i = 0; i < words; ++i) acc ^= rec[i];
  }
  return acc;
}

// n_ops random record writes into buf[0 .. n_records * record_words).
extern "C" __global__ void roofline_write_records(u32* buf, u64 n_records, u32 record_words, u64 n_ops, u64 seed) {
  const u64 threads = (u64)gridDim.x * blockDim.x;
  const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  for (u64 op = tid; op < n_ops; op += threads) {
    rl_store_record(buf + rl_index(op, seed, n_records) * record_words, record_words, (u32)op);
  }
}

// n_ops random record reads from buf[0 .. n_records * record_words); each thread writes its XOR
// to sink[thread] so the loads cannot be removed.
extern "C" __global__ void roofline_read_records(const u32* buf, u64 n_records, u32 record_words, u64 n_ops, u64 seed, u64* sink) {
  const u64 threads = (u64)gridDim.x * blockDim.x;
  const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  u64 acc = 0;
  for (u64 op = tid; op < n_ops; op += threads) {
    acc ^= rl_load_record(buf + rl_index(op, seed, n_records) * record_words, record_words);
  }
  sink[tid] = acc;
}
