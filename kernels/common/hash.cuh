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

// Thomas Mueller's 32-bit integer hash (the WarpDrive paper's second hash function).
__device__ __forceinline__ u32 wm_mueller32(u32 x) {
  x = ((x >> 16) ^ x) * 0x45d9f3bu;
  x = ((x >> 16) ^ x) * 0x45d9f3bu;
  return (x >> 16) ^ x;
}

// Mueller's 64-bit variant (the same answer's: the SplitMix64 finaliser constants).
__device__ __forceinline__ u64 wm_mueller64(u64 x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The hash functions a table may choose (WM_HASH; src/hash.rs `HashFunction` mirrors these).
#define WM_HASH_MURMUR 0
#define WM_HASH_MUELLER 1

// Two 32-bit hashes of a key: h.x picks the first window, h.y the double-hashing step.
// 4-byte keys use the paper's 4-byte functions on two translated inputs (k + seed, k + seed');
// both functions are bijections on u32, so translation keeps their properties (paper §V-A).
// 8-byte keys use the 64-bit function once and split its result.
template <int HASH, int KEY_BYTES>
__device__ __forceinline__ uint2 wm_hash_pair(u64 bits, u64 seed) {
  if (KEY_BYTES == 4) {
    const u32 k = (u32)bits, s0 = (u32)seed, s1 = (u32)(seed >> 32);
    if (HASH == WM_HASH_MUELLER) return make_uint2(wm_mueller32(k + s0), wm_mueller32(k + s1));
    return make_uint2(wm_fmix32(k + s0), wm_fmix32(k + s1));
  }
  const u64 h = (HASH == WM_HASH_MUELLER) ? wm_mueller64(bits ^ seed) : wm_fmix64(bits ^ seed);
  return make_uint2((u32)h, (u32)(h >> 32));
}

// A 64-bit hash of WORDS 32-bit words (a key wider than 8 bytes): the chosen 64-bit function
// chained over 8-byte chunks (the last one zero-padded), so every word affects every bit.
template <int HASH, int WORDS>
__device__ __forceinline__ u64 wm_hash_words(const u32* w, u64 seed) {
  u64 h = seed ^ (0x9e3779b97f4a7c15ull * (u64)WORDS);
#pragma unroll
  for (int i = 0; i < WORDS; i += 2) {
    const u64 chunk = (u64)w[i] | (i + 1 < WORDS ? (u64)w[i + 1] << 32 : 0ull);
    h = (HASH == WM_HASH_MUELLER ? wm_mueller64(h ^ chunk) : wm_fmix64(h ^ chunk)) + 0x9e3779b97f4a7c15ull;
  }
  return h;
}

// The two 32-bit hashes of a key given as N words (wm_words): keys of 1 or 2 words through
// wm_hash_pair (the paper's functions), wider ones through wm_hash_words. Every table hashes its
// keys with this (or wm_hash_key below, the same hash of a key's scalar or word form).
template <int HASH, int N>
__device__ __forceinline__ uint2 wm_hash_key_words(const u32* w, u64 seed) {
  if (N <= 2) return wm_hash_pair<HASH, 4 * N>((u64)w[0] | (N == 2 ? (u64)w[N - 1] << 32 : 0ull), seed);
  const u64 h = wm_hash_words<HASH, N>(w, seed);
  return make_uint2((u32)h, (u32)(h >> 32));
}
#if defined(WM_KEY_WIDE)
template <int HASH>
__device__ __forceinline__ uint2 wm_hash_key(const wm_key& k, u64 seed) {
  return wm_hash_key_words<HASH, WM_KEY_WORDS>(k.w, seed);
}
#elif defined(WM_KEY_BYTES)
template <int HASH>
__device__ __forceinline__ uint2 wm_hash_key(wm_key k, u64 seed) {
  return wm_hash_pair<HASH, WM_KEY_BYTES>((u64)k, seed);
}
#endif

// A third hash of a key's two hashes, independent of the position and step drawn from them
// (their high bits): fingerprints and info bits. `salt` tells the uses apart.
__device__ __forceinline__ u32 wm_hash_third(uint2 h, u64 salt) { return (u32)wm_fmix64(((u64)h.y << 32 | h.x) ^ salt); }

// Maps a 32-bit hash onto [0, n) without a division: (h * n) >> 32.
__device__ __forceinline__ u32 wm_map_to_range(u32 h, u32 n) { return __umulhi(h, n); }
