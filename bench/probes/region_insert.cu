// region_insert.cu -- does a region-exclusive bulk insert (a cluster owns a part's stretch of the table
// in distributed shared memory, inserts with DSMEM atomics, writes the stretch back) beat the
// L2-atomic-bound ordered insert of WarpDrive?
//
// Table: `windows` windows of 4 16-byte slots {key, value} (64 B), empty slot = all ones; u64 keys
// fmix64(i ^ mask) (unique), n = 2^log2_n, capacity = windows * 4 >= n / lf, windows a multiple of
// `parts`. h = fmix64(key ^ SEED); first window w0 = top 32 bits of h mapped monotonically onto
// [0, windows); later windows by double hashing (step = 1 + (u32)h % (windows - 1)). The part of a key
// is w0 / (windows / parts): a part owns a contiguous stretch of windows / parts windows.
// Setup (untimed): keys/values generated on the device, sorted by part (cub radix sort of (part, index),
// stable) and gathered into part order; part offsets from the sorted part ids.
//   ordered   the baseline: a thread per key over the part-ordered pairs, one resident wave of 256-thread
//             blocks taking tiles of 4 x 256 keys from a global counter; per key: __ldcg the window,
//             key present -> done, leftmost empty slot -> atom.global.cas.b128, lost -> reload, full ->
//             next window (64 windows at most, then a failure is counted).
//   region    clusters of `cluster` blocks, one wave; cluster c takes parts c, c + nclusters, ...: each
//             block loads its 1/cluster slice of the stretch into shared memory, cluster.sync, the
//             cluster's threads insert the part's keys into their first window with
//             atom.shared::cluster.cas.b128 (mapa to the owner block), a full first window sends the
//             pair to a global overflow list, cluster.sync, each block stores its slice back.
//   overflow  the overflow list inserted by the global probe loop (a grid-stride kernel; the first
//             window is full, so it moves on by double hashing).
// Verification (untimed): every key found with its value, and the non-empty slots counted == n.
// Timing: cudaEvents, one warm-up + the median of 3, each run on a freshly filled table.
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -o region_insert region_insert.cu
// Usage: region_insert [log2_n=27] [lf=0.5[,0.8,...]] [parts=2048] [cluster=16] [threads=1024]
#include <cooperative_groups.h>
#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cg = cooperative_groups;

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  std::fprintf(stderr, "CUDA %s: %s at line %d\n", #x, cudaGetErrorString(e), __LINE__); std::exit(2);} } while (0)

typedef unsigned long long u64;
typedef unsigned int u32;
static const u64 EMPTY = ~0ull;
static const u64 SEED = 0x9e3779b97f4a7c15ull;
static const u64 KEY_MASK = 0x2545f4914f6cdd1dull;
static const int MAX_WINDOWS = 64;  // probe bound of the global loop (then a failure)
static const int MAX_RETRIES = 64;  // lost CASes within one window (at most 4 can be real)

__host__ __device__ inline u64 fmix64(u64 k) {
  k ^= k >> 33; k *= 0xff51afd7ed558ccdull; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ull; k ^= k >> 33; return k;
}
__device__ inline u64 hash_of(u64 key) { return fmix64(key ^ SEED); }
// top 32 bits of h mapped monotonically onto [0, windows)
__device__ inline u32 first_window(u64 h, u32 windows) { return (u32)__umul64hi((h >> 32) << 32, (u64)windows); }
__device__ inline u32 step_of(u64 h, u32 windows) { return 1u + (u32)h % (windows - 1u); }

__device__ inline ulonglong2 cas128_global(ulonglong2* addr, ulonglong2 cmp, ulonglong2 val) {
  ulonglong2 old;
  asm volatile("{\n\t.reg .b128 c, v, o;\n\t"
               "mov.b128 c, {%2, %3};\n\tmov.b128 v, {%4, %5};\n\t"
               "atom.global.cas.b128 o, [%6], c, v;\n\t"
               "mov.b128 {%0, %1}, o;\n\t}"
               : "=l"(old.x), "=l"(old.y)
               : "l"(cmp.x), "l"(cmp.y), "l"(val.x), "l"(val.y), "l"(addr) : "memory");
  return old;
}
// addr: a shared::cluster address (from mapa)
__device__ inline ulonglong2 cas128_dsmem(u32 addr, ulonglong2 cmp, ulonglong2 val) {
  ulonglong2 old;
  asm volatile("{\n\t.reg .b128 c, v, o;\n\t"
               "mov.b128 c, {%2, %3};\n\tmov.b128 v, {%4, %5};\n\t"
               "atom.relaxed.cluster.shared::cluster.cas.b128 o, [%6], c, v;\n\t"
               "mov.b128 {%0, %1}, o;\n\t}"
               : "=l"(old.x), "=l"(old.y)
               : "l"(cmp.x), "l"(cmp.y), "l"(val.x), "l"(val.y), "r"(addr) : "memory");
  return old;
}
__device__ inline ulonglong2 ld_dsmem(u32 addr) {
  ulonglong2 s;
  asm volatile("ld.shared::cluster.v2.u64 {%0, %1}, [%2];" : "=l"(s.x), "=l"(s.y) : "r"(addr) : "memory");
  return s;
}
// shared::cta address `local` in this block -> the same offset in block `rank` of the cluster
__device__ inline u32 map_rank(u32 local, u32 rank) {
  u32 r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(local), "r"(rank));
  return r;
}

