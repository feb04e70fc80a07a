// Peer adapter: cuCollections cuco::static_map<K, V> with the library's default template
// parameters, driven like cuco's own benchmarks/hash_table/static_map/{insert,find}_bench.cu:
//   map{capacity, cuco::empty_key<K>{-1}, cuco::empty_value<V>{-1}}  (sentinels -1 = all ones)
//   map.insert_async(pairs_begin, pairs_end, stream)
//   map.find_async(keys_begin, keys_end, out_begin, stream)   (writes empty_value for a miss)
// The pairs are fed through a thrust transform iterator that builds cuco::pair<K, V>{keys[i],
// vals[i]} on the fly from the harness's key and value arrays (no copy, no extra pass; cuco's
// benchmark materializes a pair array before timing, which our SoA inputs don't have).
#include "harness.cuh"

#include <cuco/static_map.cuh>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cstddef>
#include <memory>

template <class K, class V>
struct cuco_make_pair {
  const K* keys;
  const V* vals;
  __host__ __device__ cuco::pair<K, V> operator()(std::size_t i) const
  {
    return cuco::pair<K, V>{keys[i], vals[i]};
  }
};

template <class K, class V>
struct CucoStaticMap {
  // All defaults: Extent = cuco::extent<std::size_t>, thread_scope_device,
  // cuda::std::equal_to<K>, cuco::linear_probing<4, cuco::default_hash_function<K>>
  // (= xxhash_32<K>), cuco::cuda_allocator, cuco::storage<1>.
  using map_type = cuco::static_map<K, V>;

  static constexpr K kEmptyKey   = static_cast<K>(-1);
  static constexpr V kEmptyValue = static_cast<V>(-1);

  std::unique_ptr<map_type> map;

  static const char* name() { return "cuco-static_map"; }
  // empty key sentinel (the erased key defaults to it: this constructor sets none of its own)
  __host__ __device__ static bool reserved_key(K k) { return k == static_cast<K>(-1); }
  // empty value sentinel (cuco reserves it; find writes it for a missing key)
  __host__ __device__ static bool reserved_value(V v) { return v == static_cast<V>(-1); }
  static V miss_value() { return kEmptyValue; }

  explicit CucoStaticMap(std::size_t capacity)
    : map(std::make_unique<map_type>(
        capacity, cuco::empty_key<K>{kEmptyKey}, cuco::empty_value<V>{kEmptyValue}))
  {
  }

  std::size_t capacity() const { return static_cast<std::size_t>(map->capacity()); }

  void insert(const K* keys, const V* vals, std::size_t n, cudaStream_t s)
  {
    auto pairs = thrust::make_transform_iterator(thrust::counting_iterator<std::size_t>(0),
                                                 cuco_make_pair<K, V>{keys, vals});
    map->insert_async(pairs, pairs + n, cuda::stream_ref{s});
  }

  void find(const K* keys, V* out, std::size_t n, cudaStream_t s)
  {
    map->find_async(keys, keys + n, out, cuda::stream_ref{s});
  }
};

int main(int argc, char** argv) { return peer_main<CucoStaticMap>(argc, argv); }
