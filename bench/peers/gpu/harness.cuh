// Peer benchmark harness (our own code; the peers' libraries are used as they are).
// It measures a peer table the way warpmap's `--preset compare` measures WarpDrive:
// n = 2^27 unique keys (fmix of an index, as warpmap's keygen), u32->u32 and u64->u64, loads
// 0.5 / 0.8 / 0.9 / 0.95 (capacity = n / load, as the peer rounds it), a fresh table per run,
// one warm-up run then the median of 5 timed runs (CUDA events around the one bulk call), and
// every run verified on the device: each find_hit returns its key's value, each find_miss
// returns "not found".
//
// A peer is an Adapter type:
//   struct Adapter<K, V> {
//     static const char* name();
//     static bool reserved_key(K k);       // keys the peer cannot store (its sentinels)
//     static bool reserved_value(V v);     // values the peer cannot store
//     explicit Adapter(size_t capacity);   // a table of (at least) `capacity` slots
//     size_t capacity() const;             // slots it really has
//     void insert(const K* keys, const V* vals, size_t n, cudaStream_t s);
//     void find(const K* keys, V* out, size_t n, cudaStream_t s);  // out[i] = value or miss_value()
//     static V miss_value();
//   };
// Output, a line per cell:  peer NAME TYPE LOAD OP Gops/s median_ms runs verified actual_load
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <cuda_runtime.h>

#define PEER_CK(x) peer_check((x), #x, __FILE__, __LINE__)
inline void peer_check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e), file, line, what);
    std::exit(2);
  }
}

__host__ __device__ inline uint32_t peer_fmix32(uint32_t h) {
  h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16; return h;
}
__host__ __device__ inline uint64_t peer_fmix64(uint64_t k) {
  k ^= k >> 33; k *= 0xff51afd7ed558ccdull; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ull; k ^= k >> 33;
  return k;
}
template <class K> __host__ __device__ inline K peer_key_of(uint64_t i, uint64_t mask) {
  if (sizeof(K) == 4) return (K)peer_fmix32((uint32_t)(i ^ mask));
  return (K)peer_fmix64(i ^ mask);
}
template <class K, class V> __host__ __device__ inline V peer_value_of(K k) {
  return (V)peer_fmix64((uint64_t)k ^ 0x5bd1e995c2b2ae35ull);
}

// Keys for indices [first, first + n). A key the peer reserves is replaced by the key of an index
// from a spare range (4n + i, 5n + i, ...), which no other set uses, so keys stay distinct.
template <class K, class V, class A>
__global__ void peer_gen(K* keys, V* vals, uint64_t first, uint64_t n, uint64_t mask, uint64_t spare) {
  uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint64_t idx = first + i;
  K k = peer_key_of<K>(idx, mask);
  for (uint64_t round = 0; A::reserved_key(k) || A::reserved_value(peer_value_of<K, V>(k)); ++round)
    k = peer_key_of<K>(spare + round * n + i, mask);
  keys[i] = k;
  if (vals) vals[i] = peer_value_of<K, V>(k);
}

template <class K, class V>
__global__ void peer_verify(const K* keys, const V* got, uint64_t n, bool hits, V miss,
                            unsigned long long* bad) {
  uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  V want = hits ? peer_value_of<K, V>(keys[i]) : miss;
  if (got[i] != want) atomicAdd(bad, 1ull);
}

struct PeerCell { double gops = 0, median_ms = 0; bool verified = true; };

inline double peer_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