// ---------------------------------------------------------------- setup kernels
__global__ void gen(u64* keys, u64* vals, u64 n) {
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    u64 k = fmix64(i ^ KEY_MASK);
    if (k == EMPTY) k = fmix64(n ^ KEY_MASK);  // index n's key: unused by any i < n, so still unique
    keys[i] = k; vals[i] = fmix64(k ^ 0x5bd1e995c2b2ae35ull);
  }
}
__global__ void part_ids(const u64* keys, u32* pid, u32* idx, u64 n, u32 windows, u32 wpp) {
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    pid[i] = first_window(hash_of(keys[i]), windows) / wpp; idx[i] = (u32)i;
  }
}
__global__ void gather(const u64* keys, const u64* vals, const u32* idx, u64* skeys, u64* svals, u64 n) {
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    u32 j = idx[i]; skeys[i] = keys[j]; svals[i] = vals[j];
  }
}
// begin[p] = first index of part p in the sorted ids (begin[parts] = n); empty parts handled
__global__ void part_begins(const u32* spid, u64* begin, u64 n, u32 parts) {
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i <= n; i += (u64)gridDim.x * blockDim.x) {
    u32 lo = i == 0 ? 0u : spid[i - 1] + 1u, hi = i == n ? parts : spid[i];
    for (u32 p = lo; p <= hi; ++p) begin[p] = i;
  }
}
__global__ void fill(ulonglong2* t, u64 slots) {
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < slots; i += (u64)gridDim.x * blockDim.x)
    t[i] = make_ulonglong2(EMPTY, EMPTY);
}

// ---------------------------------------------------------------- global probe loop (A, C)
// Inserts (key, val) from its first window on; 1 on success (or key present), 0 on failure.
__device__ inline int insert_global(ulonglong2* t, u64 key, u64 val, u32 windows) {
  const u64 h = hash_of(key);
  u32 w = first_window(h, windows);
  const u32 step = step_of(h, windows);
  const ulonglong2 kv = make_ulonglong2(key, val);
  for (int p = 0; p < MAX_WINDOWS; ++p) {
    ulonglong2* win = t + (u64)w * 4;
    for (int tries = 0; tries < MAX_RETRIES; ++tries) {
      ulonglong2 s[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) s[r] = __ldcg(win + r);
      int e = -1;
      ulonglong2 seen = make_ulonglong2(EMPTY, EMPTY);  // (selected, not indexed: s stays in registers)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        if (s[r].x == key) return 1;
        if (e < 0 && s[r].x == EMPTY) { e = r; seen = s[r]; }
      }
      if (e < 0) break;  // full: next window
      const ulonglong2 old = cas128_global(win + e, seen, kv);
      if ((old.x == seen.x && old.y == seen.y) || old.x == key) return 1;
    }
    w += step; if (w >= windows) w -= windows;
  }
  return 0;
}

