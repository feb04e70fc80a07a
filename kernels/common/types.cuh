// Fixed-width types and the key/value types of this specialisation.
// Defines (from the host): WM_KEY_BYTES, WM_VALUE_BYTES (4 or 8). A module that does not store
// pairs may leave them unset.
typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

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
#else
#error "WM_KEY_BYTES must be 4 or 8"
#endif
#endif

#if defined(WM_VALUE_BYTES)
#if WM_VALUE_BYTES == 4
typedef u32 wm_value;
#elif WM_VALUE_BYTES == 8
typedef u64 wm_value;
#else
#error "WM_VALUE_BYTES must be 4 or 8"
#endif
#endif

// Which side-path slot a sentinel-valued user key uses (0 or 1), or -1 for an ordinary key.
#if defined(WM_KEY_BYTES)
__device__ __forceinline__ int wm_side_slot(wm_key k) {
  return k == WM_KEY_EMPTY ? 0 : (k == WM_KEY_TOMBSTONE ? 1 : -1);
}
#endif
