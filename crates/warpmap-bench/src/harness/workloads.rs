//! The key sets of the benchmark runs, generated on the host in parallel into reused buffers
//! (the checks that verify each operation against them are in [`verify`](super::verify)).
//!
//! A `Workload` is one run's set: `n` keys (distinct, or Zipf draws with duplicates), their
//! values `value_for(key)`, optionally `n` keys guaranteed absent, and the number of distinct
//! keys. `Workloads` holds one buffer per run (fixed-keys mode, when they fit in memory: every
//! table of a (type, distribution) then reuses the same sets) or a single buffer that is
//! regenerated when another set is asked for.

use crate::plan::{Distribution, Plan};
use rayon::prelude::*;
use warpmap::key::{Key, Value};
use warpmap::keygen;
use warpmap::Result;

/// The seed of one run: distinct for every (base, table type, load factor, run).
pub(crate) fn run_seed(base: u64, type_tag: u64, lf_index: usize, run: usize) -> u64 {
    use warpmap::hash::fmix64;
    fmix64(fmix64(fmix64(base ^ type_tag) ^ lf_index as u64) ^ (run as u64 + 1))
}

/// Identifies a generated set: its seed and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tag {
    pub seed: u64,
    pub n: usize,
}

/// How sets are drawn.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WorkloadSpec {
    pub dist: Distribution,
    pub misses: bool,
    /// Half-present queries (find_half; needs `misses`).
    pub half: bool,
    pub zipf_universe: u64,
    pub zipf_s: f64,
}

impl WorkloadSpec {
    pub fn new(plan: &Plan, dist: Distribution) -> Self {
        WorkloadSpec {
            dist,
            misses: plan.needs_misses(),
            half: plan.needs_half(),
            zipf_universe: plan.zipf_universe(),
            zipf_s: plan.zipf_s,
        }
    }
}

/// One run's key set.
pub(crate) struct Workload<K, V> {
    pub tag: Option<Tag>,
    /// The keys to insert (and to look up: find_hit, contains, erase).
    pub keys: Vec<K>,
    /// `value_for(keys[i])`.
    pub vals: Vec<V>,
    /// `n` keys absent from `keys` (empty when find_miss is not measured).
    pub miss: Vec<K>,
    /// find_half's queries: `keys[i]` at even `i`, `miss[i]` at odd `i` (empty unless measured).
    pub half: Vec<K>,
    /// Distinct keys among `keys`.
    pub distinct: usize,
}

impl<K: Key, V: Value> Workload<K, V> {
    fn empty() -> Self {
        Workload {
            tag: None,
            keys: Vec::new(),
            vals: Vec::new(),
            miss: Vec::new(),
            half: Vec::new(),
            distinct: 0,
        }
    }
}

/// Resizes `v` to `n` elements, filling new ones in parallel (page faults spread over the
/// threads); keeps the allocation when shrinking.
pub(crate) fn resize_par<T: Copy + Send + Sync>(v: &mut Vec<T>, n: usize, fill: T) {
    if v.len() >= n {
        v.truncate(n);
    } else {
        let extra = n - v.len();
        v.par_extend(rayon::iter::repeat_n(fill, extra));
    }
}

/// The number of distinct keys, by a parallel sort of their bits in `scratch` (reused) and a
/// count of the boundaries. Keys wider than 8 bytes (whose [`Key::to_bits`] is a digest, not
/// injective) are sorted themselves, in a copy of `keys` (`scratch` is not used), so the count
/// is exact for every width.
pub fn distinct_count<K: Key>(keys: &[K], scratch: &mut Vec<u64>) -> usize {
    if keys.is_empty() {
        return 0;
    }
    if K::BYTES > 8 {
        let mut sorted = keys.to_vec();
        sorted.par_sort_unstable();
        return 1 + sorted.par_windows(2).filter(|w| w[0] != w[1]).count();
    }
    scratch.clear();
    scratch.par_extend(keys.par_iter().map(|k| k.to_bits()));
    scratch.par_sort_unstable();
    1 + scratch.par_windows(2).filter(|w| w[0] != w[1]).count()
}

/// The sets of one (type, distribution).
pub(crate) struct Workloads<K, V> {
    spec: WorkloadSpec,
    slots: Vec<Workload<K, V>>,
    scratch: Vec<u64>,
    /// Distinct counts of sets generated before (a regenerated Zipf set skips the sort).
    memo: Vec<(Tag, usize)>,
}

