// The in-run roofline of `warpmap bench` (src/bench/roofline.rs): what the memory system gives
// to random 8-byte accesses, the access pattern of every hash table here. Indices come from a
// hash of the operation number, so no index array is read. Grid-stride loops.

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
