//! DyCuckoo's host-side rules, free of any GPU so that they are tested everywhere: the subtables'
//! sizes and which one a resize changes (§5.1), the fill-factor bounds that trigger resizes, the
//! insert distribution of Theorem 1 (§5.2), and the host twin of the subtables' universal hash
//! (§4.1), which `kernels/dycuckoo.cu` computes the same way.
//!
//! ```
//! use warpmap::table::dycuckoo::policy::{plan_downsizes, plan_upsizes, Geometry};
//! // Three subtables of 4 buckets of 32 slots: 384 slots.
//! let g = Geometry::new(vec![4, 4, 4], 32);
//! // 340 keys stored and 40 coming exceed 0.9 × 384: double subtable 0 (the smallest, first).
//! assert_eq!(plan_upsizes(&g, 340, 40, 0.9, usize::MAX), vec![0]);
//! // After erases, 100 keys in (8, 4, 4) are below 0.4 × 512: halve the largest subtable
//! // (the last of equals) until the fill is at least 0.4: (4, 4, 4), (4, 4, 2), (4, 2, 2),
//! // (2, 2, 2), 192 slots.
//! let g = Geometry::new(vec![8, 4, 4], 32);
//! assert_eq!(plan_downsizes(&g, 100, 0.4, 0.9, 0), vec![0, 2, 1, 0]);
//! ```

use crate::hash::splitmix64;

/// The most subtables a table may have (the kernels' view holds this many).
pub const MAX_SUBTABLES: usize = 8;
/// Bytes of keys in a bucket: one 128-byte line, read by a warp in one coalesced load.
pub const BUCKET_KEY_BYTES: usize = 128;

/// Slots per bucket for keys of `key_bytes` bytes: 32 four-byte keys or 16 eight-byte keys.
pub fn slots_per_bucket(key_bytes: usize) -> usize {
    BUCKET_KEY_BYTES / key_bytes
}

/// The prime of the universal hash for keys of `key_bytes` bytes: 2^32 − 5 for 4-byte keys (so
/// that `a k + b` fits 64 bits), the Mersenne prime 2^61 − 1 for 8-byte keys.
pub fn prime(key_bytes: usize) -> u64 {
    if key_bytes == 4 {
        4_294_967_291
    } else {
        (1 << 61) - 1
    }
}

/// The paper's universal hash before the bucket is taken: `(a k + b) mod p` (exact, in 128-bit
/// arithmetic; the kernels reach the same number by other means). `key_bits` is the key's bits
/// (a 4-byte key in the low 32).
pub fn universal_hash(key_bits: u64, a: u64, b: u64, key_bytes: usize) -> u64 {
    let p = prime(key_bytes) as u128;
    let k = if key_bytes == 4 {
        key_bits & 0xffff_ffff
    } else {
        key_bits
    };
    ((a as u128 * k as u128 + b as u128) % p) as u64
}

/// The bucket of a hash in a subtable of `buckets` buckets: `h mod buckets`. Doubling a
/// subtable sends the keys of bucket `loc` to `loc` or `loc + buckets`, and halving it merges
/// those two (§5.3).
pub fn bucket_of(h: u64, buckets: u64) -> u64 {
    h % buckets
}

/// The hash parameters `(a, b)` of each of `subtables` subtables, from `seed`: `a` in
/// `[1, p)`, `b` in `[0, p)`.
pub fn hash_parameters(seed: u64, subtables: usize, key_bytes: usize) -> Vec<(u64, u64)> {
    let p = prime(key_bytes);
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(crate::hash::GOLDEN);
        splitmix64(state)
    };
    (0..subtables)
        .map(|_| (1 + next() % (p - 1), next() % p))
        .collect()
}

/// The seed of the hash that draws a key's target subtable (independent of the subtables'
/// hashes).
pub fn choice_seed(seed: u64) -> u64 {
    splitmix64(seed ^ 0x5bd1_e995_5bd1_e995)
}

/// The subtables' sizes in buckets, and the slots of a bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    buckets: Vec<u64>,
    slots: usize,
}

