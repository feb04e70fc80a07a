//! Workloads for tests and benchmarks: key sets and query mixes, deterministic from a seed and
//! generated in parallel (rayon), fast enough for 2^27 keys.
//!
//! Every key comes from one injective map of an index, [`key_at`]: [`Key::from_bits`] of
//! `fmix64(i ^ S)` for keys of 8 bytes or more (wide keys: `from_bits` is injective), and of
//! `fmix32(i ^ S)` for 4-byte keys, where `S` is a mix of the seed. So
//! - [`unique`]`(n, seed)` (indices `0..n`) holds `n` distinct keys by construction;
//! - [`misses`]`(n, seed, inserted_n)` (indices `inserted_n..inserted_n + n`) holds keys that are
//!   guaranteed absent from `unique(inserted_n, seed)`;
//! - [`uniform`] and [`zipf`] draw indices from `0..universe` (with replacement) and map them
//!   through the same bijection, so they draw from the key set `unique(universe, seed)`.
//!
//! Keys may equal the tables' internal sentinel patterns (all ones, all ones minus one); that is
//! intended: every key value is insertable.
//!
//! Values are a function of the key, [`value_for`], so results can be verified without a map.
//!
//! ```
//! use warpmap::keygen;
//! let keys = keygen::unique::<u64>(1000, 7).unwrap();
//! let absent = keygen::misses::<u64>(1000, 7, 1000).unwrap();
//! assert!(absent.iter().all(|k| !keys.contains(k)));
//! let v: u32 = keygen::value_for(keys[0]);
//! assert_eq!(v, keygen::value_for::<u64, u32>(keys[0]));
//! ```

use crate::hash::{fmix32, fmix64, splitmix64, GOLDEN};
use crate::key::{Key, Value};
use crate::{Error, Result};
use rayon::prelude::*;

/// The default Zipf exponent of the benchmarks: `s = 1 + 1e-6` (the WarpDrive paper's Fig. 8).
pub const DEFAULT_ZIPF_S: f64 = 1.0 + 1e-6;

const VALUE_SALT: u64 = 0x5bd1_e995_c2b2_ae35;

/// The index mask `S` of a seed: seeds that differ in a few low bits still give unrelated
/// key sets (a plain `i ^ seed` would map seeds 1 and 2 onto the same set of indices).
///
/// [`key_at`] of a key of 8 bytes is `fmix64(i ^ seed_mask(seed))`; device code that generates
/// the same keys (the benchmark's `wl_keys_seq` kernel) takes this mask as its argument.
///
/// ```
/// use warpmap::{hash::fmix64, keygen};
/// let i = 42;
/// assert_eq!(keygen::key_at::<u64>(i, 7), fmix64(i ^ keygen::seed_mask(7)));
/// ```
#[inline]
pub fn seed_mask(seed: u64) -> u64 {
    splitmix64(seed ^ 0x2545_f491_4f6c_dd1d)
}

/// How many distinct keys a `K` has: `2^32`, `2^64`, `2^96`, and `u128::MAX` (saturated) for
/// keys of 16 bytes or more.
pub fn key_space<K: Key>() -> u128 {
    u32::try_from(8 * K::BYTES)
        .ok()
        .and_then(|shift| 1u128.checked_shl(shift))
        .unwrap_or(u128::MAX)
}

/// How many distinct keys [`key_at`] reaches: the key space, at most `2^64` (one per index).
fn index_space<K: Key>() -> u128 {
    key_space::<K>().min(1u128 << 64)
}

/// The key at index `i` of the seed's key sequence: an injective function of `i` (of
/// `i mod 2^32` for 4-byte keys), so distinct indices give distinct keys.
#[inline]
pub fn key_at<K: Key>(i: u64, seed: u64) -> K {
    let s = seed_mask(seed);
    if K::BYTES >= 8 {
        K::from_bits(fmix64(i ^ s))
    } else {
        K::from_bits(fmix32((i as u32) ^ (s as u32) ^ ((s >> 32) as u32)) as u64)
    }
}

