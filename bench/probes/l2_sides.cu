// l2_sides.cu -- does the ordered insert pay for the crossing between the L2's two partitions, and
// could a kernel avoid it?
//
// Session AF's ncu of WarpDrive's ordered insert (u64 pairs, load 0.5, H200) counted 512 M L2
// requests, 168 M of them from the fabric between the L2's two partitions: about half of what the
// SMs send crosses it, as if each line's home were one partition and an SM reached the other one
// through its own. If an SM's requests went only to lines homed on its own side, a third of the
// L2's requests would go, and the insert is bound by them. This probe asks, on one GPU:
//   1. sides   for each SM and each 128-byte line of a 32 MiB buffer, the latency of an L2 atomic
//              (a chain of dependent atom.add 0, after a warm-up one); do the SMs fall into two
//              groups, each fast on half of the lines and slow on the other half; at what address
//              granularity does a line's side change (which address bits flip it)?
//   2. rate    random 16-byte read + 128-bit CAS on the buffer (the insert's two requests a key),
//              every thread of a full wave: lines drawn from the whole buffer, from its SM's near
//              lines only, from its far lines only. The ratio near / any bounds what a side-aware
//              insert could gain.
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -o l2_sides l2_sides.cu
// Usage: l2_sides [MiB=32] [warps_per_sm=4] [chain=4] [table GiB=0]
//   3. (table GiB > 0) the granules of an array of that size as the library maps a table's (4
//              timing warps a SM, chains of 2), twice, against a careful map (1 warp a SM, chains
//              of 8); then the rate over a 32 MiB stretch of it with each map's near lines.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <numeric>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  std::fprintf(stderr, "CUDA %s: %s at line %d\n", #x, cudaGetErrorString(e), __LINE__); std::exit(2);} } while (0)

typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __forceinline__ u32 smid() { u32 r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r; }

