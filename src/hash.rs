//! Host twins of the device hash functions in `kernels/common/hash.cuh`. The CPU backend and the
//! tests use these; a test compares them against known values that the kernels also produce.

/// The default hash seed of every table (GPU schemes and the CPU backend).
pub const DEFAULT_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// The golden-ratio increment of SplitMix64 (and the chaining constant of wide-key hashing).
pub const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's output function (a bijection on `u64`, distinct from [`fmix64`]).
#[inline]
pub fn splitmix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// MurmurHash3's 64-bit finaliser (`fmix64`): a fast, well-mixing bijection on `u64`.
#[inline]
pub fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// MurmurHash3's 32-bit finaliser (`fmix32`).
#[inline]
pub fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// Thomas Mueller's 32-bit integer hash (`wm_mueller32`), the WarpDrive paper's second function.
#[inline]
pub fn mueller32(mut x: u32) -> u32 {
    x = ((x >> 16) ^ x).wrapping_mul(0x045d_9f3b);
    x = ((x >> 16) ^ x).wrapping_mul(0x045d_9f3b);
    (x >> 16) ^ x
}

/// Mueller's 64-bit variant (`wm_mueller64`; the SplitMix64 finaliser constants).
#[inline]
pub fn mueller64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The hash functions a table can use (the `WM_HASH` define of the kernels).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HashFunction {
    /// MurmurHash3's finaliser (`fmix32` / `fmix64`), the default.
    #[default]
    Murmur3,
    /// Mueller's hash (`mueller32` / `mueller64`).
    Mueller,
}

impl HashFunction {
    /// Both functions.
    pub const ALL: [HashFunction; 2] = [HashFunction::Murmur3, HashFunction::Mueller];

    /// The value of the kernels' `WM_HASH` define.
    pub fn define(self) -> u32 {
        match self {
            HashFunction::Murmur3 => 0,
            HashFunction::Mueller => 1,
        }
    }
}

/// The two 32-bit hashes the kernels derive from a key (`wm_hash_pair`): the first picks the
/// first window, the second the double-hashing step. 4-byte keys hash `k + seed_lo` and
/// `k + seed_hi` with the 32-bit function; 8-byte keys hash `k ^ seed` once with the 64-bit one.
pub fn hash_pair(bits: u64, key_bytes: usize, seed: u64, f: HashFunction) -> (u32, u32) {
    if key_bytes == 4 {
        let (k, s0, s1) = (bits as u32, seed as u32, (seed >> 32) as u32);
        let h = match f {
            HashFunction::Murmur3 => fmix32,
            HashFunction::Mueller => mueller32,
        };
        return (h(k.wrapping_add(s0)), h(k.wrapping_add(s1)));
    }
    let h = match f {
        HashFunction::Murmur3 => fmix64(bits ^ seed),
        HashFunction::Mueller => mueller64(bits ^ seed),
    };
    (h as u32, (h >> 32) as u32)
}

/// The 64-bit hash of a key wider than 8 bytes, given as its little-endian 32-bit words
/// (`wm_hash_words`): the chosen 64-bit function chained over 8-byte chunks (the last one
/// zero-padded), starting from `seed ^ GOLDEN * words`:
///
/// ```text
/// h = seed ^ (0x9e3779b97f4a7c15 * words)            (wrapping)
/// for each pair of words (lo, hi) (hi = 0 past the end):
///     h = f(h ^ (lo | hi << 32)) + 0x9e3779b97f4a7c15  (wrapping)
/// ```
pub fn hash_words(words: &[u32], seed: u64, f: HashFunction) -> u64 {
    let mut h = seed ^ GOLDEN.wrapping_mul(words.len() as u64);
    for pair in words.chunks(2) {
        let chunk = pair[0] as u64 | (pair.get(1).copied().unwrap_or(0) as u64) << 32;
        let mixed = match f {
            HashFunction::Murmur3 => fmix64(h ^ chunk),
            HashFunction::Mueller => mueller64(h ^ chunk),
        };
        h = mixed.wrapping_add(GOLDEN);
    }
    h
}

/// The 64-bit hash of a key's bit pattern under a seed, as the kernels compute it.
#[inline]
pub fn hash_key(bits: u64, seed: u64) -> u64 {
    fmix64(bits ^ seed)
}

/// Maps a 32-bit hash onto `0..n` without a division: `(h * n) >> 32` (`__umulhi` on the GPU).
#[inline]
pub fn map_to_range(h: u32, n: u32) -> u32 {
    ((h as u64 * n as u64) >> 32) as u32
}

/// The smallest prime `>= n` (n >= 2). Trial division: fast enough for table sizes (< 2^32).
pub fn next_prime(n: u64) -> u64 {
    fn is_prime(n: u64) -> bool {
        if n < 2 {
            return false;
        }
        if n % 2 == 0 {
            return n == 2;
        }
        let mut d = 3;
        while d * d <= n {
            if n % d == 0 {
                return false;
            }
            d += 2;
        }
        true
    }
    let mut p = n.max(2);
    while !is_prime(p) {
        p += 1;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fmix_known_values() {
        // fmix64 is a bijection with fmix64(0) == 0; these constants pin the implementation.
        assert_eq!(fmix64(0), 0);
        assert_eq!(fmix64(1), 0xb456_bcfc_34c2_cb2c);
        assert_eq!(fmix32(1), 0x514e_28b7);
    }

    #[test]
    fn mueller_is_a_bijection_sample() {
        // A bijection maps distinct inputs to distinct outputs: check a dense sample.
        let mut seen: Vec<u32> = (0..1u32 << 16).map(mueller32).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 1 << 16);
        assert_eq!(mueller32(0), 0);
        assert_ne!(mueller64(1), 1);
        let (a, b) = hash_pair(7, 4, DEFAULT_TEST_SEED, HashFunction::Mueller);
        assert_ne!(a, b, "the two translated hashes differ");
    }

    const DEFAULT_TEST_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

    /// `hash_words` is the documented chain (the device's `wm_hash_words` is checked against
    /// it through the multisplit GPU test, tests/multisplit.rs).
    #[test]
    fn hash_words_is_the_documented_chain() {
        let w = [1u32, 2, 3];
        let seed = 0x1234_5678_9abc_def0u64;
        let mut h = seed ^ GOLDEN.wrapping_mul(3);
        h = fmix64(h ^ (1 | 2u64 << 32)).wrapping_add(GOLDEN);
        h = fmix64(h ^ 3).wrapping_add(GOLDEN);
        assert_eq!(hash_words(&w, seed, HashFunction::Murmur3), h);
        assert_ne!(
            hash_words(&w, seed, HashFunction::Mueller),
            hash_words(&w, seed, HashFunction::Murmur3)
        );
        // The word count is part of the hash: a trailing zero word changes it.
        assert_ne!(
            hash_words(&[1, 2, 3, 0], seed, HashFunction::Murmur3),
            hash_words(&w, seed, HashFunction::Murmur3)
        );
    }

    #[test]
    fn primes() {
        assert_eq!(next_prime(0), 2);
        assert_eq!(next_prime(14), 17);
        assert_eq!(next_prime(97), 97);
        assert_eq!(next_prime(1 << 20), 1_048_583);
    }

    #[test]
    fn range_mapping_stays_in_range() {
        for h in [0u32, 1, u32::MAX, 0x8000_0000] {
            assert!(map_to_range(h, 7) < 7);
        }
    }
}
