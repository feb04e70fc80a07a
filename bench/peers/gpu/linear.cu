// Harness self-test: a plain one-thread-a-key linear-probing table (our own code), the issue's probe shape.
#include "harness.cuh"
template <class K, class V> struct Slot { K k; V v; };
template <class K, class V>
__global__ void lp_insert(Slot<K, V>* t, size_t cap, const K* keys, const V* vals, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i >= n) return;
  K k = keys[i]; size_t h = (size_t)peer_fmix64((uint64_t)k) % cap;
  for (size_t p = 0; p < cap; ++p) {
    K old = atomicCAS(&t[h].k, (K)~K(0), k);
    if (old == (K)~K(0) || old == k) { t[h].v = vals[i]; return; }
    h = h + 1 == cap ? 0 : h + 1;
  }
}
template <class K, class V>
__global__ void lp_find(const Slot<K, V>* t, size_t cap, const K* keys, V* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; if (i >= n) return;
  K k = keys[i]; size_t h = (size_t)peer_fmix64((uint64_t)k) % cap;
  for (size_t p = 0; p < cap; ++p) {
    K s = t[h].k; if (s == k) { out[i] = t[h].v; return; } if (s == (K)~K(0)) { out[i] = (V)~V(0); return; }
    h = h + 1 == cap ? 0 : h + 1;
  }
  out[i] = (V)~V(0);
}
template <class K, class V> struct LinearProbe {
  using S = Slot<K, V>; S* t; size_t cap;
  static const char* name() { return "selftest-linear"; }
  __host__ __device__ static bool reserved_key(K k) { return k == (K)~K(0); }
  __host__ __device__ static bool reserved_value(V v) { return v == (V)~V(0); }
  static V miss_value() { return (V)~V(0); }
  explicit LinearProbe(size_t c) : cap(c) { PEER_CK(cudaMalloc(&t, c * sizeof(S))); PEER_CK(cudaMemset(t, 0xff, c * sizeof(S))); }
  ~LinearProbe() { cudaFree(t); }
  size_t capacity() const { return cap; }
  void insert(const K* k, const V* v, size_t n, cudaStream_t s) { lp_insert<<<(n + 255) / 256, 256, 0, s>>>(t, cap, k, v, n); }
  void find(const K* k, V* o, size_t n, cudaStream_t s) { lp_find<<<(n + 255) / 256, 256, 0, s>>>(t, cap, k, o, n); }
};
int main(int argc, char** argv) { return peer_main<LinearProbe>(argc, argv); }