__device__ __forceinline__ u32 atom_add0(u32* p) {
  u32 v;
  asm volatile("atom.global.add.u32 %0, [%1], 0;" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// One block a SM (the dynamic shared memory keeps a second off it). Each warp's lane 0 times lines
// warp, warp + warps, ...: a warm-up atomic, then `chain` dependent atomics (each address depends
// on the value before, which is 0), the cycles of the chain / chain into lat[sm][line].
__global__ void sides(u32* buf, u32 lines, int chain, unsigned short* lat, u32* sm_of_block) {
  extern __shared__ u32 pad[];
  const u32 sm = smid();
  if (threadIdx.x == 0) { sm_of_block[blockIdx.x] = sm; pad[0] = sm; }
  const u32 warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if ((threadIdx.x & 31) != 0) return;
  for (u32 l = warp; l < lines; l += warps) {
    u32* p = buf + (u64)l * 32;
    u32 v = atom_add0(p);
    p += v;  // v == 0
    long long t0 = clock64();
    for (int c = 0; c < chain; c++) {
      v = atom_add0(p);
      p += v;
    }
    asm volatile("" :: "l"(p) : "memory");
    long long t1 = clock64();
    long long d = (t1 - t0) / chain;
    lat[(u64)sm * lines + l] = (unsigned short)(d > 65535 ? 65535 : d);
  }
}

__device__ __forceinline__ u64 mix(u64 k) {
  k ^= k >> 33; k *= 0xff51afd7ed558ccdull; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ull; k ^= k >> 33; return k;
}

__device__ __forceinline__ ulonglong2 cas128(ulonglong2* p, ulonglong2 cmp, ulonglong2 val) {
  ulonglong2 old;
  asm volatile(
      "{ .reg .b128 c, v, o;\n"
      "  mov.b128 c, {%2, %3};\n  mov.b128 v, {%4, %5};\n"
      "  atom.global.cas.b128 o, [%6], c, v;\n"
      "  mov.b128 {%0, %1}, o; }"
      : "=l"(old.x), "=l"(old.y)
      : "l"(cmp.x), "l"(cmp.y), "l"(val.x), "l"(val.y), "l"(p)
      : "memory");
  return old;
}

// mode 0: lines from the whole buffer (all: every line); 1: from the SM's near lines; 2: from its
// far lines. side_of_sm[sm] in {0, 1}; list0 / list1 = the lines near side 0 / 1. Every mode reads
// its line from a list, so that all three pay the same extra read.
__global__ void rate(ulonglong2* buf, u32 lines, int mode, int iters, const unsigned char* side_of_sm,
                     const u32* all, const u32* list0, u32 n0, const u32* list1, u32 n1, u64* sink) {
  const u32 s = side_of_sm[smid()];
  const u32* near = s == 0 ? list0 : list1;
  const u32 nn = s == 0 ? n0 : n1;
  const u32* far = s == 0 ? list1 : list0;
  const u32 nf = s == 0 ? n1 : n0;
  u64 acc = 0;
  u64 x = mix(((u64)blockIdx.x << 20) ^ threadIdx.x ^ 0x1234567ull);
  for (int i = 0; i < iters; i++) {
    x = mix(x + i);
    u32 line;
    if (mode == 0) line = all[(u32)((x >> 32) % lines)];
    else if (mode == 1) line = near[(u32)((x >> 32) % nn)];
    else line = far[(u32)((x >> 32) % nf)];
    ulonglong2* p = buf + (u64)line * 8 + (x & 7);  // one of the line's 8 16-byte slots
    ulonglong2 seen = __ldcg(p);
    ulonglong2 old = cas128(p, seen, make_ulonglong2(seen.x + 1, seen.y ^ x));
    acc += old.x;
  }
  if (acc == 0x5555) sink[0] = acc;
}

// 3. A large array's 4 KiB granules, as src/table/engine/l2_sides.rs measures a table's: lane 0 of
// each warp times the first word of every (warps in the grid)-th granule (a warm-up atomic, then
// `chain` dependent ones); side = near ? the SM's side : the other. bits[g] = side.
__global__ void granules(u32* base, u64 n, const unsigned char* side_of_sm, u32 threshold, int chain, u32 zero,
                         unsigned char* side_out, unsigned short* lat_out) {
  const u32 sm = smid();
  const u32 mine = side_of_sm[sm];
  if ((threadIdx.x & 31) != 0) return;
  const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
  for (u64 g = warp; g < n; g += warps) {
    u32* p = base + g * 1024;
    u32 v;
    asm volatile("atom.global.add.u32 %0, [%1], 0;" : "=r"(v) : "l"(p) : "memory");
    p += v & zero;
    long long t0 = clock64();
    for (int c = 0; c < chain; c++) {
      asm volatile("atom.global.add.u32 %0, [%1], 0;" : "=r"(v) : "l"(p) : "memory");
      p += v & zero;
    }
    asm volatile("" ::"l"(p) : "memory");
    long long d = (clock64() - t0) / chain;
    const bool near = d < threshold;
    side_out[g] = near ? mine : mine ^ 1u;
    lat_out[g] = (unsigned short)(d > 65535 ? 65535 : d);
  }
}

static u64 gib_arg(int argc, char** argv) { return argc > 4 ? atoll(argv[4]) : 0; }

int main(int argc, char** argv) {
  const u64 mib = argc > 1 ? atoll(argv[1]) : 32;
  const int wps = argc > 2 ? atoi(argv[2]) : 4;
  const int chain = argc > 3 ? atoi(argv[3]) : 4;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  std::printf("device %s, %d SMs, L2 %d MiB\n", prop.name, sms, prop.l2CacheSize >> 20);
  const u32 lines = (u32)(mib << 20 >> 7);
  u32* buf;
  CK(cudaMalloc(&buf, (u64)lines * 128));
  CK(cudaMemset(buf, 0, (u64)lines * 128));
  std::printf("buffer %llu MiB at %p, %u lines\n", mib, (void*)buf, lines);
  unsigned short* lat_d;
  CK(cudaMalloc(&lat_d, (u64)sms * lines * 2));
  CK(cudaMemset(lat_d, 0xff, (u64)sms * lines * 2));
  u32* sm_of_block_d;
  CK(cudaMalloc(&sm_of_block_d, sms * 4));
  const int smem = (int)prop.sharedMemPerBlockOptin;
  CK(cudaFuncSetAttribute(sides, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0));
  sides<<<sms, 32 * wps, smem>>>(buf, lines, chain, lat_d, sm_of_block_d);
  CK(cudaEventRecord(e1));
  CK(cudaDeviceSynchronize());
  float ms;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  std::vector<unsigned short> lat((u64)sms * lines);
  std::vector<u32> sm_of_block(sms);
  CK(cudaMemcpy(lat.data(), lat_d, lat.size() * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(sm_of_block.data(), sm_of_block_d, sms * 4, cudaMemcpyDeviceToHost));
  std::vector<int> seen(sms, 0);
  for (u32 s : sm_of_block) if (s < (u32)sms) seen[s]++;
  int covered = 0;
  for (int s = 0; s < sms; s++) covered += seen[s] == 1;
  std::printf("sides: %.1f ms; SMs with exactly one block: %d of %d\n", ms, covered, sms);

  // Per SM: a two-means split of its latencies into near and far.
  std::vector<std::vector<unsigned char>> near(sms, std::vector<unsigned char>(lines, 0));
  std::vector<double> m_near(sms), m_far(sms), frac(sms);
  for (int s = 0; s < sms; s++) {
    if (seen[s] != 1) continue;
    const unsigned short* l = &lat[(u64)s * lines];
    double lo = *std::min_element(l, l + lines), hi = *std::max_element(l, l + lines);
    for (int it = 0; it < 20; it++) {
      double t = (lo + hi) / 2, sl = 0, sh = 0;
      u64 nl = 0, nh = 0;
      for (u32 i = 0; i < lines; i++) (l[i] < t ? (sl += l[i], nl++) : (sh += l[i], nh++));
      lo = nl ? sl / nl : lo;
      hi = nh ? sh / nh : hi;
    }
    const double t = (lo + hi) / 2;
    u64 nn = 0;
    for (u32 i = 0; i < lines; i++) nn += (near[s][i] = l[i] < t);
    m_near[s] = lo; m_far[s] = hi; frac[s] = (double)nn / lines;
  }
  // Latency histogram of SM 0 (the first covered SM), buckets of 16 cycles.
  int ref = 0;
  while (ref < sms && seen[ref] != 1) ref++;
  {
    std::vector<u64> h(64, 0);
    for (u32 i = 0; i < lines; i++) h[std::min<int>(lat[(u64)ref * lines + i] / 16, 63)]++;
    std::printf("SM %d latency histogram (cycles: lines):", ref);
    for (int b = 0; b < 64; b++) if (h[b]) std::printf(" %d:%llu", b * 16, h[b]);
    std::printf("\n");
  }
  // Each SM against the reference: the share of lines on which they agree.
  std::vector<unsigned char> side(sms, 0);
  int n_side[2] = {0, 0}, unclear = 0;
  std::printf("SM: near-mean far-mean near-share agreement-with-ref\n");
  for (int s = 0; s < sms; s++) {
    if (seen[s] != 1) { side[s] = 0; unclear++; continue; }
    u64 agree = 0;
    for (u32 i = 0; i < lines; i++) agree += near[s][i] == near[ref][i];
    const double a = (double)agree / lines;
    side[s] = a >= 0.5 ? 0 : 1;
    if (a > 0.1 && a < 0.9) unclear++;
    n_side[side[s]]++;
    std::printf("%d:%.0f/%.0f/%.2f/%.3f%s", s, m_near[s], m_far[s], frac[s], a, (s % 6 == 5) ? "\n" : "  ");
  }
  std::printf("\nsides: %d SMs with the reference, %d against, %d unclear (agreement in 0.1-0.9 or no block)\n",
              n_side[0], n_side[1], unclear);
  // A line's side as the majority of side-0 SMs call it near.
  std::vector<unsigned char> line_side(lines);
  u64 split_votes = 0;
  for (u32 i = 0; i < lines; i++) {
    int v0 = 0, c0 = 0;
    for (int s = 0; s < sms; s++) if (seen[s] == 1 && side[s] == 0) { c0++; v0 += near[s][i]; }
    line_side[i] = (2 * v0 >= c0) ? 0 : 1;
    if (v0 != 0 && v0 != c0) split_votes++;
  }
  u64 n0 = 0;
  for (u32 i = 0; i < lines; i++) n0 += line_side[i] == 0;
  std::printf("lines near side 0: %llu of %u; lines on which side-0 SMs disagree: %llu\n", n0, lines, split_votes);
  std::printf("first 128 lines' sides: ");
  for (u32 i = 0; i < 128; i++) std::printf("%d", line_side[i]);
  std::printf("\n");
  // Which byte-address bits flip a line's side: P(side(a) == side(a ^ 2^b)).
  std::printf("P(same side) when byte-address bit b flips:");
  for (int b = 7; (1ull << (b - 7)) < lines; b++) {
    u64 same = 0, tot = 0;
    for (u32 i = 0; i < lines; i++) {
      const u32 j = i ^ (1u << (b - 7));
      if (j < lines) { tot++; same += line_side[i] == line_side[j]; }
    }
    std::printf(" %d:%.2f", b, (double)same / tot);
  }
  std::printf("\n");
  // Runs of one side along the buffer.
  {
    u64 runs = 1;
    for (u32 i = 1; i < lines; i++) runs += line_side[i] != line_side[i - 1];
    std::printf("runs of one side: %llu (mean %.2f lines)\n", runs, (double)lines / runs);
  }

  // 2. The rate of read + 128-bit CAS: any line, near lines, far lines.
  std::vector<u32> l0, l1;
  for (u32 i = 0; i < lines; i++) (line_side[i] == 0 ? l0 : l1).push_back(i);
  if (l0.empty() || l1.empty()) { std::printf("one side is empty: no rate test\n"); return 0; }
  std::vector<u32> all(lines);
  std::iota(all.begin(), all.end(), 0u);
  u32 *l0_d, *l1_d, *all_d;
  CK(cudaMalloc(&all_d, (u64)lines * 4));
  CK(cudaMemcpy(all_d, all.data(), (u64)lines * 4, cudaMemcpyHostToDevice));
  unsigned char* side_d;
  u64* sink;
  CK(cudaMalloc(&l0_d, l0.size() * 4));
  CK(cudaMalloc(&l1_d, l1.size() * 4));
  CK(cudaMalloc(&side_d, sms));
  CK(cudaMalloc(&sink, 8));
  CK(cudaMemcpy(l0_d, l0.data(), l0.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(l1_d, l1.data(), l1.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(side_d, side.data(), sms, cudaMemcpyHostToDevice));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rate, 256, 0));
  const int grid = per_sm * sms, iters = 64;
  const double ops = (double)grid * 256 * iters;
  const char* names[3] = {"any line", "near lines", "far lines"};
  for (int rep = 0; rep < (gib_arg(argc, argv) ? 1 : 3); rep++) {
    for (int mode = 0; mode < 3; mode++) {
      rate<<<grid, 256>>>(reinterpret_cast<ulonglong2*>(buf), lines, mode, iters, side_d, all_d, l0_d, (u32)l0.size(), l1_d,
                          (u32)l1.size(), sink);
      CK(cudaEventRecord(e0));
      rate<<<grid, 256>>>(reinterpret_cast<ulonglong2*>(buf), lines, mode, iters, side_d, all_d, l0_d, (u32)l0.size(), l1_d,
                          (u32)l1.size(), sink);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      CK(cudaEventElapsedTime(&ms, e0, e1));
      std::printf("rate rep %d, %-10s: %.3f ms, %.2f G read+CAS128/s (grid %d x 256, %d iters)\n", rep, names[mode], ms,
                  ops / ms / 1e6, grid, iters);
    }
  }
  CK(cudaGetLastError());

  // 3. A table-sized array's granules: the library's quick map twice, and a careful one.
  const u64 gib = argc > 4 ? atoll(argv[4]) : 0;
  if (gib == 0) return 0;
  const u64 n = (gib << 30) >> 12;
  u32* tab;
  CK(cudaMalloc(&tab, gib << 30));
  CK(cudaMemset(tab, 0xff, gib << 30));
  unsigned char *s1, *s2, *s3;
  unsigned short *la1, *la3;
  CK(cudaMalloc(&s1, n)); CK(cudaMalloc(&s2, n)); CK(cudaMalloc(&s3, n));
  CK(cudaMalloc(&la1, n * 2)); CK(cudaMalloc(&la3, n * 2));
  double near_mean = 0, far_mean = 0;
  for (int s = 0; s < sms; s++) { near_mean += m_near[s] / sms; far_mean += m_far[s] / sms; }
  const u32 thr = (u32)((near_mean + far_mean) / 2);
  std::printf("granules: %llu of 4 KiB in %llu GiB at %p; threshold %u cycles\n", n, gib, (void*)tab, thr);
  struct Run { int block; int chain; unsigned char* out; unsigned short* lat; const char* name; };
  Run runs[3] = {{128, 2, s1, la1, "quick (4 warps a SM, chain 2)"}, {128, 2, s2, la1, "quick again"},
                 {32, 8, s3, la3, "careful (1 warp a SM, chain 8)"}};
  for (auto& r : runs) {
    CK(cudaEventRecord(e0));
    granules<<<sms, r.block>>>(tab, n, side_d, thr, r.chain, 0u, r.out, r.lat);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    std::printf("%s: %.2f ms\n", r.name, ms);
  }
  std::vector<unsigned char> h1(n), h2(n), h3(n);
  std::vector<unsigned short> hl1(n), hl3(n);
  CK(cudaMemcpy(h1.data(), s1, n, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(h2.data(), s2, n, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(h3.data(), s3, n, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hl1.data(), la1, n * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hl3.data(), la3, n * 2, cudaMemcpyDeviceToHost));
  u64 a12 = 0, a13 = 0, a23 = 0, ones = 0;
  for (u64 g = 0; g < n; g++) { a12 += h1[g] == h2[g]; a13 += h1[g] == h3[g]; a23 += h2[g] == h3[g]; ones += h3[g]; }
  std::printf("agreement quick/quick %.4f, quick/careful %.4f, quick2/careful %.4f; careful side-1 share %.3f\n",
              (double)a12 / n, (double)a13 / n, (double)a23 / n, (double)ones / n);
  {
    std::vector<u64> h(64, 0), hc(64, 0);
    for (u64 g = 0; g < n; g++) { h[std::min<int>(hl1[g] / 32, 63)]++; hc[std::min<int>(hl3[g] / 32, 63)]++; }
    std::printf("quick latency histogram (32-cycle buckets):");
    for (int b = 0; b < 64; b++) if (h[b]) std::printf(" %d:%llu", b * 32, h[b]);
    std::printf("\ncareful latency histogram:");
    for (int b = 0; b < 64; b++) if (hc[b]) std::printf(" %d:%llu", b * 32, hc[b]);
    std::printf("\n");
  }
  // Read + CAS128 over a 32 MiB stretch of the array: any line, near lines by the quick map, by the
  // careful map.
  for (int which = 0; which < 2; which++) {
    const std::vector<unsigned char>& m = which == 0 ? h1 : h3;
    const u64 g0 = n / 2, stretch = 8192;  // 32 MiB from the middle
    std::vector<u32> q0, q1, qa;
    for (u64 g = g0; g < g0 + stretch; g++)
      for (u32 l = 0; l < 32; l++) {
        const u32 line = (u32)((g - g0) * 32 + l);
        qa.push_back(line);
        (m[g] == 0 ? q0 : q1).push_back(line);
      }
    u32 *q0_d, *q1_d, *qa_d;
    CK(cudaMalloc(&q0_d, q0.size() * 4)); CK(cudaMalloc(&q1_d, q1.size() * 4)); CK(cudaMalloc(&qa_d, qa.size() * 4));
    CK(cudaMemcpy(q0_d, q0.data(), q0.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(q1_d, q1.data(), q1.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(qa_d, qa.data(), qa.size() * 4, cudaMemcpyHostToDevice));
    ulonglong2* sbase = reinterpret_cast<ulonglong2*>(tab) + g0 * 256;
    for (int mode = 0; mode < 3; mode++) {
      rate<<<grid, 256>>>(sbase, (u32)qa.size(), mode, iters, side_d, qa_d, q0_d, (u32)q0.size(), q1_d, (u32)q1.size(), sink);
      CK(cudaEventRecord(e0));
      rate<<<grid, 256>>>(sbase, (u32)qa.size(), mode, iters, side_d, qa_d, q0_d, (u32)q0.size(), q1_d, (u32)q1.size(), sink);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      CK(cudaEventElapsedTime(&ms, e0, e1));
      std::printf("array stretch, %s map, %-10s: %.2f G read+CAS128/s\n", which == 0 ? "quick" : "careful", names[mode],
                  ops / ms / 1e6);
    }
  }
  CK(cudaGetLastError());
  return 0;
}
