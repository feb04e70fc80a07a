//! The mixed-batch experiment ([`Op::Mixed`], `--preset fig15`): the Stadium
//! paper's Fig. 15, "concurrency efficiency".
//!
//! The paper interleaves inserts and retrievals in slices of about 100k operations, the
//! queries of a slice being keys inserted by the previous slice, one kernel per slice in one
//! stream; the table that cannot mix them runs two kernels per slice (inserts, then finds).
//! It reports (insert duration + find duration) / (mixed duration).
//!
//! Here, per run: `n` fresh unique keys, [`Slicing`] into slices of `s/2` inserts (`s`
//! operations per slice); slice `i` inserts its keys and finds the keys of slice `i - 1`
//! (slice 0 only inserts). Two sequences on the cleared table, each timed as a whole:
//! - **separated**: per slice, an insert batch, then a find batch (two launches);
//! - **mixed**: per slice, one mixed batch ([`MixedRun`]: inserts and finds alternating in
//!   groups of [`MIXED_GROUP`], as the paper batches them so that a warp does one kind).
//!
//! Both do exactly the same operations on the same table states, so `separated / mixed` is the
//! paper's ratio (its insert and find durations add up to the separated sequence). Every run is
//! verified (`bad_mixed`, `bad_separated`): every find of a key inserted by an earlier
//! slice must be found with `value_for(key)`, every insert must be new, `len == n` after each
//! sequence, and all `n` keys must be found afterwards.
//!
//! This file holds the host logic; the runners are `gpu.rs` (a table per variant and load
//! factor, CUDA events around each whole sequence) and `cpu.rs` (the same experiment on
//! [`CpuTable`](warpmap::CpuTable)'s host slices, timed with [`Instant`](std::time::Instant)).

use crate::harness::report::{BenchResult, Measured, OpStats};
use crate::harness::timing::median;
use crate::harness::verify::{bad_hits, Flag};
use crate::harness::workloads::run_seed;
use crate::plan::{Op, Plan};
use rayon::prelude::*;
use std::ops::Range;
use warpmap::key::{Key, Value};
use warpmap::keygen;
use warpmap::status::InsertStatus;
use warpmap::table::MixedOp;
use warpmap::{Error, Result};

pub(crate) mod cpu;
pub(crate) mod gpu;

/// Inserts and finds of a mixed batch alternate in groups of this many (a warp's worth: the
/// paper batches them in groups of 32 "to remove the effect of thread divergence").
pub const MIXED_GROUP: usize = 32;

/// How `n` inserted keys are cut into slices of `per` inserts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slicing {
    /// Keys inserted over all slices.
    pub n: usize,
    /// Inserts per slice (the last slice may have fewer).
    pub per: usize,
}

impl Slicing {
    /// Slices of `slice_ops` operations (`slice_ops / 2` inserts, as many finds) over `n` keys.
    pub fn new(n: usize, slice_ops: usize) -> Result<Self> {
        if n == 0 {
            return Err(Error::invalid(
                "the mixed experiment needs at least one key",
            ));
        }
        if slice_ops < 2 {
            return Err(Error::invalid(format!(
                "a slice of {slice_ops} operations: at least 2 (an insert and a find)"
            )));
        }
        Ok(Slicing {
            n,
            per: slice_ops / 2,
        })
    }

    /// Number of slices.
    pub fn count(&self) -> usize {
        self.n.div_ceil(self.per)
    }

    /// The keys slice `s` inserts (indices into the run's keys).
    pub fn inserts(&self, s: usize) -> Range<usize> {
        (s * self.per).min(self.n)..((s + 1) * self.per).min(self.n)
    }

    /// The keys slice `s` finds: those slice `s - 1` inserted (none for slice 0).
    pub fn finds(&self, s: usize) -> Range<usize> {
        if s == 0 {
            0..0
        } else {
            self.inserts(s - 1)
        }
    }

    /// Finds over all slices: every key but the last slice's, in key order (`0..total_finds`).
    pub fn total_finds(&self) -> usize {
        self.n - self.inserts(self.count() - 1).len()
    }