/// The value stored with `key` in tests and benchmarks: a hash of the key's bits.
///
/// For float value types this can be any bit pattern, NaN included: compare bytewise, as
/// [`value_matches`] does. (For wide keys, [`Key::to_bits`] is a digest of every byte.)
#[inline]
pub fn value_for<K: Key, V: Value>(key: K) -> V {
    V::from_bits(fmix64(key.to_bits() ^ VALUE_SALT))
}

/// Whether `v` is `value_for(key)` (bytewise, so NaN patterns compare equal).
#[inline]
pub fn value_matches<K: Key, V: Value>(key: K, v: V) -> bool {
    bytemuck::bytes_of(&v) == bytemuck::bytes_of(&value_for::<K, V>(key))
}

fn check_range<K: Key>(what: &str, first: u64, n: usize) -> Result<()> {
    if first as u128 + n as u128 > index_space::<K>() {
        return Err(Error::invalid(format!(
            "keygen::{what}: indices {first}..{} exceed the {} keys of the {}-byte key sequence",
            first as u128 + n as u128,
            index_space::<K>(),
            K::BYTES
        )));
    }
    Ok(())
}

/// Fills `out[j]` with [`key_at`]`(first_index + j, seed)`, in parallel. Reusing one buffer
/// across runs avoids page faults: `unique_into(buf, 0, seed)` is `unique(buf.len(), seed)`.
pub fn unique_into<K: Key>(out: &mut [K], first_index: u64, seed: u64) -> Result<()> {
    check_range::<K>("unique_into", first_index, out.len())?;
    out.par_iter_mut()
        .with_min_len(1 << 12)
        .enumerate()
        .for_each(|(j, k)| *k = key_at(first_index + j as u64, seed));
    Ok(())
}

/// `n` distinct keys (indices `0..n` of the seed's sequence).
pub fn unique<K: Key>(n: usize, seed: u64) -> Result<Vec<K>> {
    let mut v = vec![K::zeroed(); n];
    unique_into(&mut v, 0, seed)?;
    Ok(v)
}

/// `n` distinct keys, all absent from `unique(inserted_n, seed)` (indices
/// `inserted_n..inserted_n + n`).
pub fn misses<K: Key>(n: usize, seed: u64, inserted_n: usize) -> Result<Vec<K>> {
    let mut v = vec![K::zeroed(); n];
    unique_into(&mut v, inserted_n as u64, seed)?;
    Ok(v)
}

/// Writes `value_for(keys[i])` into `out[i]`, in parallel.
pub fn values_into<K: Key, V: Value>(keys: &[K], out: &mut [V]) -> Result<()> {
    crate::error::check_same_len("keygen::values_into", keys.len(), out.len())?;
    out.par_iter_mut()
        .with_min_len(1 << 12)
        .zip(keys.par_iter())
        .for_each(|(v, &k)| *v = value_for(k));
    Ok(())
}

/// `value_for(k)` for every key.
pub fn values_for<K: Key, V: Value>(keys: &[K]) -> Vec<V> {
    keys.par_iter()
        .with_min_len(1 << 12)
        .map(|&k| value_for(k))
        .collect()
}

/// A counter-based random stream: SplitMix64 started at a point derived from (seed, stream).
/// Streams of different elements are independent for all practical purposes.
#[derive(Clone, Debug)]
pub struct Stream {
    state: u64,
}

impl Stream {
    /// The stream number `stream` of `seed`.
    #[inline]
    pub fn new(seed: u64, stream: u64) -> Self {
        Stream {
            state: fmix64(seed_mask(seed) ^ splitmix64(stream.wrapping_add(GOLDEN))),
        }
    }
    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        splitmix64(self.state)
    }
    /// Uniform in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Uniform in `0..bound` (`bound > 0`), by a 128-bit multiply (bias below 2^-64 * bound).
    #[inline]
    pub fn below(&mut self, bound: u64) -> u64 {
        ((self.next_u64() as u128 * bound as u128) >> 64) as u64
    }
}