template <template <class, class> class Adapter, class K, class V>
void peer_run_type(const char* type, uint64_t n, const std::vector<double>& loads, int runs) {
  using A = Adapter<K, V>;
  K *keys, *miss; V *vals, *out; unsigned long long* bad;
  PEER_CK(cudaMalloc(&keys, n * sizeof(K)));
  PEER_CK(cudaMalloc(&miss, n * sizeof(K)));
  PEER_CK(cudaMalloc(&vals, n * sizeof(V)));
  PEER_CK(cudaMalloc(&out, n * sizeof(V)));
  PEER_CK(cudaMalloc(&bad, sizeof(unsigned long long)));
  cudaStream_t s; PEER_CK(cudaStreamCreate(&s));
  cudaEvent_t e0, e1; PEER_CK(cudaEventCreate(&e0)); PEER_CK(cudaEventCreate(&e1));
  unsigned blocks = (unsigned)((n + 255) / 256);
  for (size_t li = 0; li < loads.size(); ++li) {
    double lf = loads[li];
    std::vector<double> t_ins, t_hit, t_miss;
    bool ok_ins = true, ok_hit = true, ok_miss = true;
    double actual = 0;
    for (int r = 0; r < runs + 1; ++r) {  // run 0 warms up
      uint64_t mask = peer_fmix64(0x2545f4914f6cdd1dull ^ (li * 131 + r + 1) ^ sizeof(K));
      peer_gen<K, V, A><<<blocks, 256, 0, s>>>(keys, vals, 0, n, mask, 4 * n);
      peer_gen<K, V, A><<<blocks, 256, 0, s>>>(miss, (V*)nullptr, n, n, mask, 4 * n + 8 * n);
      PEER_CK(cudaGetLastError());
      PEER_CK(cudaStreamSynchronize(s));
      size_t cap = (size_t)((double)n / lf);
      float ms = 0;
      unsigned long long nbad = 0;
      {
        A table(cap);
        actual = (double)n / (double)table.capacity();
        PEER_CK(cudaDeviceSynchronize());
        PEER_CK(cudaEventRecord(e0, s));
        table.insert(keys, vals, n, s);
        PEER_CK(cudaEventRecord(e1, s));
        PEER_CK(cudaEventSynchronize(e1));
        PEER_CK(cudaGetLastError());
        PEER_CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r) t_ins.push_back(ms);

        PEER_CK(cudaMemsetAsync(out, 0, n * sizeof(V), s));
        PEER_CK(cudaStreamSynchronize(s));
        PEER_CK(cudaEventRecord(e0, s));
        table.find(keys, out, n, s);
        PEER_CK(cudaEventRecord(e1, s));
        PEER_CK(cudaEventSynchronize(e1));
        PEER_CK(cudaGetLastError());
        PEER_CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r) t_hit.push_back(ms);
        PEER_CK(cudaMemsetAsync(bad, 0, sizeof(*bad), s));
        peer_verify<K, V><<<blocks, 256, 0, s>>>(keys, out, n, true, A::miss_value(), bad);
        PEER_CK(cudaMemcpyAsync(&nbad, bad, sizeof(nbad), cudaMemcpyDeviceToHost, s));
        PEER_CK(cudaStreamSynchronize(s));
        // A find_hit miss means the insert lost the key (or the find failed): both fail.
        if (nbad) { ok_ins = false; ok_hit = false;
          std::fprintf(stderr, "%s %s lf %.2f run %d: %llu of %llu hits wrong\n", A::name(), type, lf, r, nbad, (unsigned long long)n); }

        PEER_CK(cudaMemsetAsync(out, 0, n * sizeof(V), s));
        PEER_CK(cudaStreamSynchronize(s));
        PEER_CK(cudaEventRecord(e0, s));
        table.find(miss, out, n, s);
        PEER_CK(cudaEventRecord(e1, s));
        PEER_CK(cudaEventSynchronize(e1));
        PEER_CK(cudaGetLastError());
        PEER_CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r) t_miss.push_back(ms);
        PEER_CK(cudaMemsetAsync(bad, 0, sizeof(*bad), s));
        peer_verify<K, V><<<blocks, 256, 0, s>>>(miss, out, n, false, A::miss_value(), bad);
        PEER_CK(cudaMemcpyAsync(&nbad, bad, sizeof(nbad), cudaMemcpyDeviceToHost, s));
        PEER_CK(cudaStreamSynchronize(s));
        if (nbad) { ok_miss = false;
          std::fprintf(stderr, "%s %s lf %.2f run %d: %llu of %llu misses wrong\n", A::name(), type, lf, r, nbad, (unsigned long long)n); }
      }
      PEER_CK(cudaDeviceSynchronize());
    }
    const char* ops[3] = {"insert", "find_hit", "find_miss"};
    std::vector<double>* ts[3] = {&t_ins, &t_hit, &t_miss};
    bool oks[3] = {ok_ins, ok_hit, ok_miss};
    for (int o = 0; o < 3; ++o) {
      double med = peer_median(*ts[o]);
      std::printf("peer %s %s %.2f %s %.3f %.4f %d %s %.4f\n", A::name(), type, lf, ops[o],
                  (double)n / (med * 1e-3) / 1e9, med, runs, oks[o] ? "verified" : "FAILED", actual);
      std::fflush(stdout);
    }
  }
  cudaFree(keys); cudaFree(miss); cudaFree(vals); cudaFree(out); cudaFree(bad);
  cudaEventDestroy(e0); cudaEventDestroy(e1); cudaStreamDestroy(s);
}

// Arguments: [log2 n = 27] [runs = 5] [types = u32,u64] [loads = 0.5,0.8,0.9,0.95]
template <template <class, class> class Adapter>
int peer_main(int argc, char** argv) {
  int logn = argc > 1 ? std::atoi(argv[1]) : 27;
  int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  std::string types = argc > 3 ? argv[3] : "u32,u64";
  std::vector<double> loads;
  {
    std::string l = argc > 4 ? argv[4] : "0.5,0.8,0.9,0.95";
    size_t p = 0;
    while (p < l.size()) { size_t q = l.find(',', p); if (q == std::string::npos) q = l.size();
      loads.push_back(std::atof(l.substr(p, q - p).c_str())); p = q + 1; }
  }
  cudaDeviceProp prop; PEER_CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# device %s, n = 2^%d, %d runs (median) after a warm-up, CUDA events\n", prop.name, logn, runs);
  uint64_t n = 1ull << logn;
  if (types.find("u32") != std::string::npos) peer_run_type<Adapter, unsigned int, unsigned int>("u32", n, loads, runs);
  if (types.find("u64") != std::string::npos) peer_run_type<Adapter, unsigned long long, unsigned long long>("u64", n, loads, runs);
  return 0;
}