    /// Operations over all slices (inserts plus finds).
    pub fn total_ops(&self) -> usize {
        self.n + self.total_finds()
    }
}

/// The order of one mixed batch: groups of [`MIXED_GROUP`] inserts and finds alternating
/// (inserts first), the rest of the longer kind at the end. Each entry: the operation and the
/// index of its key in the run's keys.
pub fn mixed_order(inserts: Range<usize>, finds: Range<usize>) -> Vec<(MixedOp, usize)> {
    let mut out = Vec::with_capacity(inserts.len() + finds.len());
    let (mut i, mut f) = (inserts, finds);
    while !i.is_empty() || !f.is_empty() {
        for _ in 0..MIXED_GROUP {
            match i.next() {
                Some(k) => out.push((MixedOp::Insert, k)),
                None => break,
            }
        }
        for _ in 0..MIXED_GROUP {
            match f.next() {
                Some(k) => out.push((MixedOp::Find, k)),
                None => break,
            }
        }
    }
    out
}

/// One run's host data: the keys and values, and every slice's mixed batch, flattened.
pub struct MixedRun<K: Key, V: Value> {
    /// The inserted keys (unique), in slice order.
    pub keys: Vec<K>,
    /// `value_for(key)` of each.
    pub vals: Vec<V>,
    /// The slices.
    pub slicing: Slicing,
    /// Slice `s`'s mixed batch is `off[s]..off[s + 1]` of the arrays below.
    pub off: Vec<usize>,
    /// The mixed batches' operations.
    pub ops: Vec<MixedOp>,
    /// The index in `keys` of each mixed entry's key.
    pub idx: Vec<usize>,
    /// The mixed batches' keys (`keys[idx[j]]`).
    pub mkeys: Vec<K>,
    /// The mixed batches' values (`vals[idx[j]]`; read for inserts only).
    pub mvals: Vec<V>,
}

impl<K: Key, V: Value> MixedRun<K, V> {
    /// `n` unique keys from `seed`, cut into slices of `slice_ops` operations.
    pub fn new(n: usize, slice_ops: usize, seed: u64) -> Result<Self> {
        let slicing = Slicing::new(n, slice_ops)?;
        let keys = keygen::unique::<K>(n, seed)?;
        Ok(Self::from_keys(keys, slicing))
    }

    /// The run for given keys (assumed unique).
    pub fn from_keys(keys: Vec<K>, slicing: Slicing) -> Self {
        let vals = keygen::values_for::<K, V>(&keys);
        let count = slicing.count();
        let mut off = Vec::with_capacity(count + 1);
        off.push(0);
        for s in 0..count {
            off.push(off[s] + slicing.inserts(s).len() + slicing.finds(s).len());
        }
        let total = off[count];
        let mut ops = vec![MixedOp::Insert; total];
        let mut idx = vec![0usize; total];
        // Each slice's order written into its own part of the flat arrays, in parallel.
        let mut parts = Vec::with_capacity(count);
        let (mut o, mut x) = (&mut ops[..], &mut idx[..]);
        for s in 0..count {
            let len = off[s + 1] - off[s];
            let (a, o_rest) = std::mem::take(&mut o).split_at_mut(len);
            let (b, x_rest) = std::mem::take(&mut x).split_at_mut(len);
            (o, x) = (o_rest, x_rest);
            parts.push((s, a, b));
        }
        parts.into_par_iter().for_each(|(s, a, b)| {
            let order = mixed_order(slicing.inserts(s), slicing.finds(s));
            for (j, (op, k)) in order.into_iter().enumerate() {
                a[j] = op;
                b[j] = k;
            }
        });
        let mkeys = idx.par_iter().map(|&i| keys[i]).collect();
        let mvals = idx.par_iter().map(|&i| vals[i]).collect();
        MixedRun {
            keys,
            vals,
            slicing,
            off,
            ops,
            idx,
            mkeys,
            mvals,
        }
    }

    /// Slice `s`'s range in the flattened mixed arrays.
    pub fn batch(&self, s: usize) -> Range<usize> {
        self.off[s]..self.off[s + 1]
    }
}

