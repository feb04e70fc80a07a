// The all-to-all exchange of the sharded table, as a probe (session Q, issue 16): every GPU sends
// 1/N of a buffer to every other GPU, four ways, and prints what each GPU receives per second.
//   ce-pull   cudaMemcpyPeerAsync on the receiver's streams (what the copy exchange does)
//   ce-push   the same on the sender's streams
//   sm-pull   a kernel on the receiver reads the peers' memory through peer pointers
//   sm-push   a kernel on the sender writes into the peers' memory
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90 -o p2p p2p_alltoall.cu && ./p2p [MiB per GPU] [blocks]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <chrono>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s (line %d)\n", #x, cudaGetErrorString(e), __LINE__); exit(1); } } while (0)

// Copies n 16-byte words from src[i] to dst[i] for the pieces this block serves: piece p of
// `pieces` gets blocks p, p + pieces, ...
struct Pieces { const int4* src[8]; int4* dst[8]; };
__global__ void copy_pieces(Pieces ps, int pieces, size_t words) {
  int p = blockIdx.x % pieces;
  size_t b = blockIdx.x / pieces, nb = gridDim.x / pieces;
  const int4* s = ps.src[p];
  int4* d = ps.dst[p];
  for (size_t i = b * blockDim.x + threadIdx.x; i < words; i += nb * blockDim.x) d[i] = s[i];
}

int main(int argc, char** argv) {
  size_t mib = argc > 1 ? atol(argv[1]) : 1024;
  int blocks = argc > 2 ? atoi(argv[2]) : 264;
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n < 2) { printf("needs 2 GPUs or more\n"); return 0; }
  n = std::min(n, 8);
  size_t total = mib << 20, piece = total / n / 16 * 16;
  std::vector<char*> src(n), dst(n);
  std::vector<std::vector<cudaStream_t>> st(n, std::vector<cudaStream_t>(n));
  for (int g = 0; g < n; g++) {
    CK(cudaSetDevice(g));
    for (int h = 0; h < n; h++) if (h != g) CK(cudaDeviceEnablePeerAccess(h, 0));
    CK(cudaMalloc(&src[g], total));
    CK(cudaMalloc(&dst[g], total));
    CK(cudaMemset(src[g], g + 1, total));
    for (int h = 0; h < n; h++) CK(cudaStreamCreateWithFlags(&st[g][h], cudaStreamNonBlocking));
  }
  auto sync = [&] { for (int g = 0; g < n; g++) { CK(cudaSetDevice(g)); CK(cudaDeviceSynchronize()); } };
  const char* names[4] = {"ce-pull", "ce-push", "sm-pull", "sm-push"};
  printf("%d GPUs, %zu MiB per GPU, pieces of %zu MiB (%d of them cross), %d blocks per copy kernel\n",
         n, mib, piece >> 20, n * (n - 1), blocks);
  for (int mode = 0; mode < 4; mode++) {
    std::vector<double> ms;
    for (int rep = 0; rep < 6; rep++) {
      sync();
      auto t0 = std::chrono::steady_clock::now();
      for (int g = 0; g < n; g++) {  // g: the GPU that issues
        CK(cudaSetDevice(g));
        if (mode < 2) {
          for (int h = 0; h < n; h++) {
            if (h == g) continue;
            if (mode == 0)  // g receives from h
              CK(cudaMemcpyPeerAsync(dst[g] + h * piece, g, src[h] + g * piece, h, piece, st[g][h]));
            else  // g sends to h
              CK(cudaMemcpyPeerAsync(dst[h] + g * piece, h, src[g] + h * piece, g, piece, st[g][h]));
          }
        } else {
          Pieces ps{};
          int k = 0;
          for (int h = 0; h < n; h++) {
            if (h == g) continue;
            if (mode == 2) { ps.src[k] = (const int4*)(src[h] + g * piece); ps.dst[k] = (int4*)(dst[g] + h * piece); }
            else { ps.src[k] = (const int4*)(src[g] + h * piece); ps.dst[k] = (int4*)(dst[h] + g * piece); }
            k++;
          }
          int grid = std::max(k, blocks / k * k);
          copy_pieces<<<grid, 512, 0, st[g][0]>>>(ps, k, piece / 16);
          CK(cudaGetLastError());
        }
      }
      sync();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin() + 1, ms.end());
    double med = ms[3], got = (double)piece * (n - 1);
    // Check: what GPU g got from h is h + 1 everywhere.
    bool ok = true;
    for (int g = 0; g < n && ok; g++) {
      CK(cudaSetDevice(g));
      for (int h = 0; h < n && ok; h++) {
        if (h == g) continue;
        char c[2];
        CK(cudaMemcpy(c, dst[g] + h * piece, 1, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(c + 1, dst[g] + h * piece + piece - 1, 1, cudaMemcpyDeviceToHost));
        ok = c[0] == h + 1 && c[1] == h + 1;
      }
      CK(cudaMemset(dst[g], 0, total));
    }
    printf("%-8s median %.3f ms (best %.3f): each GPU receives %.1f GB/s %s\n", names[mode], med, ms[1],
           got / med / 1e6, ok ? "ok" : "WRONG");
  }
  return 0;
}
