// Fixed-width types and the key/value types of this specialisation.
// Defines (from the host): WM_KEY_BYTES, WM_VALUE_BYTES (4 or 8). A module that does not store
// pairs may leave them unset.
typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

// A key or value as its 4-byte words: the one representation of a record's contents. Every key
// and value type of warpmap is a multiple of 4 bytes. Keys and values of 4 or 8 bytes also have
// a scalar form (u32, u64) for tables that pack them into one atomic word.
template <int N>
struct wm_words {
  u32 w[N];
};

#if defined(WM_KEY_BYTES)
#if WM_KEY_BYTES == 4
typedef u32 wm_key;
// Internal sentinels: all ones (empty slot) and all ones minus one (erased slot). User keys
// with these bit patterns live on the side path (see src/key.rs), so every key is insertable.
#define WM_KEY_EMPTY 0xffffffffu
#define WM_KEY_TOMBSTONE 0xfffffffeu
#elif WM_KEY_BYTES == 8
typedef u64 wm_key;
#define WM_KEY_EMPTY 0xffffffffffffffffull
#define WM_KEY_TOMBSTONE 0xfffffffffffffffeull
#elif WM_KEY_BYTES % 4 == 0 && WM_KEY_BYTES > 8
// A wide key: WM_KEY_BYTES / 4 words, compared word by word. No value is reserved (tables that
// store wide keys keep slot states elsewhere), so there are no sentinels.
typedef wm_words<WM_KEY_BYTES / 4> wm_key;
#define WM_KEY_WIDE 1
#else
#error "WM_KEY_BYTES must be 4, 8 or a larger multiple of 4"
#endif
#endif

#if defined(WM_VALUE_BYTES)
#if WM_VALUE_BYTES == 4
typedef u32 wm_value;
#elif WM_VALUE_BYTES == 8
typedef u64 wm_value;
#elif WM_VALUE_BYTES % 4 == 0 && WM_VALUE_BYTES > 8
typedef wm_words<WM_VALUE_BYTES / 4> wm_value;
#define WM_VALUE_WIDE 1
#else
#error "WM_VALUE_BYTES must be 4, 8 or a larger multiple of 4"
#endif
#endif

#if defined(WM_KEY_BYTES)
#define WM_KEY_WORDS (WM_KEY_BYTES / 4)
#endif
#if defined(WM_VALUE_BYTES)
#define WM_VALUE_WORDS (WM_VALUE_BYTES / 4)
#endif

// Key equality (bitwise).
#if defined(WM_KEY_WIDE)
__device__ __forceinline__ bool wm_key_eq(const wm_key& a, const wm_key& b) {
  bool eq = true;
#pragma unroll
  for (int i = 0; i < WM_KEY_BYTES / 4; i++) eq &= a.w[i] == b.w[i];
  return eq;
}
#elif defined(WM_KEY_BYTES)
__device__ __forceinline__ bool wm_key_eq(wm_key a, wm_key b) { return a == b; }
#endif

// Which side-path slot a sentinel-valued user key uses (0 or 1), or -1 for an ordinary key.
#if defined(WM_KEY_WIDE)
__device__ __forceinline__ int wm_side_slot(const wm_key&) { return -1; }
#elif defined(WM_KEY_BYTES)
__device__ __forceinline__ int wm_side_slot(wm_key k) {
  return k == WM_KEY_EMPTY ? 0 : (k == WM_KEY_TOMBSTONE ? 1 : -1);
}
#endif

// A {key, value} pair of equal widths (4 or 8 bytes each), key first, as one naturally aligned
// 8- or 16-byte word: how a slack split may lay out its output (src/table/engine/multisplit.rs
// `SlackLayout::Pairs`), so that its scatter stages and writes a pair in one access and an
// ordered insert reads it in one (wm_batch_item, bulk.cuh). Host twin: `SlackLayout::serves`.
#if defined(WM_KEY_BYTES) && defined(WM_VALUE_BYTES) && WM_KEY_BYTES == WM_VALUE_BYTES && \
    (WM_KEY_BYTES == 4 || WM_KEY_BYTES == 8)
#define WM_HAS_PAIRS 1
#if WM_KEY_BYTES == 4
typedef u64 wm_pair;  // the key in the low half (the packed slot's layout: warpdrive.cu)
__device__ __forceinline__ wm_pair wm_make_pair(wm_key k, wm_value v) { return (u64)k | ((u64)v << 32); }
__device__ __forceinline__ wm_key wm_pair_key(wm_pair p) { return (u32)p; }
__device__ __forceinline__ wm_value wm_pair_value(wm_pair p) { return (u32)(p >> 32); }
#else
typedef ulonglong2 wm_pair;
__device__ __forceinline__ wm_pair wm_make_pair(wm_key k, wm_value v) { return make_ulonglong2(k, v); }
__device__ __forceinline__ wm_key wm_pair_key(wm_pair p) { return p.x; }
__device__ __forceinline__ wm_value wm_pair_value(wm_pair p) { return p.y; }
#endif
#endif
