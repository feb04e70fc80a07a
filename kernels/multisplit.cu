// Multisplit of a batch of keys (and values) into `parts` contiguous parts by the part function
// of kernels/common/multisplit.cuh. Host side: src/table/engine/multisplit.rs, which runs
//   multisplit_count   per-part counts (warp-aggregated atomics),
//   multisplit_scan    exclusive scan of the counts into offsets[parts + 1] and the cursors,
//   multisplit_scatter every key (value) to cursor[part]++ (warp-aggregated claims),
// on one stream. Within a part the order is not the input's (warps claim in any order): the
// split is not stable.
//
// Defines: WM_KEY_BYTES (4, 8 or a larger multiple of 4), WM_VALUE_BYTES (likewise; unset for
// keys only), WM_HASH (WM_HASH_MURMUR or WM_HASH_MUELLER), WM_MS_BLOCK (threads per block of
// count and scatter).

#ifndef WM_HASH
#define WM_HASH WM_HASH_MURMUR
#endif
#ifndef WM_MS_BLOCK
#define WM_MS_BLOCK 256
#endif
static_assert(WM_MS_BLOCK % 32 == 0, "whole warps: the multisplit helpers are warp-collective");

// The scan runs in one block of this many threads (the host launches exactly this).
#define WM_MS_SCAN_BLOCK 1024

#if defined(WM_VALUE_BYTES)
typedef wm_value wm_ms_value;
#else
typedef u32 wm_ms_value;  // unused: the value pointers are null for a keys-only split
#endif

extern "C" __global__ void __launch_bounds__(WM_MS_BLOCK) multisplit_count(
    const wm_key* __restrict__ keys, u64 n, u64 seed, u32 parts, u64* __restrict__ counts) {
  wm_multisplit_for_each<WM_HASH>(keys, n, seed, parts, [&](u64, u32 part, const wm_key&) {
    wm_multisplit_count(counts, part);
  });
}

// offsets[p] = counts[0] + ... + counts[p - 1] for p in [0, parts], cursor[p] = offsets[p].
// One block of WM_MS_SCAN_BLOCK threads, a chunk of that many counts per round.
extern "C" __global__ void __launch_bounds__(WM_MS_SCAN_BLOCK) multisplit_scan(
    const u64* __restrict__ counts, u32 parts, u64* __restrict__ offsets, u64* __restrict__ cursor) {
  const u64 total = wm_block_exclusive_scan<u64, WM_MS_SCAN_BLOCK>(counts, parts, [&](u64 i, u64 excl) {
    offsets[i] = excl;
    cursor[i] = excl;
  });
  if (threadIdx.x == 0) offsets[parts] = total;
}

// Moves key i (and value i) to keys_out[cursor[part]++]. `values`/`values_out` are null for a
// keys-only split (and unused when WM_VALUE_BYTES is unset).
extern "C" __global__ void __launch_bounds__(WM_MS_BLOCK) multisplit_scatter(
    const wm_key* __restrict__ keys, const wm_ms_value* __restrict__ values, u64 n, u64 seed,
    u32 parts, u64* __restrict__ cursor, wm_key* __restrict__ keys_out,
    wm_ms_value* __restrict__ values_out) {
  wm_multisplit_for_each<WM_HASH>(keys, n, seed, parts, [&](u64 i, u32 part, const wm_key& k) {
    const u64 slot = wm_multisplit_claim(cursor, part);
    if (part == WM_NO_PART) return;
    keys_out[slot] = k;
#if defined(WM_VALUE_BYTES)
    if (values != nullptr) values_out[slot] = values[i];
#endif
  });
}