impl Geometry {
    /// Subtables of these bucket counts (each at least 1), buckets of `slots` slots.
    pub fn new(buckets: Vec<u64>, slots: usize) -> Self {
        Geometry {
            buckets: buckets.into_iter().map(|b| b.max(1)).collect(),
            slots,
        }
    }

    /// `subtables` equal subtables of at least `capacity` slots together (at least one bucket
    /// each).
    pub fn for_capacity(capacity: usize, subtables: usize, slots: usize) -> Self {
        let per = (capacity as u64)
            .div_ceil(subtables as u64 * slots as u64)
            .max(1);
        Geometry::new(vec![per; subtables], slots)
    }

    /// Each subtable's buckets.
    pub fn buckets(&self) -> &[u64] {
        &self.buckets
    }

    /// Slots per bucket.
    pub fn slots_per_bucket(&self) -> usize {
        self.slots
    }

    /// Slots of all subtables: the table's capacity (saturating at `usize::MAX`).
    pub fn capacity(&self) -> usize {
        let buckets = self.buckets.iter().fold(0u64, |a, &b| a.saturating_add(b));
        usize::try_from(buckets.saturating_mul(self.slots as u64)).unwrap_or(usize::MAX)
    }

    /// Whether no subtable is more than twice as large as another (the paper's invariant).
    pub fn is_balanced(&self) -> bool {
        let (min, max) = (self.buckets.iter().min(), self.buckets.iter().max());
        matches!((min, max), (Some(&lo), Some(&hi)) if hi <= 2 * lo)
    }

    /// The subtable an upsize doubles: the smallest (the first of equals).
    pub fn upsize_target(&self) -> usize {
        let min = *self.buckets.iter().min().expect("at least one subtable");
        self.buckets.iter().position(|&b| b == min).unwrap_or(0)
    }

    /// The subtable a downsize halves: the largest (the last of equals, so that a downsize
    /// undoes the last upsize), or `None` when it cannot be halved (one bucket, or an odd
    /// number: its keys would not pair up as `loc` and `loc + n/2`).
    pub fn downsize_target(&self) -> Option<usize> {
        let max = *self.buckets.iter().max()?;
        let i = self.buckets.iter().rposition(|&b| b == max)?;
        (max >= 2 && max % 2 == 0).then_some(i)
    }

    /// This geometry with subtable `i` doubled (saturating).
    pub fn upsized(&self, i: usize) -> Self {
        let mut g = self.clone();
        g.buckets[i] = g.buckets[i].saturating_mul(2);
        g
    }

    /// This geometry with subtable `i` halved.
    pub fn downsized(&self, i: usize) -> Self {
        let mut g = self.clone();
        g.buckets[i] /= 2;
        g
    }
}

/// The keys a table of `capacity` slots holds at fill factor `f` (rounded down).
pub fn keys_at(capacity: usize, f: f64) -> u64 {
    (capacity as f64 * f) as u64
}

/// The upsizes (subtable indexes, in order) after which `stored + incoming` keys fill at most
/// `beta` of the table, each doubling the smallest subtable (§5.1); it stops before a capacity
/// beyond `ceiling` slots, so the fill may stay above `beta`.
pub fn plan_upsizes(
    geometry: &Geometry,
    stored: u64,
    incoming: u64,
    beta: f64,
    ceiling: usize,
) -> Vec<usize> {
    let want = stored.saturating_add(incoming);
    let mut g = geometry.clone();
    let mut plan = Vec::new();
    while want > keys_at(g.capacity(), beta) {
        let i = g.upsize_target();
        let next = g.upsized(i);
        if next.capacity() > ceiling || next.capacity() <= g.capacity() {
            break; // the ceiling, or sizes beyond any memory
        }
        plan.push(i);
        g = next;
    }
    plan
}

