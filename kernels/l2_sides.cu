// The L2's two sides: which SMs are near which half of the L2 cache, and which half each 4 KiB
// granule of a table's array is homed in. Host side: src/table/engine/l2_sides.rs.
//
// On an H200 (bench/probes/l2_sides.cu, bench/NOTES.md session AG) the SMs fall into two sides of
// 66; an L2 atomic from an SM takes ~350 cycles to a line homed on its side and ~535 to one on the
// other, whose requests also cross the fabric between the L2's partitions. A line's side is a
// parity of physical address bits (12 and up): constant over 4 KiB, unknown from a virtual
// address, so a table's array is measured. Random read + 128-bit CAS on near lines only ran 1.44x
// the rate on any line. The ordered insert uses both maps where WARPMAP_L2_SIDES=on
// (wm_for_each_ordered_l2_sided, kernels/common/bulk.cuh), so that a key's first window is
// claimed from an SM on its side; off by default (slower: the host module's docs say why).

// The latency of an L2 atomic to *p (cycles, the mean of a chain of `chain` dependent ones after
// a warm-up one that brings the line into L2). The atomics add 0: the memory is unchanged (it may
// be a table's, holding anything). `zero` is 0, from the host: each next address is p + (answer
// & zero), which waits for the answer, and the compiler cannot fold it away (a constant 0 it did).
__device__ __forceinline__ u32 wm_l2_latency(u32* p, int chain, u32 zero) {
  u32 v;
  asm volatile("atom.global.add.u32 %0, [%1], 0;" : "=r"(v) : "l"(p) : "memory");
  p += v & zero;
  const long long t0 = clock64();
  for (int c = 0; c < chain; c++) {
    asm volatile("atom.global.add.u32 %0, [%1], 0;" : "=r"(v) : "l"(p) : "memory");
    p += v & zero;
  }
  asm volatile("" ::"l"(p) : "memory");
  const long long d = (clock64() - t0) / chain;
  return d > 65535 ? 65535u : (u32)d;
}

// One block per SM (the host asks for enough dynamic shared memory that no second one fits):
// lat[sm * lines + l] (sm < WM_L2_SIDES_MAX_SM) = the latency from SM `sm` to line l (128 bytes) of buf, lane 0 of each warp
// timing every warps-th line; sm_of_block[block] = the block's SM.
extern "C" __global__ void l2_sides_sm_latency(u32* buf, u32 lines, int chain, u32 zero, unsigned short* lat,
                                               u32* sm_of_block) {
  extern __shared__ u32 wm_l2_sides_pad[];
  const u32 sm = wm_smid();
  if (threadIdx.x == 0) {
    sm_of_block[blockIdx.x] = sm;
    wm_l2_sides_pad[0] = sm;
  }
  if ((threadIdx.x & 31u) != 0 || sm >= WM_L2_SIDES_MAX_SM) return;
  const u32 warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (u32 l = warp; l < lines; l += warps)
    lat[(u64)sm * lines + l] = (unsigned short)wm_l2_latency(buf + (u64)l * 32, chain, zero);
}

// The side of every 4 KiB granule that the array [base, base + bytes) touches: granule g is the
// aligned 4 KiB at (base / 4096 + g) * 4096, timed at its first word inside the array. Lane 0 of
// each warp times every (warps in the grid)-th granule from its SM; a latency below `threshold`
// means the granule is on the SM's side (sm_l2_side[smid], 0 or 1; 0xff: unknown, no timing).
// Bit g of `bits` (zeroed by the host) is set for the granules on side 1.
extern "C" __global__ void l2_sides_granules(u64 base, u64 bytes, const u8* sm_l2_side, u32 threshold, int chain,
                                             u32 zero, u32* bits) {
  const u32 sm = wm_smid();
  const u32 mine = sm < WM_L2_SIDES_MAX_SM ? sm_l2_side[sm] : 0xffu;
  if ((threadIdx.x & 31u) != 0 || mine > 1u || bytes == 0) return;
  const u64 first = base >> 12, granules = ((base + bytes - 1) >> 12) - first + 1;
  const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
  for (u64 g = warp; g < granules; g += warps) {
    const u64 at = max((first + g) << 12, base) & ~3ull;
    const bool near = wm_l2_latency(reinterpret_cast<u32*>(at), chain, zero) < threshold;
    const u32 side = near ? mine : mine ^ 1u;
    if (side) atomicOr(bits + (g >> 5), 1u << (g & 31u));
  }
}
