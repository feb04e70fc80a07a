// The relational operators' own device steps (host side: src/ops/device.rs), around the hash
// tables' bulk calls: row numbers for a join's build side, the count and sum of a join's
// matches, and the canonical k-mers of reads.
//
//   ops_iota         out[i] = start + i
//   ops_found_sum    over the rows where found[i] != 0: their count, and the sum of
//                    values[index ? index[i] : i] (4- or 8-byte integers, signed or not, summed
//                    in 64 bits with wrap-around) into totals[0] and totals[1]
//   ops_kmers        every k-mer of every read, canonical (the smaller of the k-mer and its
//                    reverse complement, 2 bits a base, A=0 C=1 G=2 T=3), one key per window,
//                    and a count of 1 beside it; a window with a base other than ACGT (either
//                    case) gets the key OPS_NOT_A_KMER (all ones), which no canonical k-mer of
//                    k <= 31 can equal (they fit 62 bits): its count is the windows skipped
//
// No defines: every width is a run-time argument. Grid-stride loops, any grid covers n.

// Sums `v` over the warp; lane 0 gets the total.
__device__ __forceinline__ u64 ops_warp_sum(u64 v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

extern "C" __global__ void ops_iota(u32* __restrict__ out, u64 n, u32 start) {
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    out[i] = start + (u32)i;
  }
}

// The grid's threads walk whole warps' worth of rows so that every lane reaches the shuffles.
extern "C" __global__ void ops_found_sum(const u8* __restrict__ found, const u32* __restrict__ index,
                                        const u8* __restrict__ values, u32 value_bytes, u32 is_signed,
                                        u64 n, u64* __restrict__ totals) {
  u64 count = 0, sum = 0;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    if (found[i] == 0) continue;
    const u64 row = index ? (u64)index[i] : i;
    u64 v;
    if (value_bytes == 8u) {
      v = ((const u64*)values)[row];
    } else {
      const u32 w = ((const u32*)values)[row];
      v = is_signed ? (u64)(i64)(int)w : (u64)w;
    }
    count += 1;
    sum += v;
  }
  count = ops_warp_sum(count);
  sum = ops_warp_sum(sum);
  if ((threadIdx.x & 31u) == 0u && count != 0) {
    atomicAdd((unsigned long long*)&totals[0], (unsigned long long)count);
    atomicAdd((unsigned long long*)&totals[1], (unsigned long long)sum);
  }
}

// 2-bit code of a base, or 4 for anything but A, C, G, T (either case).
__device__ __forceinline__ u32 ops_base_code(u8 b) {
  switch (b | 0x20) {
    case 'a': return 0u;
    case 'c': return 1u;
    case 'g': return 2u;
    case 't': return 3u;
    default: return 4u;
  }
}

#define OPS_NOT_A_KMER 0xffffffffffffffffull

// Reads are `reads` consecutive runs of `read_len` bytes in `bases`; read r's windows are
// keys[r * per_read + p] for p < per_read = read_len - k + 1 (1 <= k <= 31, k <= read_len).
extern "C" __global__ void ops_kmers(const u8* __restrict__ bases, u64 reads, u32 read_len, u32 k,
                                     u64* __restrict__ keys, u32* __restrict__ ones) {
  const u64 per_read = (u64)(read_len - k + 1u);
  const u64 n = reads * per_read;
  const u64 mask = (1ull << (2u * k)) - 1ull;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    const u64 r = i / per_read, p = i - r * per_read;
    const u8* s = bases + r * read_len + p;
    u64 fwd = 0, rev = 0;
    u32 bad = 0;
    for (u32 j = 0; j < k; j++) {
      const u32 c = ops_base_code(s[j]);
      bad |= c >> 2;
      const u64 c2 = (u64)(c & 3u);
      fwd = ((fwd << 2) | c2) & mask;
      rev = (rev >> 2) | ((3ull - c2) << (2u * (k - 1u)));
    }
    keys[i] = bad ? OPS_NOT_A_KMER : (fwd < rev ? fwd : rev);
    ones[i] = 1u;
  }
}
