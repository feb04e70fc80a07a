// Hash functions. Host twins live in src/hash.rs (the CPU backend and tests use them).

// MurmurHash3's 64-bit finaliser: a bijection with good avalanche.
__device__ __forceinline__ u64 wm_fmix64(u64 k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

// MurmurHash3's 32-bit finaliser.
__device__ __forceinline__ u32 wm_fmix32(u32 h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

__device__ __forceinline__ u64 wm_hash_key(u64 bits, u64 seed) { return wm_fmix64(bits ^ seed); }

// Maps a 32-bit hash onto [0, n) without a division: (h * n) >> 32.
__device__ __forceinline__ u32 wm_map_to_range(u32 h, u32 n) { return __umulhi(h, n); }