/// The downsizes (subtable indexes, in order) after which `stored` keys fill at least `alpha`
/// of the table, each halving the largest subtable (§5.1); it stops before a capacity below
/// `floor` slots, before a fill above `beta`, and at a subtable that cannot be halved.
pub fn plan_downsizes(
    geometry: &Geometry,
    stored: u64,
    alpha: f64,
    beta: f64,
    floor: usize,
) -> Vec<usize> {
    let mut g = geometry.clone();
    let mut plan = Vec::new();
    while (stored as f64) < g.capacity() as f64 * alpha {
        let Some(i) = g.downsize_target() else { break };
        let next = g.downsized(i);
        if next.capacity() < floor || stored > keys_at(next.capacity(), beta) {
            break;
        }
        plan.push(i);
        g = next;
    }
    plan
}

/// Theorem 1's insert distribution: the probability that a new key goes to subtable i,
/// proportional to `n_i / C(m_i, 2)` (`n_i` its slots, `m_i` = `keys[i]` its keys before the
/// batch; `C(m, 2)` taken as at least 1, so empty subtables weigh by their size), 0 for
/// `exclude`. The kernels compute the same in single precision (`dc_weights`).
pub fn insert_weights(geometry: &Geometry, keys: &[u64], exclude: Option<usize>) -> Vec<f64> {
    let w: Vec<f64> = geometry
        .buckets()
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if Some(i) == exclude {
                return 0.0;
            }
            let m = keys.get(i).copied().unwrap_or(0) as f64;
            let pairs = (m * (m - 1.0) / 2.0).max(1.0);
            (b as f64 * geometry.slots_per_bucket() as f64) / pairs
        })
        .collect();
    let total: f64 = w.iter().sum();
    w.into_iter()
        .map(|x| if total > 0.0 { x / total } else { 0.0 })
        .collect()
}