// (A) one resident wave, tiles of 4 x 256 consecutive keys from a global counter
__global__ void __launch_bounds__(256) ordered_insert(ulonglong2* t, const u64* keys, const u64* vals, u64 n,
                                                      u32 windows, unsigned long long* tile_ctr,
                                                      unsigned long long* fails) {
  __shared__ unsigned long long s_tile;
  while (true) {
    if (threadIdx.x == 0) s_tile = atomicAdd(tile_ctr, 1ull);
    __syncthreads();
    const u64 tile = s_tile;
    __syncthreads();
    if (tile * 1024 >= n) break;
#pragma unroll 1
    for (int round = 0; round < 4; ++round) {
      const u64 i = tile * 1024 + round * 256 + threadIdx.x;
      if (i < n && !insert_global(t, keys[i], vals[i], windows)) atomicAdd(fails, 1ull);
    }
  }
}

// (C) the overflow list (its length read on the device: no host round trip between B and C)
__global__ void overflow_insert(ulonglong2* t, const ulonglong2* ovf, const unsigned long long* ovf_cnt,
                                u32 windows, unsigned long long* fails) {
  const u64 m = *ovf_cnt;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < m; i += (u64)gridDim.x * blockDim.x) {
    const ulonglong2 kv = ovf[i];
    if (!insert_global(t, kv.x, kv.y, windows)) atomicAdd(fails, 1ull);
  }
}

// ---------------------------------------------------------------- (B) region-exclusive insert
// Block `rank` of a cluster holds windows [rank * per, min((rank + 1) * per, wpp)) of the part's stretch.
__global__ void __launch_bounds__(1024) region_insert(ulonglong2* t, const u64* keys, const u64* vals,
                                                      const u64* begin, u32 parts, u32 windows, u32 wpp,
                                                      u32 per, ulonglong2* ovf, unsigned long long* ovf_cnt) {
  extern __shared__ __align__(16) ulonglong2 sm[];
  cg::cluster_group cl = cg::this_cluster();
  const u32 csize = cl.num_blocks(), rank = cl.block_rank();
  const u32 cid = blockIdx.x / csize, nclusters = gridDim.x / csize;
  const u32 sm_base = (u32)__cvta_generic_to_shared(sm);
  const u32 my_lo = rank * per;
  const u32 my_slots = my_lo < wpp ? (min(wpp, my_lo + per) - my_lo) * 4u : 0u;
  const u32 tid = cl.thread_rank(), nthreads = cl.num_threads();
  for (u32 p = cid; p < parts; p += nclusters) {
    // 1. this block's slice of the stretch into shared memory
    const ulonglong2* src = t + ((u64)p * wpp + my_lo) * 4;
#pragma unroll 4
    for (u32 i = threadIdx.x; i < my_slots; i += blockDim.x) sm[i] = __ldcg(src + i);
    cl.sync();
    // 2. the part's keys, each into its first window (in the owner block's shared memory)
    const u64 b = begin[p], e = begin[p + 1];
    for (u64 j = b + tid; j < e; j += nthreads) {
      const u64 key = keys[j];
      const ulonglong2 kv = make_ulonglong2(key, vals[j]);
      const u32 wl = first_window(hash_of(key), windows) - p * wpp;  // < wpp
      const u32 owner = wl / per;
      const u32 win = map_rank(sm_base + (wl - owner * per) * 64u, owner);
      bool spill = true;
      for (int tries = 0; tries < MAX_RETRIES; ++tries) {
        ulonglong2 s[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) s[r] = ld_dsmem(win + r * 16u);
        int f = -1;
        bool done = false;
        ulonglong2 seen = make_ulonglong2(EMPTY, EMPTY);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          if (s[r].x == key) done = true;
          if (f < 0 && s[r].x == EMPTY) { f = r; seen = s[r]; }
        }
        if (done) { spill = false; break; }
        if (f < 0) break;  // first window full: overflow
        const ulonglong2 old = cas128_dsmem(win + f * 16u, seen, kv);
        if ((old.x == seen.x && old.y == seen.y) || old.x == key) { spill = false; break; }
      }
      // (MAX_RETRIES lost CASes cannot happen -- 4 at most are real; if it did, the pair would go to
      // the overflow list, whose kernel also starts from the first window, so it stays correct.)
      if (spill) {  // warp-aggregated append
        cg::coalesced_group g = cg::coalesced_threads();
        unsigned long long at = 0;
        if (g.thread_rank() == 0) at = atomicAdd(ovf_cnt, (unsigned long long)g.size());
        at = g.shfl(at, 0) + g.thread_rank();
        ovf[at] = kv;
      }
    }
    cl.sync();
    // 3. the slice back to the table. No cluster.sync before the next part's loads: remote blocks
    // touch this block's shared memory only between the two syncs above, and step 1 of the next part
    // writes sm[i] from the same thread that stores sm[i] here.
    ulonglong2* dst = t + ((u64)p * wpp + my_lo) * 4;
#pragma unroll 4
    for (u32 i = threadIdx.x; i < my_slots; i += blockDim.x) __stcg(dst + i, sm[i]);
  }
}