impl<K: Key, V: Value> Workloads<K, V> {
    /// `slots` buffers: one per run to keep every run's set, or 1 to regenerate on demand.
    pub fn new(spec: WorkloadSpec, slots: usize) -> Self {
        Workloads {
            spec,
            slots: (0..slots.max(1)).map(|_| Workload::empty()).collect(),
            scratch: Vec::new(),
            memo: Vec::new(),
        }
    }

    /// Whether run `r`'s set for `tag` is at hand (no generation needed).
    pub fn is_ready(&self, r: usize, tag: Tag) -> bool {
        self.slots[r % self.slots.len()].tag == Some(tag)
    }

    /// Run `r`'s set for `tag`, generated unless its buffer holds it already.
    pub fn get(&mut self, r: usize, tag: Tag) -> Result<&Workload<K, V>> {
        let i = r % self.slots.len();
        if self.slots[i].tag != Some(tag) {
            let known = self.memo.iter().find(|(t, _)| *t == tag).map(|(_, d)| *d);
            let w = &mut self.slots[i];
            generate(&self.spec, w, tag, known, &mut self.scratch)?;
            if known.is_none() {
                self.memo.push((tag, w.distinct));
            }
        }
        Ok(&self.slots[i])
    }

    /// Frees the sort buffer of the distinct counts (when no new set will be counted).
    pub fn release_scratch(&mut self) {
        self.scratch = Vec::new();
    }
}