/// Wrong answers of a mixed sequence, from its flattened outputs: `(finds, inserts)`, finds
/// not found or found with a value other than `value_for(key)` (every find asks for a key an
/// earlier slice inserted), inserts that failed or updated (every key is new).
pub(crate) fn bad_mixed<K: Key, V: Value, F: Flag>(
    run: &MixedRun<K, V>,
    status: &[u32],
    out: &[V],
    found: &[F],
) -> (usize, usize) {
    let m = run.ops.len();
    if status.len() != m || out.len() != m || found.len() != m {
        return (m, m);
    }
    let finds: Vec<usize> = (0..m)
        .into_par_iter()
        .filter(|&j| run.ops[j] == MixedOp::Find)
        .collect();
    let fk: Vec<K> = finds.par_iter().map(|&j| run.mkeys[j]).collect();
    let fo: Vec<V> = finds.par_iter().map(|&j| out[j]).collect();
    let ff: Vec<F> = finds.par_iter().map(|&j| found[j]).collect();
    let bad_finds = bad_hits(&fk, &fo, &ff);
    let bad_inserts = (0..m)
        .into_par_iter()
        .filter(|&j| {
            run.ops[j] == MixedOp::Insert && {
                let st = InsertStatus(status[j]);
                st.is_failure() || st.was_update()
            }
        })
        .count();
    (bad_finds, bad_inserts)
}

/// Wrong answers of a separated sequence's finds, flattened in key order
/// (`0..`[`Slicing::total_finds`]).
pub(crate) fn bad_separated<K: Key, V: Value, F: Flag>(
    run: &MixedRun<K, V>,
    out: &[V],
    found: &[F],
) -> usize {
    let t = run.slicing.total_finds();
    if out.len() != t || found.len() != t {
        return t.max(1);
    }
    bad_hits(&run.keys[..t], out, found)
}

/// The seed of a mixed run: distinct per (type, load factor, slice size, run).
pub(crate) fn mixed_seed(plan: &Plan, type_tag: u64, li: usize, si: usize, r: usize) -> u64 {
    run_seed(plan.seed ^ 0x6d69_7865_6400, type_tag, li * 64 + si, r)
}

