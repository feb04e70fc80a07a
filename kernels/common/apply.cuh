// Reduce by key (InsertMode::Apply, src/table/mod.rs): the insert mode word of wm_bulk.assign
// and the atomic reductions on a stored value. The word: bits 0-1 the mode (0 keep, 1 assign,
// 2 apply), bits 4-7 the reduction (Reduce: 0 sum, 1 min, 2 max), bits 8-11 the value's kind
// (Numeric: 0 unsigned, 1 signed, 2 float). Host twin: InsertMode::word. The kind is read at run
// time (uniform over a launch), so one module serves u32, i32 and f32 values alike.

#define WM_MODE_KEEP 0u
#define WM_MODE_ASSIGN 1u
#define WM_MODE_APPLY 2u
#define WM_REDUCE_SUM 0u
#define WM_REDUCE_MIN 1u
#define WM_REDUCE_MAX 2u
#define WM_NUM_UNSIGNED 0u
#define WM_NUM_SIGNED 1u
#define WM_NUM_FLOAT 2u

__device__ __forceinline__ u32 wm_mode_of(u32 word) { return word & 3u; }
__device__ __forceinline__ u32 wm_reduce_of(u32 word) { return (word >> 4) & 15u; }
__device__ __forceinline__ u32 wm_kind_of(u32 word) { return (word >> 8) & 15u; }

// The float reduction that a CAS loop applies (Rust's f32::min / max: a NaN loses to a number,
// as fminf / fmaxf).
__device__ __forceinline__ float wm_reduce_float(float a, float b, u32 op) {
  return op == WM_REDUCE_MIN ? fminf(a, b) : fmaxf(a, b);
}
__device__ __forceinline__ double wm_reduce_double(double a, double b, u32 op) {
  return op == WM_REDUCE_MIN ? fmin(a, b) : fmax(a, b);
}

// *p = op(*p, v) atomically for a 4-byte value (its bits in v), as `word` says.
__device__ __forceinline__ void wm_apply32(u32* p, u32 v, u32 word) {
  const u32 op = wm_reduce_of(word), kind = wm_kind_of(word);
  if (op == WM_REDUCE_SUM) {
    if (kind == WM_NUM_FLOAT) atomicAdd(reinterpret_cast<float*>(p), __uint_as_float(v));
    else atomicAdd(p, v);  // two's complement: the signed sum is the unsigned one
  } else if (kind == WM_NUM_UNSIGNED) {
    if (op == WM_REDUCE_MIN) atomicMin(p, v);
    else atomicMax(p, v);
  } else if (kind == WM_NUM_SIGNED) {
    if (op == WM_REDUCE_MIN) atomicMin(reinterpret_cast<int*>(p), (int)v);
    else atomicMax(reinterpret_cast<int*>(p), (int)v);
  } else {
    u32 cur = *(volatile u32*)p;  // not __ldcg: p may be in shared memory (ops' group table)
    while (true) {
      const u32 next = __float_as_uint(wm_reduce_float(__uint_as_float(cur), __uint_as_float(v), op));
      if (next == cur) break;
      const u32 seen = atomicCAS(p, cur, next);
      if (seen == cur) break;
      cur = seen;
    }
  }
}

// *p = op(*p, v) atomically for an 8-byte value (its bits in v), as `word` says.
__device__ __forceinline__ void wm_apply64(u64* p, u64 v, u32 word) {
  const u32 op = wm_reduce_of(word), kind = wm_kind_of(word);
  unsigned long long* q = reinterpret_cast<unsigned long long*>(p);
  if (op == WM_REDUCE_SUM) {
    if (kind == WM_NUM_FLOAT) atomicAdd(reinterpret_cast<double*>(p), __longlong_as_double((long long)v));
    else atomicAdd(q, (unsigned long long)v);
  } else if (kind == WM_NUM_UNSIGNED) {
    if (op == WM_REDUCE_MIN) atomicMin(q, (unsigned long long)v);
    else atomicMax(q, (unsigned long long)v);
  } else if (kind == WM_NUM_SIGNED) {
    if (op == WM_REDUCE_MIN) atomicMin(reinterpret_cast<long long*>(p), (long long)v);
    else atomicMax(reinterpret_cast<long long*>(p), (long long)v);
  } else {
    unsigned long long cur = *(volatile unsigned long long*)q;  // as in wm_apply32
    while (true) {
      const double r = wm_reduce_double(__longlong_as_double((long long)cur), __longlong_as_double((long long)v), op);
      const unsigned long long next = (unsigned long long)__double_as_longlong(r);
      if (next == cur) break;
      const unsigned long long seen = atomicCAS(q, cur, next);
      if (seen == cur) break;
      cur = seen;
    }
  }
}

#if defined(WM_VALUE_BYTES) && !defined(WM_VALUE_WIDE)
// Reduces v into the value at p (a value of the table's width: 4 or 8 bytes).
__device__ __forceinline__ void wm_apply_value(wm_value* p, const wm_value& v, u32 word) {
#if WM_VALUE_BYTES == 4
  wm_apply32(reinterpret_cast<u32*>(p), (u32)v, word);
#else
  wm_apply64(reinterpret_cast<u64*>(p), (u64)v, word);
#endif
}
#endif