// ---------------------------------------------------------------- verification
__global__ void find_check(const ulonglong2* t, const u64* keys, const u64* vals, u64 n, u32 windows,
                           unsigned long long* bad) {
  unsigned long long mine = 0;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    const u64 key = keys[i], h = hash_of(key);
    u32 w = first_window(h, windows);
    const u32 step = step_of(h, windows);
    int ok = 0;
    for (int p = 0; p < MAX_WINDOWS; ++p) {
      int stop = 0;
      for (int r = 0; r < 4 && !stop; ++r) {
        const ulonglong2 s = __ldcg(t + (u64)w * 4 + r);
        if (s.x == key) { ok = s.y == vals[i]; stop = 1; }
        else if (s.x == EMPTY) stop = 1;
      }
      if (stop) break;
      w += step; if (w >= windows) w -= windows;
    }
    mine += !ok;
  }
  if (mine) atomicAdd(bad, mine);
}
__global__ void count_used(const ulonglong2* t, u64 slots, unsigned long long* used) {
  unsigned long long mine = 0;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < slots; i += (u64)gridDim.x * blockDim.x)
    mine += t[i].x != EMPTY;
  if (mine) atomicAdd(used, mine);
}

// ---------------------------------------------------------------- host
static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

int main(int argc, char** argv) {
  const int log2_n = argc > 1 ? atoi(argv[1]) : 27;
  std::vector<double> lfs;
  for (char* s = argc > 2 ? argv[2] : (char*)"0.5"; *s;) { lfs.push_back(strtod(s, &s)); if (*s == ',') ++s; else if (*s) break; }
  const u32 parts = argc > 3 ? (u32)atoi(argv[3]) : 2048u;
  const u32 cluster = argc > 4 ? (u32)atoi(argv[4]) : 16u;
  const u32 threads = argc > 5 ? (u32)atoi(argv[5]) : 1024u;
  const u64 n = 1ull << log2_n;
  if (parts < 1 || cluster < 1 || threads < 32 || threads > 1024 || log2_n < 4 || log2_n > 30) {
    std::fprintf(stderr, "bad arguments\n"); return 1;
  }
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  const int SMS = prop.multiProcessorCount, G = SMS * 8;
  std::printf("# %s, %d SMs, L2 %d MiB, smem opt-in per block %zu B, n 2^%d = %llu, parts %u, cluster %u, threads %u\n",
              prop.name, SMS, prop.l2CacheSize >> 20, prop.sharedMemPerBlockOptin, log2_n, n, parts, cluster, threads);

  u64 *keys, *vals, *skeys, *svals, *begin; u32 *pid, *pid2, *idx, *idx2;
  ulonglong2* ovf; unsigned long long* cnt;  // cnt[0] tile counter, [1] fails, [2] overflow, [3] bad, [4] used
  CK(cudaMalloc(&keys, n * 8)); CK(cudaMalloc(&vals, n * 8)); CK(cudaMalloc(&skeys, n * 8));
  CK(cudaMalloc(&svals, n * 8)); CK(cudaMalloc(&pid, n * 4)); CK(cudaMalloc(&pid2, n * 4));
  CK(cudaMalloc(&idx, n * 4)); CK(cudaMalloc(&idx2, n * 4)); CK(cudaMalloc(&begin, (parts + 1) * 8ull));
  CK(cudaMalloc(&ovf, n * 16)); CK(cudaMalloc(&cnt, 8 * 8));
  gen<<<G, 256>>>(keys, vals, n); CK(cudaGetLastError());
  int end_bit = 1; while ((1ull << end_bit) < parts) ++end_bit;  // part ids < parts
  size_t tmp_bytes = 0;
  CK(cub::DeviceRadixSort::SortPairs(nullptr, tmp_bytes, pid, pid2, idx, idx2, (int)n, 0, end_bit));
  void* tmp; CK(cudaMalloc(&tmp, tmp_bytes));

  // ordered: one resident wave of 256-thread blocks
  int occ_ordered = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_ordered, ordered_insert, 256, 0));
  const int grid_ordered = SMS * std::max(occ_ordered, 1);
  cudaEvent_t e0, e1, e2; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1)); CK(cudaEventCreate(&e2));
  unsigned long long h[8];

  for (double lf : lfs) {
    if (!(lf > 0.0 && lf < 1.0)) { std::fprintf(stderr, "lf %g: must be in (0, 1)\n", lf); continue; }
    const u64 wanted = (u64)std::ceil((double)n / lf);
    const u64 wpp64 = (((wanted + 3) / 4) + parts - 1) / parts;
    const u64 windows64 = wpp64 * parts;
    if (windows64 >= (1ull << 32) || windows64 < 2) { std::fprintf(stderr, "lf %.3f: too many windows\n", lf); continue; }
    const u32 windows = (u32)windows64, wpp = (u32)wpp64;
    const u64 slots = windows64 * 4, table_bytes = slots * 16;
    const u64 stretch = (u64)wpp * 64;
    ulonglong2* t; CK(cudaMalloc(&t, table_bytes));
    // part order
    part_ids<<<G, 256>>>(keys, pid, idx, n, windows, wpp); CK(cudaGetLastError());
    CK(cub::DeviceRadixSort::SortPairs(tmp, tmp_bytes, pid, pid2, idx, idx2, (int)n, 0, end_bit));
    gather<<<G, 256>>>(keys, vals, idx2, skeys, svals, n); CK(cudaGetLastError());
    part_begins<<<G, 256>>>(pid2, begin, n, parts); CK(cudaGetLastError());
    std::vector<u64> hb(parts + 1); CK(cudaMemcpy(hb.data(), begin, (parts + 1) * 8ull, cudaMemcpyDeviceToHost));
    u64 kmin = ~0ull, kmax = 0;
    for (u32 p = 0; p < parts; ++p) { kmin = std::min(kmin, hb[p + 1] - hb[p]); kmax = std::max(kmax, hb[p + 1] - hb[p]); }
    std::printf("\n## lf %.3f (real %.4f): capacity %llu slots (%u windows, %.0f MiB), stretch %llu B (%u windows), "
                "keys per part %llu..%llu (mean %.0f)\n", lf, (double)n / slots, slots, windows,
                table_bytes / 1048576.0, stretch, wpp, kmin, kmax, (double)n / parts);

    auto verify = [&](const char* what) {
      CK(cudaMemset(cnt + 3, 0, 16));
      find_check<<<G, 256>>>(t, keys, vals, n, windows, cnt + 3); CK(cudaGetLastError());
      count_used<<<G, 256>>>(t, slots, cnt + 4); CK(cudaGetLastError());
      CK(cudaMemcpy(h, cnt, 8 * 8, cudaMemcpyDeviceToHost));
      const bool pass = h[3] == 0 && h[4] == n && h[1] == 0;
      std::printf("verify %-16s %s (not found / wrong value %llu, used slots %llu of n %llu, insert failures %llu)\n",
                  what, pass ? "PASS" : "FAIL", h[3], h[4], n, h[1]);
    };

    // (A) ordered
    {
      std::vector<float> ms;
      for (int r = 0; r < 4; ++r) {
        fill<<<G, 256>>>(t, slots); CK(cudaGetLastError()); CK(cudaMemset(cnt, 0, 16));
        CK(cudaEventRecord(e0));
        ordered_insert<<<grid_ordered, 256>>>(t, skeys, svals, n, windows, cnt, cnt + 1);
        CK(cudaGetLastError()); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
        float m; CK(cudaEventElapsedTime(&m, e0, e1)); if (r) ms.push_back(m);
      }
      const float m = median(ms);
      std::printf("ordered   grid %d x 256 (%d blocks/SM): %8.3f ms  %6.3f G keys/s\n", grid_ordered, occ_ordered, m,
                  n / (m * 1e6));
      verify("ordered");
    }

    // (B) + (C) region + overflow
    const u32 per = (wpp + cluster - 1) / cluster;
    const size_t smem = (size_t)per * 64;
    std::printf("region    smem per block %zu B (%u windows), cluster %u x %u threads\n", smem, per, cluster, threads);
    if (smem > prop.sharedMemPerBlockOptin) {
      std::printf("region    SKIP: %zu B of shared memory per block > opt-in limit %zu B (more parts or a larger cluster)\n",
                  smem, prop.sharedMemPerBlockOptin);
      CK(cudaFree(t)); continue;
    }
    if (cluster > 8) CK(cudaFuncSetAttribute(region_insert, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    CK(cudaFuncSetAttribute(region_insert, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster; attr[0].val.clusterDim.y = 1; attr[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(cluster); cfg.blockDim = dim3(threads); cfg.dynamicSmemBytes = smem;
    cfg.stream = 0; cfg.attrs = attr; cfg.numAttrs = 1;
    int nclusters = 0;
    cudaError_t oe = cudaOccupancyMaxActiveClusters(&nclusters, region_insert, &cfg);
    if (oe != cudaSuccess || nclusters < 1) {
      std::printf("region    SKIP: no cluster of %u blocks x %u threads with %zu B smem fits (%s, active clusters %d)\n",
                  cluster, threads, smem, cudaGetErrorString(oe), nclusters);
      (void)cudaGetLastError(); CK(cudaFree(t)); continue;
    }
    cfg.gridDim = dim3((u32)nclusters * cluster);
    std::printf("region    active clusters %d (grid %u blocks, %u SMs busy of %d)\n", nclusters, nclusters * cluster,
                nclusters * cluster, SMS);
    const int grid_ovf = SMS * 8;
    std::vector<float> mb, mc, mbc;
    for (int r = 0; r < 4; ++r) {
      fill<<<G, 256>>>(t, slots); CK(cudaGetLastError()); CK(cudaMemset(cnt, 0, 24));
      CK(cudaEventRecord(e0));
      CK(cudaLaunchKernelEx(&cfg, region_insert, t, (const u64*)skeys, (const u64*)svals, (const u64*)begin, parts,
                            windows, wpp, per, ovf, cnt + 2));
      CK(cudaEventRecord(e1));
      overflow_insert<<<grid_ovf, 256>>>(t, ovf, cnt + 2, windows, cnt + 1); CK(cudaGetLastError());
      CK(cudaEventRecord(e2)); CK(cudaEventSynchronize(e2));
      float b, c; CK(cudaEventElapsedTime(&b, e0, e1)); CK(cudaEventElapsedTime(&c, e1, e2));
      if (r) { mb.push_back(b); mc.push_back(c); mbc.push_back(b + c); }
    }
    CK(cudaMemcpy(h, cnt, 8 * 8, cudaMemcpyDeviceToHost));
    const u64 novf = h[2];
    const double region_bytes = 2.0 * table_bytes + 16.0 * n;
    const float b = median(mb), c = median(mc), bc = median(mbc);
    std::printf("overflow  %llu pairs (%.4f of n)\n", novf, (double)novf / n);
    std::printf("region    %8.3f ms  %6.3f G keys/s  (%.2f GB moved: 2 x table + keys/values, %.0f GB/s)\n", b,
                n / (b * 1e6), region_bytes / 1e9, region_bytes / (b * 1e6));
    std::printf("overflow  %8.3f ms  %6.3f G keys/s of overflow pairs\n", c, novf / (c * 1e6));
    std::printf("region+ovf %7.3f ms  %6.3f G keys/s\n", bc, n / (bc * 1e6));
    verify("region+overflow");
    CK(cudaFree(t));
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