/// The fill bounds `[alpha, beta]` are usable with `subtables` subtables: `0 < alpha < beta <
/// 1`, and `alpha <= beta * d / (d + 1)` (§5.1: an upsize at fill `beta` leaves at least
/// `beta * d / (d + 1)`, which must not be below `alpha`, or the table would shrink right after
/// growing). The reason when not.
pub fn check_fill_bounds(alpha: f64, beta: f64, subtables: usize) -> Result<(), String> {
    if !(alpha > 0.0 && alpha < beta && beta < 1.0) {
        return Err(format!(
            "fill bounds must satisfy 0 < alpha < beta < 1, not alpha {alpha}, beta {beta}"
        ));
    }
    let d = subtables as f64;
    if alpha > beta * d / (d + 1.0) {
        return Err(format!(
            "alpha {alpha} exceeds beta * d / (d + 1) = {:.4} (d = {subtables}): an upsize at \
             fill beta would leave the table below alpha",
            beta * d / (d + 1.0)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_and_primes() {
        assert_eq!(slots_per_bucket(4), 32);
        assert_eq!(slots_per_bucket(8), 16);
        assert_eq!(prime(4), (1u64 << 32) - 5);
        assert_eq!(prime(8), (1u64 << 61) - 1);
    }

    #[test]
    fn hash_parameters_are_in_range_and_differ() {
        for kb in [4, 8] {
            let p = prime(kb);
            let h = hash_parameters(7, 8, kb);
            assert_eq!(h.len(), 8);
            for &(a, b) in &h {
                assert!(a >= 1 && a < p && b < p, "{a} {b}");
            }
            let mut a: Vec<u64> = h.iter().map(|x| x.0).collect();
            a.sort_unstable();
            a.dedup();
            assert_eq!(a.len(), 8, "independent multipliers");
            assert_ne!(hash_parameters(8, 3, kb), hash_parameters(7, 3, kb));
        }
    }

    /// The device computes `(a k + b) mod p` for 8-byte keys by folding with 2^61 ≡ 1; the
    /// same steps in Rust agree with the exact 128-bit result.
    #[test]
    fn mersenne_folding_matches_exact() {
        const P: u64 = (1 << 61) - 1;
        fn fold(x: u64) -> u64 {
            (x & P) + (x >> 61)
        }
        fn device(k: u64, a: u64, b: u64) -> u64 {
            let lo = a.wrapping_mul(k);
            let hi = ((a as u128 * k as u128) >> 64) as u64;
            let mut r = fold(fold(lo) + fold(hi << 3));
            if r >= P {
                r -= P;
            }
            r += b;
            if r >= P {
                r -= P;
            }
            r
        }
        let mut s = 1u64;
        for _ in 0..20_000 {
            s = splitmix64(s);
            let k = s;
            let a = 1 + splitmix64(s ^ 1) % (P - 1);
            let b = splitmix64(s ^ 2) % P;
            assert_eq!(
                device(k, a, b),
                universal_hash(k, a, b, 8),
                "k {k} a {a} b {b}"
            );
        }
        for (k, a, b) in [(u64::MAX, P - 1, P - 1), (0, 1, 0), (P, P - 1, 5)] {
            assert_eq!(device(k, a, b), universal_hash(k, a, b, 8));
        }
    }

    /// The upsize rehash is conflict-free: a key of bucket `loc` goes to `loc` or `loc + n`;
    /// and a downsize merges exactly those two.
    #[test]
    fn doubling_splits_a_bucket_in_two() {
        for kb in [4, 8] {
            let (a, b) = hash_parameters(3, 1, kb)[0];
            for n in [1u64, 3, 7, 64, 1000] {
                for i in 0..2000u64 {
                    let h = universal_hash(splitmix64(i), a, b, kb);
                    let loc = bucket_of(h, n);
                    let up = bucket_of(h, 2 * n);
                    assert!(up == loc || up == loc + n, "n {n}: {loc} -> {up}");
                    assert_eq!(up % n, loc);
                }
            }
        }
    }

    #[test]
    fn geometry_targets() {
        let g = Geometry::for_capacity(1000, 3, 32);
        assert_eq!(g.buckets(), &[11, 11, 11]);
        assert_eq!(g.capacity(), 33 * 32);
        assert_eq!(g.upsize_target(), 0);
        let g = g.upsized(0);
        assert_eq!(g.upsize_target(), 1);
        assert_eq!(g.downsize_target(), Some(0));
        let g = g.upsized(1);
        assert_eq!(g.buckets(), &[22, 22, 11]);
        assert_eq!(g.downsize_target(), Some(1), "the last upsized first");
        assert!(g.is_balanced());
        assert_eq!(Geometry::new(vec![3, 3], 16).downsize_target(), None);
        assert_eq!(Geometry::new(vec![1, 1], 16).downsize_target(), None);
        assert_eq!(Geometry::for_capacity(0, 2, 16).buckets(), &[1, 1]);
    }

    /// Any sequence of upsizes and downsizes keeps every subtable within twice every other.
    #[test]
    fn resizes_keep_the_balance() {
        let mut g = Geometry::new(vec![5; 4], 32);
        let mut s = 9u64;
        for _ in 0..2000 {
            s = splitmix64(s);
            g = if s % 3 == 0 {
                match g.downsize_target() {
                    Some(i) => g.downsized(i),
                    None => g.upsized(g.upsize_target()),
                }
            } else if g.capacity() < 1 << 20 {
                g.upsized(g.upsize_target())
            } else {
                g
            };
            assert!(g.is_balanced(), "{:?}", g.buckets());
            assert!(g.buckets().iter().all(|&b| b >= 5));
        }
    }

    #[test]
    fn growth_plans_reach_beta() {
        let g = Geometry::new(vec![4, 4, 4], 32);
        assert!(plan_upsizes(&g, 100, 200, 0.9, usize::MAX).is_empty());
        let plan = plan_upsizes(&g, 300, 700, 0.9, usize::MAX);
        let mut h = g.clone();
        for &i in &plan {
            assert_eq!(i, h.upsize_target());
            h = h.upsized(i);
        }
        assert!(1000 <= keys_at(h.capacity(), 0.9));
        // One fewer upsize would not do.
        let mut h2 = g.clone();
        for &i in &plan[..plan.len() - 1] {
            h2 = h2.upsized(i);
        }
        assert!(1000 > keys_at(h2.capacity(), 0.9));
        // The ceiling stops it, and so do sizes beyond any memory (no endless loop).
        assert!(plan_upsizes(&g, 300, 700, 0.9, g.capacity()).is_empty());
        let huge = plan_upsizes(&g, u64::MAX, u64::MAX, 0.9, usize::MAX);
        assert!(!huge.is_empty() && huge.len() < 3 * 64);
        assert_eq!(
            Geometry::new(vec![u64::MAX / 2; 3], 32).capacity(),
            usize::MAX
        );
    }

    #[test]
    fn shrink_plans_respect_alpha_beta_and_floor() {
        let g = Geometry::new(vec![16, 16, 8], 32); // 1280 slots
        let plan = plan_downsizes(&g, 200, 0.4, 0.9, 0);
        let mut h = g.clone();
        for &i in &plan {
            h = h.downsized(i);
            assert!(h.is_balanced());
        }
        assert!(200.0 >= h.capacity() as f64 * 0.4 || h.downsize_target().is_none());
        assert!(200 <= keys_at(h.capacity(), 0.9));
        // The floor stops at the configured capacity.
        let floored = plan_downsizes(&g, 10, 0.4, 0.9, 1000);
        let mut h = g.clone();
        for &i in &floored {
            h = h.downsized(i);
        }
        assert!(h.capacity() >= 1000);
        assert!(plan_downsizes(&g, 600, 0.4, 0.9, 0).is_empty(), "fill 0.47");
    }

    /// What lets the table skip the read of its counts after an erase (`may_shrink` in
    /// mod.rs): more keys never give a downsize where fewer give none.
    #[test]
    fn more_keys_never_shrink_where_fewer_do_not() {
        let geometries = [
            Geometry::new(vec![16, 16, 8], 32),
            Geometry::new(vec![64, 64, 64, 64], 32),
            Geometry::new(vec![1024, 512, 512], 16),
            Geometry::new(vec![3, 2, 2, 2], 32),
        ];
        for g in &geometries {
            let cap = g.capacity() as u64;
            for (alpha, beta) in [(0.4, 0.9), (0.3, 0.85), (0.6, 0.95)] {
                for floor in [0, g.capacity() / 3] {
                    let step = (cap / 97).max(1);
                    let plans: Vec<bool> = (0..=cap)
                        .step_by(step as usize)
                        .map(|k| plan_downsizes(g, k, alpha, beta, floor).is_empty())
                        .collect();
                    // Once empty, empty for every larger count.
                    if let Some(first) = plans.iter().position(|&e| e) {
                        assert!(
                            plans[first..].iter().all(|&e| e),
                            "{:?} alpha {alpha} beta {beta} floor {floor}",
                            g.buckets()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn theorem_1_weights() {
        let g = Geometry::new(vec![8, 4, 4], 32);
        // Empty: proportional to size.
        let w = insert_weights(&g, &[0, 0, 0], None);
        assert!((w[0] - 0.5).abs() < 1e-12 && (w[1] - 0.25).abs() < 1e-12);
        // Equal counts: the doubled subtable twice as likely (§5.3).
        let w = insert_weights(&g, &[100, 100, 100], None);
        assert!((w[0] / w[1] - 2.0).abs() < 1e-9);
        // n_i / C(m_i, 2).
        let w = insert_weights(&g, &[200, 100, 50], None);
        let raw = [256.0 / 19900.0, 128.0 / 4950.0, 128.0 / 1225.0];
        let t: f64 = raw.iter().sum();
        for i in 0..3 {
            assert!((w[i] - raw[i] / t).abs() < 1e-12);
        }
        let w = insert_weights(&g, &[200, 100, 50], Some(2));
        assert_eq!(w[2], 0.0);
        assert!((w[0] + w[1] - 1.0).abs() < 1e-12);
    }

    #[test]
    fn fill_bounds() {
        assert!(check_fill_bounds(0.4, 0.9, 3).is_ok());
        assert!(check_fill_bounds(0.675, 0.9, 3).is_ok());
        assert!(check_fill_bounds(0.7, 0.9, 3).is_err());
        assert!(check_fill_bounds(0.5, 0.4, 3).is_err());
        assert!(check_fill_bounds(0.0, 0.9, 3).is_err());
        assert!(check_fill_bounds(0.4, 1.0, 3).is_err());
        assert!(check_fill_bounds(f64::NAN, 0.9, 3).is_err());
    }
}