fn check_universe<K: Key>(what: &str, universe: u64) -> Result<()> {
    if universe == 0 {
        return Err(Error::invalid(format!(
            "keygen::{what}: the universe must hold at least one key"
        )));
    }
    check_range::<K>(what, 0, usize::try_from(universe).unwrap_or(usize::MAX))
}

/// `n` keys drawn uniformly with replacement from `unique(universe, seed)`.
pub fn uniform<K: Key>(n: usize, universe: u64, seed: u64) -> Result<Vec<K>> {
    check_universe::<K>("uniform", universe)?;
    let salt = seed ^ 0x0f0f_1234_5678_9abc;
    Ok((0..n)
        .into_par_iter()
        .with_min_len(1 << 12)
        .map(|i| key_at(Stream::new(salt, i as u64).below(universe), seed))
        .collect())
}

/// `n` queries sampled uniformly with replacement from `inserted` (all hits).
pub fn hits<K: Copy + Send + Sync>(inserted: &[K], n: usize, seed: u64) -> Result<Vec<K>> {
    if inserted.is_empty() && n > 0 {
        return Err(Error::invalid(
            "keygen::hits: no inserted keys to sample from",
        ));
    }
    let salt = seed ^ 0x7777_aaaa_5555_3333;
    let m = inserted.len() as u64;
    Ok((0..n)
        .into_par_iter()
        .with_min_len(1 << 12)
        .map(|i| inserted[Stream::new(salt, i as u64).below(m) as usize])
        .collect())
}

/// A Zipf distribution on the ranks `1..=universe`: `P(k) ∝ k^-s`.
///
/// Sampling is Hörmann and Derflinger's rejection-inversion ("Rejection-inversion to generate
/// variates from monotone discrete distributions", ACM TOMACS 6(3), 1996), as in Apache
/// Commons RNG's `RejectionInversionZipfSampler`: invert the integral `H` of the continuous hat
/// `h(x) = x^-s`, round to the nearest rank, and accept with a cheap squeeze test or the exact
/// test. It needs O(1) memory and time per draw for any `universe` and any `s > 0` (including
/// `s` at or near 1, through `log1p`/`expm1` helpers); the expected number of uniform draws per
/// sample is below 1.1 for `s ≈ 1`.
#[derive(Clone, Debug)]
pub struct Zipf {
    universe: u64,
    exponent: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    squeeze: f64,
}

impl Zipf {
    /// The distribution on `1..=universe` with exponent `s > 0`.
    pub fn new(universe: u64, s: f64) -> Result<Self> {
        if universe == 0 {
            return Err(Error::invalid(
                "Zipf: the universe must hold at least one rank",
            ));
        }
        if !(s.is_finite() && s > 0.0) {
            return Err(Error::invalid(format!(
                "Zipf: exponent {s} must be finite and > 0"
            )));
        }
        let mut z = Zipf {
            universe,
            exponent: s,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            squeeze: 0.0,
        };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(universe as f64 + 0.5);
        z.squeeze = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        Ok(z)
    }

    /// `h(x) = x^-s`.
    fn h(&self, x: f64) -> f64 {
        (-self.exponent * x.ln()).exp()
    }

    /// `H(x) = (x^(1-s) - 1) / (1 - s)`, `ln x` at `s = 1`, stable near `s = 1`.
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.exponent) * log_x) * log_x
    }

    /// The inverse of `H`.
    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.exponent)).max(-1.0);
        (helper1(t) * x).exp()
    }

    /// One rank in `1..=universe`, from a source of uniform `[0, 1)` numbers.
    #[inline]
    pub fn sample(&self, mut uniform01: impl FnMut() -> f64) -> u64 {
        loop {
            let u = self.h_integral_n + uniform01() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let k = ((x + 0.5) as u64).clamp(1, self.universe);
            let kf = k as f64;
            if kf - x <= self.squeeze || u >= self.h_integral(kf + 0.5) - self.h(kf) {
                return k;
            }
        }
    }
}

