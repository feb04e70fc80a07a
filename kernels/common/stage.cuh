// Staging a warp's 32 random lines in shared memory: each lane needs one 128-byte line of its
// own (a slab, a bucket) and scans it alone. A lane reading its line itself makes 8 requests of
// 16 bytes to L2 (the slab hash's searches so ran 15.3 G/s against 23.1 staged: bench/NOTES.md,
// issue 11), so the warp copies the lines together, 4 whole lines per instruction, with cp.async
// (from L2 to shared memory, no registers held while they fly), and each lane then reads its own
// row. Chunk c of lane o's line is stored at c ^ (o & 7), so that 8 lanes reading chunk c of
// their own lines hit 8 different banks. Every 16-byte chunk is two 8-byte words read whole.

// One line per lane of a warp: 32 rows of 8 chunks of 16 bytes (4 KiB).
typedef ulonglong2 wm_stage[32][8];

// A 16-byte copy from global to shared memory through L2, in flight until wm_stage_lines waits.
__device__ __forceinline__ void wm_copy16_async(void* to_shared, const void* from_global) {
  const u32 s = (u32)__cvta_generic_to_shared(to_shared);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(from_global) : "memory");
}

// Copies, for every lane whose `has` is set, the 128-byte line at `line` (16-byte aligned; each
// lane its own) into its row of `stage`. Every lane of the warp calls it (warp-synchronous);
// afterwards a lane reads its row with wm_staged.
__device__ __forceinline__ void wm_stage_lines(wm_stage& stage, bool has, const void* line) {
  const u32 lane = threadIdx.x & 31u, c = lane & 7u;
  const u32 reading = __ballot_sync(0xffffffffu, has);
  const u64 at = reinterpret_cast<u64>(line);
  __syncwarp();  // the previous lines' readers are done with the stage
#pragma unroll
  for (int r = 0; r < 8; r++) {
    const int o = 4 * r + (int)(lane >> 3);
    const u64 from = __shfl_sync(0xffffffffu, at, o);
    if ((reading >> o) & 1u) {
      wm_copy16_async(&stage[o][c ^ (u32)(o & 7)], reinterpret_cast<const ulonglong2*>(from) + c);
    }
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  __syncwarp();
}

// Chunk i (bytes 16i .. 16i + 15) of this lane's staged line.
__device__ __forceinline__ ulonglong2 wm_staged(const wm_stage& stage, u32 i) {
  const u32 lane = threadIdx.x & 31u;
  return stage[lane][i ^ (lane & 7u)];
}

// Bulk copies (sm_90: the copy engine of the multiprocessor moves a whole contiguous range from
// global to shared memory, issued by one thread, completing on an mbarrier in shared memory):
// no instructions an item, where per-item copies (cp.async) cost each item its address
// arithmetic and issue slots. Ranges must start at 16-byte aligned addresses (both sides) and
// be a multiple of 16 bytes long (wm_bulk_copy_fits).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define WM_HAS_BULK_COPY 1
#else
#define WM_HAS_BULK_COPY 0
#endif

// Whether `bytes` at `from` (global) may be bulk-copied to `to` (shared).
__device__ __forceinline__ bool wm_bulk_copy_fits(const void* to, const void* from, u64 bytes) {
  return WM_HAS_BULK_COPY && ((reinterpret_cast<u64>(to) | reinterpret_cast<u64>(from) | bytes) & 15u) == 0;
}

#if WM_HAS_BULK_COPY
// One thread: an mbarrier for one arriving thread (itself, with the bytes it expects). All
// threads synchronise after it before any use.
__device__ __forceinline__ void wm_bulk_barrier_init(u64* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"((u32)__cvta_generic_to_shared(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One thread: the barrier's current phase completes once `bytes` have landed (its arrival).
// The fence first orders the block's earlier plain accesses to the buffer (made visible to
// this thread by a barrier) before the copy engine's writes.
__device__ __forceinline__ void wm_bulk_expect(u64* bar, u32 bytes) {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"((u32)__cvta_generic_to_shared(bar)),
               "r"(bytes)
               : "memory");
}

// One thread, after wm_bulk_expect: copies `bytes` (wm_bulk_copy_fits) from global to shared
// memory, completing on `bar`.
__device__ __forceinline__ void wm_bulk_copy(void* to, const void* from, u32 bytes, u64* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   (u32)__cvta_generic_to_shared(to)),
               "l"(from), "r"(bytes), "r"((u32)__cvta_generic_to_shared(bar))
               : "memory");
}

// Every thread that reads the copied range: waits for the completion of the barrier's phase of
// parity `parity` (0 for its first use, then alternating).
__device__ __forceinline__ void wm_bulk_wait(u64* bar, u32 parity) {
  const u32 at = (u32)__cvta_generic_to_shared(bar);
  u32 done = 0;
  while (!done) {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.b32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(at), "r"(parity)
        : "memory");
  }
}
#endif