fn generate<K: Key, V: Value>(
    spec: &WorkloadSpec,
    w: &mut Workload<K, V>,
    tag: Tag,
    known_distinct: Option<usize>,
    scratch: &mut Vec<u64>,
) -> Result<()> {
    let n = tag.n;
    w.tag = None;
    resize_par(&mut w.keys, n, K::zeroed());
    resize_par(&mut w.vals, n, V::zeroed());
    let miss_n = if spec.misses { n } else { 0 };
    resize_par(&mut w.miss, miss_n, K::zeroed());
    match spec.dist {
        Distribution::Unique => {
            keygen::unique_into(&mut w.keys, 0, tag.seed)?;
            keygen::unique_into(&mut w.miss, n as u64, tag.seed)?;
            w.distinct = n;
        }
        Distribution::Zipf => {
            keygen::zipf_into(&mut w.keys, spec.zipf_universe, spec.zipf_s, tag.seed)?;
            // Zipf draws are indices 0..universe of the bijection; these come after it.
            keygen::unique_into(&mut w.miss, spec.zipf_universe, tag.seed)?;
            w.distinct = match known_distinct {
                Some(d) => d,
                None => distinct_count(&w.keys, scratch),
            };
        }
    }
    keygen::values_into(&w.keys, &mut w.vals)?;
    let half_n = if spec.half && spec.misses { n } else { 0 };
    resize_par(&mut w.half, half_n, K::zeroed());
    w.half
        .par_iter_mut()
        .enumerate()
        .with_min_len(1 << 12)
        .for_each(|(i, q)| *q = if i % 2 == 0 { w.keys[i] } else { w.miss[i] });
    w.tag = Some(tag);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::verify::{
        bad_contains, bad_half, bad_hits, bad_misses, check_len_after_insert,
    };
    use crate::plan::{resolve, BenchConfig, Op};
    use std::collections::HashSet;
    use warpmap::keygen::value_matches;
    use warpmap::table::{Backend, HashTable};
    use warpmap::CpuTable;

    fn spec(dist: Distribution) -> WorkloadSpec {
        WorkloadSpec {
            dist,
            misses: true,
            half: true,
            zipf_universe: 1 << 31,
            zipf_s: keygen::DEFAULT_ZIPF_S,
        }
    }

    #[test]
    fn distinct_count_matches_a_hash_set() {
        let mut scratch = Vec::new();
        assert_eq!(distinct_count::<u32>(&[], &mut scratch), 0);
        assert_eq!(distinct_count(&[7u64], &mut scratch), 1);
        assert_eq!(distinct_count(&[3u32, 3, 1, 3, 2, 1], &mut scratch), 3);
        let z = keygen::zipf::<u32>(200_000, 1 << 31, keygen::DEFAULT_ZIPF_S, 5).unwrap();
        let set: HashSet<u32> = z.iter().copied().collect();
        assert_eq!(distinct_count(&z, &mut scratch), set.len());
        // Many duplicates at s = 1 + 1e-6.
        assert!(set.len() < z.len() * 3 / 4, "{} distinct", set.len());
        let z = keygen::zipf::<u64>(100_000, 1 << 31, keygen::DEFAULT_ZIPF_S, 6).unwrap();
        let set: HashSet<u64> = z.iter().copied().collect();
        assert_eq!(distinct_count(&z, &mut scratch), set.len());
        let z = keygen::zipf::<u128>(100_000, 1 << 31, keygen::DEFAULT_ZIPF_S, 7).unwrap();
        let set: HashSet<u128> = z.iter().copied().collect();
        assert!(set.len() < z.len() * 3 / 4, "{} distinct", set.len());
        assert_eq!(distinct_count(&z, &mut scratch), set.len());
        // Wide keys are compared whole: keys that differ only in their high bytes are distinct.
        let lo = 0x1234u128;
        assert_eq!(
            distinct_count(&[lo, lo | (1 << 100), lo, lo | (1 << 64)], &mut scratch),
            3
        );
    }

    #[test]
    fn u128_u64_zipf_workload_is_consistent() {
        let mut ws = Workloads::<u128, u64>::new(spec(Distribution::Zipf), 1);
        let w = ws.get(0, Tag { seed: 4, n: 20_000 }).unwrap();
        let set: HashSet<u128> = w.keys.iter().copied().collect();
        assert_eq!(w.distinct, set.len());
        assert!(w.distinct < w.keys.len());
        assert!(w.miss.iter().all(|k| !set.contains(k)));
        assert!(w
            .keys
            .iter()
            .zip(&w.vals)
            .all(|(&k, &v)| value_matches(k, v)));
        // The high 8 bytes of the keys are not constant: the table sees full-width keys.
        assert!(w.keys.iter().any(|k| (k >> 64) != (w.keys[0] >> 64)));
    }

    #[test]
    fn zipf_workload_is_consistent() {
        let mut ws = Workloads::<u64, u64>::new(spec(Distribution::Zipf), 1);
        let tag = Tag {
            seed: 11,
            n: 50_000,
        };
        let w = ws.get(0, tag).unwrap();
        let set: HashSet<u64> = w.keys.iter().copied().collect();
        assert_eq!(w.distinct, set.len());
        assert_eq!(w.miss.len(), 50_000);
        assert!(w.miss.iter().all(|k| !set.contains(k)));
        assert!(w
            .keys
            .iter()
            .zip(&w.vals)
            .all(|(&k, &v)| value_matches(k, v)));
        let (keys, distinct) = (w.keys.clone(), w.distinct);
        // Another set, then the first again: regenerated identically, distinct from the memo.
        assert!(!ws.is_ready(
            0,
            Tag {
                seed: 12,
                n: 50_000
            }
        ));
        ws.get(
            0,
            Tag {
                seed: 12,
                n: 50_000,
            },
        )
        .unwrap();
        let w = ws.get(0, tag).unwrap();
        assert_eq!((w.keys.clone(), w.distinct), (keys, distinct));
        // Shorter sets reuse the buffers.
        let w = ws.get(1, Tag { seed: 11, n: 1000 }).unwrap();
        assert_eq!(w.keys.len(), 1000);
        assert_eq!(w.vals.len(), 1000);
    }

    #[test]
    fn cached_slots_keep_every_run() {
        let mut ws = Workloads::<u32, u32>::new(spec(Distribution::Unique), 3);
        for r in 0..3 {
            ws.get(
                r,
                Tag {
                    seed: r as u64,
                    n: 100,
                },
            )
            .unwrap();
        }
        for r in 0..3 {
            assert!(ws.is_ready(
                r,
                Tag {
                    seed: r as u64,
                    n: 100
                }
            ));
        }
        let w = ws.get(1, Tag { seed: 1, n: 100 }).unwrap();
        assert_eq!(w.distinct, 100);
        assert_eq!(w.keys, keygen::unique::<u32>(100, 1).unwrap());
        assert_eq!(w.miss, keygen::misses::<u32>(100, 1, 100).unwrap());
    }

    /// The Zipf checks on a real table: every check passes on correct results and catches
    /// the wrong ones.
    #[test]
    fn zipf_verification_helpers() {
        let mut ws = Workloads::<u32, u32>::new(spec(Distribution::Zipf), 1);
        let w = ws.get(0, Tag { seed: 3, n: 40_000 }).unwrap();
        let n = w.keys.len();
        assert!(w.distinct < n);
        let mut t = CpuTable::<u32, u32>::new(w.distinct).unwrap(); // occupancy 1.0
        t.insert(&w.keys, &w.vals).unwrap();
        assert_eq!(
            check_len_after_insert(0, t.len().unwrap(), n, w.distinct),
            None
        );
        let msg = check_len_after_insert(2, n, n, w.distinct).unwrap();
        assert!(msg.contains("run 2") && msg.contains("distinct"), "{msg}");

        let mut out = vec![0u32; n];
        let mut found = vec![false; n];
        assert_eq!(t.find_into(&w.keys, &mut out, &mut found).unwrap(), n);
        assert_eq!(bad_hits(&w.keys, &out, &found), 0);
        out[17] ^= 1;
        found[5] = false;
        assert_eq!(bad_hits(&w.keys, &out, &found), 2);
        // Poisoned device flags count as wrong in both directions.
        let flags: Vec<u8> = vec![1, 1, 0xaa, 0];
        assert_eq!(bad_contains(&flags), 2);
        assert_eq!(bad_misses(&flags), 3);

        t.find_into(&w.miss, &mut out, &mut found).unwrap();
        assert_eq!(bad_misses(&found), 0);
        assert_eq!(bad_contains(&t.contains(&w.keys).unwrap()), 0);
        assert_eq!(t.erase(&w.keys).unwrap(), w.distinct);
        assert_eq!(t.len().unwrap(), 0);
    }

    /// find_half's queries alternate inserted and absent keys, and the check is exact.
    #[test]
    fn half_queries_verify_exactly() {
        for dist in Distribution::ALL {
            let mut ws = Workloads::<u64, u32>::new(spec(dist), 1);
            let w = ws.get(0, Tag { seed: 9, n: 10_001 }).unwrap();
            let n = w.keys.len();
            assert_eq!(w.half.len(), n);
            let present: HashSet<u64> = w.keys.iter().copied().collect();
            for (i, q) in w.half.iter().enumerate() {
                assert_eq!(present.contains(q), i % 2 == 0, "{dist} query {i}");
            }
            let mut t = CpuTable::<u64, u32>::new(2 * n).unwrap();
            t.insert(&w.keys, &w.vals).unwrap();
            let mut out = vec![0u32; n];
            let mut found = vec![false; n];
            let hits = t.find_into(&w.half, &mut out, &mut found).unwrap();
            assert_eq!(hits, n.div_ceil(2));
            assert_eq!(bad_half(&w.keys, &out, &found), 0);
            // A wrong value, a missed hit and a false hit are each counted.
            out[0] ^= 1;
            found[2] = false;
            found[1] = true;
            assert_eq!(bad_half(&w.keys, &out, &found), 3);
            // Device flags: unwritten (poisoned) bytes are wrong in both halves.
            let flags = vec![0xaau8; n];
            assert_eq!(bad_half(&w.keys, &out, &flags), n);
        }
        // Not measured: no queries.
        let mut s = spec(Distribution::Unique);
        s.half = false;
        let mut ws = Workloads::<u32, u32>::new(s, 1);
        assert!(ws.get(0, Tag { seed: 1, n: 10 }).unwrap().half.is_empty());
    }

    #[test]
    fn spec_follows_the_plan() {
        let p = resolve(
            &BenchConfig {
                ops: Some(vec![Op::Insert]),
                ..BenchConfig::default()
            },
            Backend::Cpu,
        )
        .unwrap();
        let s = WorkloadSpec::new(&p, Distribution::Zipf);
        assert!(!s.misses);
        assert_eq!(s.zipf_universe, 1 << 31);
        let mut ws = Workloads::<u32, u32>::new(s, 1);
        assert!(ws.get(0, Tag { seed: 1, n: 10 }).unwrap().miss.is_empty());
    }
}
