//! Host twins of the device hash functions in `kernels/common/hash.cuh`. The CPU backend and the
//! tests use these; a test compares them against known values that the kernels also produce.

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
