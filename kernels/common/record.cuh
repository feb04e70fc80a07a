// Records: keys and values as 4-byte words (every key and value type of warpmap is a multiple of
// 4 bytes), copied in the widest vector accesses their alignment allows. A 128-byte value is 8
// accesses of 16 bytes, not 32 of 4 (what a plain struct copy of u32 words compiles to):
// measured on Stadium's Fig. 19, wide-value finds 2.3-2.5x faster.

// The widest vector (4, 2 or 1 words) that divides both n (words) and a (alignment in words).
__host__ __device__ constexpr int wm_vec(int n, int a) {
  return (n % 4 == 0 && a % 4 == 0) ? 4 : ((n % 2 == 0 && a % 2 == 0) ? 2 : 1);
}

// Loads N words from p (aligned to VEC words) in VEC-word accesses. `coherent`: from L2, not L1
// (other SMs write the table during the same launch).
template <int N, int VEC, bool coherent>
__device__ __forceinline__ void wm_load_words(const u32* p, u32* dst) {
#pragma unroll
  for (int i = 0; i < N; i += VEC) {
    if (VEC == 4) {
      const uint4 v = coherent ? __ldcg(reinterpret_cast<const uint4*>(p + i)) : *reinterpret_cast<const uint4*>(p + i);
      dst[i] = v.x, dst[i + 1] = v.y, dst[i + 2] = v.z, dst[i + 3] = v.w;
    } else if (VEC == 2) {
      const uint2 v = coherent ? __ldcg(reinterpret_cast<const uint2*>(p + i)) : *reinterpret_cast<const uint2*>(p + i);
      dst[i] = v.x, dst[i + 1] = v.y;
    } else {
      dst[i] = coherent ? __ldcg(p + i) : p[i];
    }
  }
}

// Stores N words to p (aligned to VEC words) in VEC-word accesses.
template <int N, int VEC>
__device__ __forceinline__ void wm_store_words(u32* p, const u32* src) {
#pragma unroll
  for (int i = 0; i < N; i += VEC) {
    if (VEC == 4) {
      *reinterpret_cast<uint4*>(p + i) = make_uint4(src[i], src[i + 1], src[i + 2], src[i + 3]);
    } else if (VEC == 2) {
      *reinterpret_cast<uint2*>(p + i) = make_uint2(src[i], src[i + 1]);
    } else {
      p[i] = src[i];
    }
  }
}

// Element i of an array of T (wm_words<N> or a 4- or 8-byte scalar) that starts at a 16-byte
// boundary: it is aligned to the widest vector dividing its width, and copied in such vectors.
// (Device allocations start at 256-byte boundaries; tables place their arrays at 16.)
template <typename T, bool coherent = false>
__device__ __forceinline__ T wm_load_elem(const T* a, u64 i) {
  constexpr int N = sizeof(T) / 4;
  static_assert(sizeof(T) % 4 == 0, "records are whole 4-byte words");
  T r;
  wm_load_words<N, wm_vec(N, N), coherent>(reinterpret_cast<const u32*>(a + i), reinterpret_cast<u32*>(&r));
  return r;
}
template <typename T>
__device__ __forceinline__ void wm_store_elem(T* a, u64 i, const T& v) {
  constexpr int N = sizeof(T) / 4;
  wm_store_words<N, wm_vec(N, N)>(reinterpret_cast<u32*>(a + i), reinterpret_cast<const u32*>(&v));
}
// Copies element i of src to element j of dst (arrays of T starting at 16-byte boundaries) in
// the widest vectors, a few at a time, without holding the whole element in registers: a
// 256-byte value loaded whole takes 64 registers, and a kernel that only sometimes copies one
// (a find on a hit) would pay for them in occupancy on every key (measured: WarpDrive's find
// went from 30 to 78 registers and its misses ran at half speed).
template <typename T>
__device__ __forceinline__ void wm_copy_elem(T* dst, u64 j, const T* src, u64 i) {
  constexpr int N = sizeof(T) / 4;
  constexpr int VEC = wm_vec(N, N);
  const u32* s = reinterpret_cast<const u32*>(src + i);
  u32* d = reinterpret_cast<u32*>(dst + j);
#pragma unroll 2
  for (int w = 0; w < N; w += VEC) {
    u32 chunk[VEC];
    wm_load_words<VEC, VEC, false>(s + w, chunk);
    wm_store_words<VEC, VEC>(d + w, chunk);
  }
}

// The scalar forms load and store as themselves (one access).
template <>
__device__ __forceinline__ u32 wm_load_elem<u32, false>(const u32* a, u64 i) { return a[i]; }
template <>
__device__ __forceinline__ u32 wm_load_elem<u32, true>(const u32* a, u64 i) { return __ldcg(a + i); }
template <>
__device__ __forceinline__ u64 wm_load_elem<u64, false>(const u64* a, u64 i) { return a[i]; }
template <>
__device__ __forceinline__ u64 wm_load_elem<u64, true>(const u64* a, u64 i) { return __ldcg(a + i); }
template <>
__device__ __forceinline__ void wm_store_elem<u32>(u32* a, u64 i, const u32& v) { a[i] = v; }
template <>
__device__ __forceinline__ void wm_store_elem<u64>(u64* a, u64 i, const u64& v) { a[i] = v; }
