// Peer adapter: warpcore::SingleValueHashTable with the library's default template parameters
// (the table warpcore's single_value_benchmark measures), over its bulk host API:
//   insert(keys_in, values_in, num_in, stream)   -- per-key status: none (default ReturnNothing)
//   retrieve(keys_in, num_in, values_out, stream) -- per-key status: none
// Our code; the library files under lib/ are used as they are (see README.txt).
#include <cstdint>
#include <type_traits>
#include <single_value_hash_table.cuh>
#include "harness.cuh"

// warpcore accepts only std::uint32_t / std::uint64_t keys (checks::is_valid_key_type, and the
// MurmurHash overloads); on Linux std::uint64_t is `unsigned long`, the harness uses
// `unsigned long long`: same size and representation, so the adapter passes the buffers on as
// std::uint64_t (a pointer cast, no copy).
template <class T> struct wc_type {
  using type = typename std::conditional<sizeof(T) == 4, std::uint32_t, std::uint64_t>::type;
};

template <class K, class V> struct WarpcoreSingleValue {
  using WK = typename wc_type<K>::type;
  using WV = typename wc_type<V>::type;
  // Defaults: EmptyKey = 0, TombstoneKey = ~0, ProbingScheme = DoubleHashing<MurmurHash, MurmurHash,
  // CG size 8>, TableStorage = AoSStore<K, V>, TempMemoryBytes = 2048. (Its benchmark spells out
  // the same types explicitly.)
  using table_t = warpcore::SingleValueHashTable<WK, WV>;
  static_assert(sizeof(WK) == sizeof(K) && sizeof(WV) == sizeof(V), "type mapping");

  table_t table;

  static const char* name() { return "warpcore-sv"; }
  __host__ __device__ static bool reserved_key(K k) {
    return k == (K)warpcore::defaults::empty_key<WK>() ||
           k == (K)warpcore::defaults::tombstone_key<WK>();
  }
  // retrieve() leaves values_out untouched for a missing key, so find() pre-fills out with
  // miss_value(); that value must never be a stored value.
  __host__ __device__ static bool reserved_value(V v) { return v == (V)~V(0); }
  static V miss_value() { return (V)~V(0); }

  // The constructor allocates the table (capacity = smallest listed prime >= ceil(c / 8), times 8)
  // and initializes it (fills keys with the empty key, synchronizes).
  explicit WarpcoreSingleValue(size_t capacity) : table((warpcore::index_t)capacity) {}
  size_t capacity() const { return (size_t)table.capacity(); }

  void insert(const K* keys, const V* vals, size_t n, cudaStream_t s) {
    table.insert(reinterpret_cast<const WK*>(keys), reinterpret_cast<const WV*>(vals),
                 (warpcore::index_t)n, s);
  }
  void find(const K* keys, V* out, size_t n, cudaStream_t s) {
    // miss_value() = ~0 has every byte 0xFF, so a plain memset fills out with it (about 1% of a
    // find's time; counted in the measured find, as it is needed for the miss result).
    cudaMemsetAsync(out, 0xFF, n * sizeof(V), s);
    table.retrieve(reinterpret_cast<const WK*>(keys), (warpcore::index_t)n,
                   reinterpret_cast<WV*>(out), s);
  }
};

int main(int argc, char** argv) { return peer_main<WarpcoreSingleValue>(argc, argv); }
