// The sentinel side path: a table that marks its slots with reserved key values (empty,
// tombstone) stores user keys equal to them here instead, so every key value is insertable.
// `side` is 4 u64 words: [flag0, value0, flag1, value1], one pair per sentinel (wm_side_slot:
// 0 for WM_KEY_EMPTY, 1 for WM_KEY_TOMBSTONE). A flag is 0 (absent), 1 (present) or 2 (being
// written: its value is not yet there). Narrow keys and values only (wide keys have no
// sentinels; a table with wide values keeps slot states apart from its keys).
#if defined(WM_KEY_BYTES) && defined(WM_VALUE_BYTES) && !defined(WM_KEY_WIDE) && !defined(WM_VALUE_WIDE)

// Inserts (k, v) into side slot `slot` as the insert mode word says (kernels/common/apply.cuh:
// keep, assign or apply); returns its status and counts a new key in `inserted`.
__device__ __forceinline__ u32 wm_side_insert_mode(u64* side, int slot, const wm_value& v, u32 word,
                                                   long long& inserted) {
  unsigned long long* flag = side + 2 * slot;
  if (atomicCAS(flag, 0ull, 2ull) == 0ull) {
    side[2 * slot + 1] = (u64)v;
    __threadfence();  // the value before the flag that makes it visible
    atomicExch(flag, 1ull);
    inserted++;
    return WM_STATUS_SENTINEL_KEY;
  }
  const u32 mode = wm_mode_of(word);
  if (mode == WM_MODE_ASSIGN) {
    atomicExch(side + 2 * slot + 1, (u64)v);
  } else if (mode == WM_MODE_APPLY) {
    // The claimer's value must be in before it is reduced into (flag 2: still being written;
    // inserts never meet an erase, so the flag goes on to 1). A volatile read: the compiler may
    // take an empty loop on a plain (or __ldcg) load for one that ends and drop it (C++'s
    // forward-progress rule), and then the reductions land before the claimer's value and are
    // lost (measured: 1-14 % of a sentinel key's counts, H100).
    while (*reinterpret_cast<volatile unsigned long long*>(flag) != 1ull) {
      __nanosleep(32);
    }
    __threadfence();
    // A 4-byte value is the low half of its (zero-extended) word: little-endian.
    wm_apply_value(reinterpret_cast<wm_value*>(side + 2 * slot + 1), v, word);
  }
  return WM_STATUS_SENTINEL_KEY | (mode == WM_MODE_KEEP ? WM_STATUS_PRESENT : WM_STATUS_UPDATED);
}

// wm_side_insert_mode with assign (true) or keep (false).
__device__ __forceinline__ u32 wm_side_insert(u64* side, int slot, const wm_value& v, bool assign,
                                              long long& inserted) {
  return wm_side_insert_mode(side, slot, v, assign ? WM_MODE_ASSIGN : WM_MODE_KEEP, inserted);
}

// Looks side slot `slot` up: true when present, and then writes its value to *out (if not null).
// `concurrent`: inserts may run in the same launch (a key counts once its value is written).
template <bool concurrent>
__device__ __forceinline__ bool wm_side_find(const u64* side, int slot, wm_value* out) {
  const u64 flag = concurrent ? __ldcg(side + 2 * slot) : side[2 * slot];
  if (concurrent ? flag != 1ull : flag == 0ull) return false;
  if (concurrent) __threadfence();  // the value was written before the flag
  if (out != nullptr) *out = (wm_value)(concurrent ? __ldcg(side + 2 * slot + 1) : side[2 * slot + 1]);
  return true;
}

// Erases side slot `slot`; true if this call removed the key.
__device__ __forceinline__ bool wm_side_erase(u64* side, int slot) { return atomicExch(side + 2 * slot, 0ull) != 0ull; }

// Retrieve: thread tid < 2 emits side slot tid if present (positions from *counter).
__device__ __forceinline__ void wm_side_retrieve(const u64* side, u64 tid, wm_key* out_keys, wm_value* out_values,
                                                 u64* counter, u64 out_capacity) {
  if (tid >= 2 || side[2 * tid] == 0ull) return;
  const u64 pos = atomicAdd(counter, 1ull);
  if (pos < out_capacity) {
    out_keys[pos] = tid == 0 ? WM_KEY_EMPTY : WM_KEY_TOMBSTONE;
    out_values[pos] = (wm_value)side[2 * tid + 1];
  }
}
#endif