/// `ln(1 + x) / x`, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// `(e^x - 1) / x`, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// The Zipf ranks (`1..=universe`) of [`zipf`], without mapping them to keys.
pub fn zipf_ranks(n: usize, universe: u64, s: f64, seed: u64) -> Result<Vec<u64>> {
    let z = Zipf::new(universe, s)?;
    let salt = seed ^ 0x3c6e_f372_fe94_f82b;
    Ok((0..n)
        .into_par_iter()
        .with_min_len(1 << 12)
        .map(|i| {
            let mut r = Stream::new(salt, i as u64);
            z.sample(|| r.next_f64())
        })
        .collect())
}

/// `n` keys drawn with replacement from `unique(universe, seed)` with Zipf frequencies: the key
/// of index `r - 1` has probability `∝ r^-s` (so `unique(universe, seed)[0]` is the most
/// frequent). See [`Zipf`] for the method; `s = `[`DEFAULT_ZIPF_S`] in the benchmarks.
pub fn zipf<K: Key>(n: usize, universe: u64, s: f64, seed: u64) -> Result<Vec<K>> {
    let mut v = vec![K::zeroed(); n];
    zipf_into(&mut v, universe, s, seed)?;
    Ok(v)
}

/// Fills `out` with [`zipf`]`(out.len(), universe, s, seed)`, in parallel, into a buffer the
/// caller reuses (no allocation): element `i` depends only on `(i, universe, s, seed)`.
pub fn zipf_into<K: Key>(out: &mut [K], universe: u64, s: f64, seed: u64) -> Result<()> {
    check_universe::<K>("zipf", universe)?;
    let z = Zipf::new(universe, s)?;
    let salt = seed ^ 0x3c6e_f372_fe94_f82b;
    out.par_iter_mut()
        .with_min_len(1 << 12)
        .enumerate()
        .for_each(|(i, k)| {
            let mut r = Stream::new(salt, i as u64);
            *k = key_at(z.sample(|| r.next_f64()) - 1, seed);
        });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    #[test]
    fn unique_is_distinct_and_deterministic() {
        let a = unique::<u64>(200_000, 1).unwrap();
        let b = unique::<u64>(200_000, 1).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.iter().collect::<HashSet<_>>().len(), a.len());
        let c = unique::<u32>(300_000, 1).unwrap();
        assert_eq!(c.iter().collect::<HashSet<_>>().len(), c.len());
        let d = unique::<i32>(1000, 9).unwrap();
        assert_eq!(d.iter().collect::<HashSet<_>>().len(), d.len());
    }

    #[test]
    fn seeds_give_unrelated_sets() {
        // Seeds that differ in low bits must not reuse the same keys.
        let a: HashSet<u64> = unique::<u64>(10_000, 1).unwrap().into_iter().collect();
        let b = unique::<u64>(10_000, 2).unwrap();
        assert!(b.iter().filter(|k| a.contains(k)).count() == 0);
        let a32: HashSet<u32> = unique::<u32>(10_000, 1).unwrap().into_iter().collect();
        let b32 = unique::<u32>(10_000, 2).unwrap();
        // Random 32-bit sets of 10^4 overlap by about 10^8 / 2^32 ≈ 0.02 keys.
        assert!(b32.iter().filter(|k| a32.contains(k)).count() <= 2);
    }

    #[test]
    fn misses_are_absent() {
        for seed in [0u64, 5, u64::MAX] {
            let ins: HashSet<u32> = unique::<u32>(100_000, seed).unwrap().into_iter().collect();
            let m = misses::<u32>(100_000, seed, 100_000).unwrap();
            assert!(m.iter().all(|k| !ins.contains(k)));
            assert_eq!(m.iter().collect::<HashSet<_>>().len(), m.len());
            let ins64: HashSet<u64> = unique::<u64>(50_000, seed).unwrap().into_iter().collect();
            let m64 = misses::<u64>(70_000, seed, 50_000).unwrap();
            assert!(m64.iter().all(|k| !ins64.contains(k)));
        }
    }

    #[test]
    fn u32_space_is_bounded() {
        assert!(misses::<u32>(2, 0, (1usize << 32) - 1).is_err());
        assert!(uniform::<u32>(1, 1u64 << 33, 0).is_err());
        assert!(uniform::<u64>(1, 0, 0).is_err());
        // 4-byte keys are a bijection of the index mod 2^32.
        assert_eq!(key_at::<u32>(5, 3), key_at::<u32>(5 + (1u64 << 32), 3));
        assert!(unique_into(&mut [0u32; 2], (1u64 << 32) - 2, 3).is_ok());
    }

    #[test]
    fn wide_keys() {
        assert_eq!(key_space::<u64>(), 1u128 << 64);
        assert_eq!(key_space::<[u8; 12]>(), 1u128 << 96);
        assert_eq!(key_space::<u128>(), u128::MAX);
        assert_eq!(key_space::<[u8; 64]>(), u128::MAX);
        let a = unique::<[u8; 32]>(50_000, 3).unwrap();
        assert_eq!(a.iter().collect::<HashSet<_>>().len(), a.len());
        let m = misses::<[u8; 32]>(50_000, 3, 50_000).unwrap();
        let set: HashSet<_> = a.iter().collect();
        assert!(m.iter().all(|k| !set.contains(k)));
        let b = unique::<u128>(10_000, 4).unwrap();
        assert_eq!(b.iter().collect::<HashSet<_>>().len(), b.len());
        // The index sequence has 2^64 keys, even where the key space is larger.
        assert!(unique_into(&mut [[0u8; 16]; 2], u64::MAX - 1, 3).is_ok());
        assert!(unique_into(&mut [[0u8; 16]; 2], u64::MAX, 3).is_err());
        assert!(uniform::<i128>(100, u64::MAX, 5).is_ok());
        let z = zipf::<[u8; 24]>(1000, 100, DEFAULT_ZIPF_S, 6).unwrap();
        let universe: HashSet<_> = unique::<[u8; 24]>(100, 6).unwrap().into_iter().collect();
        assert!(z.iter().all(|k| universe.contains(k)));
        // Values of every width follow their keys.
        let v: Vec<[u8; 256]> = values_for(&a[..100]);
        assert!(a.iter().zip(&v).all(|(&k, &v)| value_matches(k, v)));
        assert!(!value_matches(a[0], v[1]));
    }

    #[test]
    fn values_follow_keys() {
        let k = unique::<u64>(1000, 4).unwrap();
        let v: Vec<u32> = values_for(&k);
        let mut w = vec![0u32; k.len()];
        values_into(&k, &mut w).unwrap();
        assert_eq!(v, w);
        assert!(k.iter().zip(&v).all(|(&k, &v)| value_matches(k, v)));
        let f: f64 = value_for(k[0]);
        assert!(value_matches(k[0], f));
    }

    #[test]
    fn uniform_stays_in_universe() {
        let universe: HashSet<u64> = unique::<u64>(100, 8).unwrap().into_iter().collect();
        let u = uniform::<u64>(10_000, 100, 8).unwrap();
        assert!(u.iter().all(|k| universe.contains(k)));
        // Every key of a 100-key universe shows up in 10^4 draws.
        assert_eq!(u.iter().collect::<HashSet<_>>().len(), 100);
    }

    #[test]
    fn hits_come_from_inserted() {
        let ins = unique::<u32>(1000, 2).unwrap();
        let set: HashSet<u32> = ins.iter().copied().collect();
        let h = hits(&ins, 5000, 11).unwrap();
        assert!(h.iter().all(|k| set.contains(k)));
        assert!(hits::<u32>(&[], 1, 0).is_err());
        assert!(hits::<u32>(&[], 0, 0).unwrap().is_empty());
    }

    #[test]
    fn zipf_skew() {
        let n = 1_000_000usize;
        let universe = 1000u64;
        let s = DEFAULT_ZIPF_S;
        let ranks = zipf_ranks(n, universe, s, 42).unwrap();
        assert!(ranks.iter().all(|&r| (1..=universe).contains(&r)));
        let mut count = vec![0usize; universe as usize + 1];
        for &r in &ranks {
            count[r as usize] += 1;
        }
        let harmonic: f64 = (1..=universe).map(|k| (k as f64).powf(-s)).sum();
        for k in [1usize, 2, 3, 10, 100] {
            let expect = n as f64 * (k as f64).powf(-s) / harmonic;
            let sd = expect.sqrt();
            assert!(
                (count[k] as f64 - expect).abs() < 5.0 * sd + 1.0,
                "rank {k}: {} draws, expected {expect:.0}",
                count[k]
            );
        }
        // Rank 1 about twice rank 2, ten times rank 10.
        assert!((count[1] as f64 / count[2] as f64 - 2.0).abs() < 0.1);
        assert!((count[1] as f64 / count[10] as f64 - 10.0).abs() < 1.0);

        // The keys: the most frequent key is unique(universe, seed)[0].
        let keys = zipf::<u64>(100_000, universe, s, 42).unwrap();
        let mut freq: HashMap<u64, usize> = HashMap::new();
        for k in keys {
            *freq.entry(k).or_default() += 1;
        }
        let top = freq
            .iter()
            .max_by_key(|(_, &c)| c)
            .map(|(&k, _)| k)
            .unwrap();
        assert_eq!(top, unique::<u64>(1, 42).unwrap()[0]);
    }

    #[test]
    fn zipf_into_matches_zipf() {
        let a = zipf::<u32>(10_000, 1 << 20, DEFAULT_ZIPF_S, 9).unwrap();
        let mut b = vec![0u32; 10_000];
        zipf_into(&mut b, 1 << 20, DEFAULT_ZIPF_S, 9).unwrap();
        assert_eq!(a, b);
        // A prefix of a longer draw is the shorter draw.
        let mut c = vec![0u32; 20_000];
        zipf_into(&mut c, 1 << 20, DEFAULT_ZIPF_S, 9).unwrap();
        assert_eq!(&c[..10_000], &a[..]);
        assert!(zipf_into(&mut b, 0, 1.0, 9).is_err());
        assert!(zipf_into::<u32>(&mut b, 1 << 33, 1.0, 9).is_err());
    }

    #[test]
    fn zipf_other_exponents_and_huge_universe() {
        for s in [0.5, 1.0, 1.5, 3.0] {
            let z = Zipf::new(50, s).unwrap();
            let mut r = Stream::new(1, 2);
            let mut c = [0usize; 51];
            for _ in 0..200_000 {
                c[z.sample(|| r.next_f64()) as usize] += 1;
            }
            let ratio = c[1] as f64 / c[2] as f64;
            let expect = 2f64.powf(s);
            assert!(
                (ratio - expect).abs() < 0.1 * expect,
                "s={s}: ratio {ratio}, expect {expect}"
            );
        }
        let z = Zipf::new(u64::MAX, DEFAULT_ZIPF_S).unwrap();
        let mut r = Stream::new(3, 4);
        for _ in 0..1000 {
            let k = z.sample(|| r.next_f64());
            assert!(k >= 1);
        }
        assert!(Zipf::new(10, 0.0).is_err());
        assert!(Zipf::new(0, 1.0).is_err());
    }
}
