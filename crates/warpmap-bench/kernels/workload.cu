// Device-side workloads of `warpmap outofcore`
// (crates/warpmap-bench/src/experiments/stadium_outofcore.rs): u64 keys from keygen's injective
// sequence, values derived from the keys, and the verification of lookups, so that a table of
// hundreds of millions of keys is built and checked without host traffic. Host twins:
// keygen::key_at::<u64> (keys) and stadium_outofcore::value_word (values). Grid-stride loops.

#define WL_VALUE_SALT 0x5bd1e995c2b2ae35ull

// Key j of a batch: fmix64((first + j) ^ mask), mask = keygen's mix of the seed (injective).
extern "C" __global__ void wl_keys_seq(u64* keys, u64 first, u64 n, u64 mask) {
  const u64 threads = (u64)gridDim.x * blockDim.x;
  for (u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += threads) {
    keys[j] = wm_fmix64((first + j) ^ mask);
  }
}

// Present keys: key j is the sequence's key at an index drawn uniformly from [0, range) by a
// hash of (j, qseed) (with replacement).
extern "C" __global__ void wl_keys_sampled(u64* keys, u64 n, u64 range, u64 qseed, u64 mask) {
  const u64 threads = (u64)gridDim.x * blockDim.x;
  for (u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += threads) {
    const u64 i = __umul64hi(wm_fmix64(j ^ qseed), range);
    keys[j] = wm_fmix64(i ^ mask);
  }
}

__device__ __forceinline__ u32 wl_value_word(u64 key, u32 w) {
  return (u32)(wm_fmix64(key ^ WL_VALUE_SALT ^ ((u64)w * 0x9e3779b97f4a7c15ull)) >> 16);
}

// values[j * value_words + w] = wl_value_word(keys[j], w): one word per thread, coalesced.
extern "C" __global__ void wl_values(const u64* keys, u32* values, u64 n, u32 value_words) {
  const u64 threads = (u64)gridDim.x * blockDim.x;
  const u64 total = n * value_words;
  for (u64 e = (u64)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += threads) {
    const u64 j = e / value_words;
    const u32 w = (u32)(e - j * value_words);
    values[e] = wl_value_word(keys[j], w);
  }
}

// Checks a lookup: bad[0] counts keys whose found flag is not expect_found, bad[1] found keys
// whose value is not the key's value (only when values is not null).
extern "C" __global__ void wl_verify(const u64* keys, const u32* values, const u8* found, u64 n,
                                     u32 value_words, u32 expect_found, u64* bad) {
  const u64 threads = (u64)gridDim.x * blockDim.x;
  u64 wrong_found = 0, wrong_value = 0;
  for (u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += threads) {
    const u32 f = found[j] != 0;
    if (f != expect_found) ++wrong_found;
    if (f && values != 0) {
      const u64 k = keys[j];
      for (u32 w = 0; w < value_words; ++w) {
        if (values[j * value_words + w] != wl_value_word(k, w)) {
          ++wrong_value;
          break;
        }
      }
    }
  }
  if (wrong_found) atomicAdd(bad, wrong_found);
  if (wrong_value) atomicAdd(bad + 1, wrong_value);
}

// dst[j] = src[first + j] for j < n, in 32-bit words (elements of any width that is a multiple of
// 4 bytes): a range of one device buffer into another (the slab benchmark's Fig. 6 rebuilds
// copy the keys so far out of the run's key buffer).
extern "C" __global__ void wl_copy_words(const u32* src, u32* dst, u64 first, u64 n) {
  const u64 threads = (u64)gridDim.x * blockDim.x;
  for (u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += threads) {
    dst[j] = src[first + j];
  }
}