/// The mixed row of one (table, load factor, slice size): the mixed sequence's times as the
/// row's, and the separated median beside it.
pub(crate) fn push_row(
    m: &Measured<'_>,
    slice_ops: usize,
    separated_ms: Vec<f64>,
    mixed: OpStats,
    out: &mut Vec<BenchResult>,
) {
    let sep = median(&separated_ms);
    m.push(Op::Mixed, mixed, out);
    if let Some(row) = out.last_mut() {
        row.slice_ops = Some(slice_ops);
        row.separated_ms = Some(sep);
        row.concurrency_efficiency =
            (row.median_ms > 0.0 && sep > 0.0).then(|| sep / row.median_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slicing_covers_every_key_once() {
        let s = Slicing::new(10, 6).unwrap();
        assert_eq!(s.per, 3);
        assert_eq!(s.count(), 4);
        let ins: Vec<Range<usize>> = (0..4).map(|i| s.inserts(i)).collect();
        assert_eq!(ins, vec![0..3, 3..6, 6..9, 9..10]);
        assert_eq!(s.finds(0), 0..0);
        assert_eq!(s.finds(3), 6..9);
        assert_eq!(s.total_finds(), 9);
        assert_eq!(s.total_ops(), 19);
        // Finds over all slices are the keys in order, up to the last slice's.
        let f: Vec<usize> = (0..4).flat_map(|i| s.finds(i)).collect();
        assert_eq!(f, (0..9).collect::<Vec<_>>());
        // One slice: inserts only.
        let one = Slicing::new(5, 64).unwrap();
        assert_eq!((one.count(), one.total_finds(), one.total_ops()), (1, 0, 5));
        assert!(Slicing::new(0, 8).is_err());
        assert!(Slicing::new(8, 1).is_err());
    }

    #[test]
    fn mixed_order_alternates_groups_of_32() {
        let o = mixed_order(100..180, 0..50);
        assert_eq!(o.len(), 130);
        let kinds: Vec<MixedOp> = o.iter().map(|e| e.0).collect();
        assert!(kinds[..32].iter().all(|k| *k == MixedOp::Insert));
        assert!(kinds[32..64].iter().all(|k| *k == MixedOp::Find));
        assert!(kinds[64..96].iter().all(|k| *k == MixedOp::Insert));
        assert!(kinds[96..114].iter().all(|k| *k == MixedOp::Find));
        assert!(kinds[114..].iter().all(|k| *k == MixedOp::Insert));
        let mut ins: Vec<usize> = o
            .iter()
            .filter(|e| e.0 == MixedOp::Insert)
            .map(|e| e.1)
            .collect();
        ins.sort_unstable();
        assert_eq!(ins, (100..180).collect::<Vec<_>>());
        let finds: Vec<usize> = o
            .iter()
            .filter(|e| e.0 == MixedOp::Find)
            .map(|e| e.1)
            .collect();
        assert_eq!(finds, (0..50).collect::<Vec<_>>());
        assert!(mixed_order(0..0, 0..0).is_empty());
    }

    #[test]
    fn mixed_run_flattens_the_slices() {
        let run = MixedRun::<u32, u32>::new(1000, 128, 7).unwrap();
        assert_eq!(run.slicing.count(), 16);
        assert_eq!(run.ops.len(), run.slicing.total_ops());
        assert_eq!(*run.off.last().unwrap(), run.ops.len());
        for s in 0..run.slicing.count() {
            let b = run.batch(s);
            let ins = run.ops[b.clone()]
                .iter()
                .filter(|o| **o == MixedOp::Insert)
                .count();
            assert_eq!(ins, run.slicing.inserts(s).len());
            // Every find asks for a key of an earlier slice.
            for j in b {
                assert_eq!(run.mkeys[j], run.keys[run.idx[j]]);
                if run.ops[j] == MixedOp::Find {
                    assert!(run.idx[j] < run.slicing.inserts(s).start);
                }
            }
        }
    }

    /// The oracle catches each kind of wrong answer.
    #[test]
    fn verification_catches_errors() {
        let run = MixedRun::<u64, u64>::new(300, 64, 3).unwrap();
        let m = run.ops.len();
        let vals: Vec<u64> = run.idx.iter().map(|&i| run.vals[i]).collect();
        let mut status = vec![0u32; m];
        let mut out = vals.clone();
        let mut found = vec![1u8; m];
        // Inserts' outputs are ignored by the oracle (the kernels leave them alone).
        for j in 0..m {
            if run.ops[j] == MixedOp::Insert {
                found[j] = 0xaa;
                out[j] = 0;
            }
        }
        assert_eq!(bad_mixed(&run, &status, &out, &found), (0, 0));
        let fj = run.ops.iter().position(|o| *o == MixedOp::Find).unwrap();
        let ij = run.ops.iter().position(|o| *o == MixedOp::Insert).unwrap();
        out[fj] ^= 1;
        assert_eq!(bad_mixed(&run, &status, &out, &found), (1, 0));
        out[fj] ^= 1;
        found[fj] = 0xaa; // unwritten
        assert_eq!(bad_mixed(&run, &status, &out, &found), (1, 0));
        found[fj] = 1;
        status[ij] = warpmap::status::UPDATED;
        assert_eq!(bad_mixed(&run, &status, &out, &found), (0, 1));
        status[ij] = 0xaaaa_aaaa; // unwritten
        assert_eq!(bad_mixed(&run, &status, &out, &found), (0, 1));
        status[ij] = warpmap::status::TABLE_FULL;
        assert_eq!(bad_mixed(&run, &status, &out, &found), (0, 1));
        assert_eq!(bad_mixed(&run, &status[1..], &out, &found), (m, m));

        let t = run.slicing.total_finds();
        let mut sout = run.vals[..t].to_vec();
        let mut sfound = vec![true; t];
        assert_eq!(bad_separated(&run, &sout, &sfound), 0);
        sfound[5] = false;
        sout[7] ^= 2;
        assert_eq!(bad_separated(&run, &sout, &sfound), 2);
        assert!(bad_separated(&run, &sout[1..], &sfound[1..]) > 0);
    }
}
