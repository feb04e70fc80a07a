//! The concurrent benchmark (slab-hash.txt §VI-C, Fig. 7a): a table built with `n0` keys, then
//! batches of mixed operations, an operation distribution Γ = (a, b, c, d) of inserts of new
//! keys, deletes of present keys, searches of present keys and searches of absent keys, one
//! operation per thread, shuffled so that every warp mixes them, each batch one launch of the
//! mixed kernel (`DeviceHashTable::mixed_device_async`). Fig. 7a plots the rate against the
//! initial memory utilisation for Γ0 = (0.5, 0.5, 0, 0), Γ1 = (0.2, 0.2, 0.3, 0.3) and
//! Γ2 = (0.1, 0.1, 0.4, 0.4); `slab-compare`'s concurrent cell is Γ2 from n0 = 2^24.
//!
//! The batches are made on the host (`next_batch`) from the run's `KeyPool`, all of a run's
//! before its first timed launch and copied to the device (`BatchBuffers`): deletes and
//! hits are distinct present keys (so a search never meets a key its own batch deletes), inserts
//! are keys never inserted before, misses keys never inserted at all (indices from
//! `ABSENT_BASE` = 2^31 of the run's key sequence). Every answer is checked (`check_batch`): every
//! insert new and placed, every delete reported as erased, every hit found with
//! `value_for(key)`, every miss absent; then `len` and (untimed) a search of the batch's
//! inserted keys (found) and deleted keys (absent).

use super::slab_report::{SlabOp, SlabRow};
use super::slab_run::{SlabCx, CALIBRATION_RUN};
use crate::harness::timing::median;
use crate::harness::verify::table_full_is_failure;
use crate::plan::Mix;
use crate::schemes::slab::{self, SlabInfo};
use rayon::prelude::*;
use warpmap::device::DeviceBuffer;
use warpmap::keygen::{self, value_matches, Stream};
use warpmap::status::InsertStatus;
use warpmap::{DeviceHashTable, Error, Gpu, HashTable, Key, MixedOp, Result, Value};

/// The first index of the absent keys in a run's key sequence: far beyond every inserted
/// index (at most 2^28 initial keys plus the batches' inserts), and distinct from them for
/// 4-byte keys too (whose sequence has 2^32 keys).
pub(crate) const ABSENT_BASE: u64 = 1 << 31;

/// The kind of a concurrent operation (the paper's a, b, c, d).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Insert = 0,
    Delete = 1,
    Hit = 2,
    Miss = 3,
}

impl Kind {
    #[cfg(test)]
    const ALL: [Kind; 4] = [Kind::Insert, Kind::Delete, Kind::Hit, Kind::Miss];

    fn op(self) -> MixedOp {
        match self {
            Kind::Insert => MixedOp::Insert,
            Kind::Delete => MixedOp::Erase,
            Kind::Hit | Kind::Miss => MixedOp::Find,
        }
    }
}

/// The keys of a concurrent run: those present in the table, and where new and absent keys
/// come from (indices of the run's key sequence).
pub(crate) struct KeyPool<K> {
    /// The keys in the table (in no order).
    pub present: Vec<K>,
    next_new: u64,
    next_absent: u64,
    seed: u64,
}

impl<K: Key> KeyPool<K> {
    /// `n0` keys of `seed`'s sequence present (indices `0..n0`).
    pub fn new(n0: usize, seed: u64) -> Result<Self> {
        Ok(KeyPool {
            present: keygen::unique::<K>(n0, seed)?,
            next_new: n0 as u64,
            next_absent: ABSENT_BASE,
            seed,
        })
    }

    fn fresh(&mut self, n: usize, absent: bool) -> Result<Vec<K>> {
        let first = if absent {
            &mut self.next_absent
        } else {
            &mut self.next_new
        };
        let mut v = vec![K::zeroed(); n];
        keygen::unique_into(&mut v, *first, self.seed)?;
        *first += n as u64;
        if self.next_new > ABSENT_BASE {
            return Err(Error::invalid("concurrent benchmark: too many inserts"));
        }
        Ok(v)
    }
}

/// One concurrent batch, shuffled.
pub(crate) struct MixedBatch<K, V> {
    /// `MixedOp as u8` per operation.
    pub ops: Vec<u8>,
    /// The [`Kind`] per operation.
    pub kinds: Vec<Kind>,
    pub keys: Vec<K>,
    /// `value_for(key)` (read for inserts only).
    pub vals: Vec<V>,
    /// The keys the batch inserts, then those it deletes (the untimed check after it).
    pub check: Vec<K>,
    /// Inserts in the batch (the first `inserts` of `check`).
    pub inserts: usize,
}

/// The next batch of `counts` = [inserts, deletes, hits, misses] operations from `pool`, which
/// is updated to what the table holds after it (deleted keys out, inserted keys in).
pub(crate) fn next_batch<K: Key, V: Value>(
    pool: &mut KeyPool<K>,
    counts: [usize; 4],
    rng: &mut Stream,
) -> Result<MixedBatch<K, V>> {
    let [ni, nd, nh, nm] = counts;
    let len = pool.present.len();
    if nd + nh > len {
        return Err(Error::invalid(format!(
            "concurrent batch: {nd} deletes and {nh} hits from {len} present keys"
        )));
    }
    // Distinct present keys for the deletes and hits: a partial Fisher-Yates shuffle.
    for i in 0..nd + nh {
        let j = i + rng.below((len - i) as u64) as usize;
        pool.present.swap(i, j);
    }
    let inserted = pool.fresh(ni, false)?;
    let absent = pool.fresh(nm, true)?;
    let deleted: Vec<K> = pool.present[..nd].to_vec();
    let mut entries: Vec<(Kind, K)> = Vec::with_capacity(ni + nd + nh + nm);
    entries.extend(inserted.iter().map(|&k| (Kind::Insert, k)));
    entries.extend(deleted.iter().map(|&k| (Kind::Delete, k)));
    entries.extend(pool.present[nd..nd + nh].iter().map(|&k| (Kind::Hit, k)));
    entries.extend(absent.iter().map(|&k| (Kind::Miss, k)));
    for i in (1..entries.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        entries.swap(i, j);
    }
    // The pool after the batch: inserted keys take the deleted keys' places; deleted keys
    // left over are swapped out from the back (the tail holds kept keys only).
    let replaced = ni.min(nd);
    pool.present[..replaced].copy_from_slice(&inserted[..replaced]);
    for i in (replaced..nd).rev() {
        pool.present.swap_remove(i);
    }
    pool.present.extend_from_slice(&inserted[replaced..]);
    let keys: Vec<K> = entries.iter().map(|e| e.1).collect();
    let mut check = inserted;
    check.extend(deleted);
    Ok(MixedBatch {
        ops: entries.iter().map(|e| e.0.op() as u8).collect(),
        kinds: entries.iter().map(|e| e.0).collect(),
        vals: keygen::values_for(&keys),
        keys,
        check,
        inserts: ni,
    })
}

/// Wrong answers of a batch per [`Kind`]: inserts not new or not placed, deletes not reported,
/// hits not found or with a wrong value, misses found (or unwritten). `status` and `found` as
/// the device writes them (`found`: 1 or 0, anything else unwritten).
pub(crate) fn check_batch<K: Key, V: Value>(
    b: &MixedBatch<K, V>,
    status: &[u32],
    out: &[V],
    found: &[u8],
) -> [usize; 4] {
    let n = b.keys.len();
    if status.len() != n || out.len() != n || found.len() != n {
        return [n; 4];
    }
    let bad: Vec<Option<Kind>> = (0..n)
        .into_par_iter()
        .with_min_len(1 << 12)
        .map(|i| {
            let wrong = match b.kinds[i] {
                Kind::Insert => {
                    let s = InsertStatus(status[i]);
                    s.is_failure() || s.was_update() || s.was_present()
                }
                Kind::Delete => found[i] != 1,
                Kind::Hit => found[i] != 1 || !value_matches(b.keys[i], out[i]),
                Kind::Miss => found[i] != 0,
            };
            wrong.then_some(b.kinds[i])
        })
        .collect();
    let mut c = [0; 4];
    for k in bad.into_iter().flatten() {
        c[k as usize] += 1;
    }
    c
}

/// The table's `pool_count_reads` counter (0 where it has none).
fn pool_count_reads<K: Key, V: Value>(t: &warpmap::Slab<K, V>) -> Result<u64> {
    Ok(t.counters()?
        .iter()
        .find(|(name, _)| *name == "pool_count_reads")
        .map_or(0, |c| c.1))
}

/// The preset: per initial utilisation, a cell per mix.
pub(crate) fn run<K: Key, V: Value>(cx: &mut SlabCx<'_>) -> Result<()> {
    let plan = cx.plan;
    let n0 = plan.sizes()[0];
    let mut cell = 0;
    for &u in &plan.utilizations {
        for &mix in &plan.mixes {
            concurrent_cell::<K, V>(cx, "fig7", n0, u, mix, cell)?;
            cell += 1;
        }
    }
    Ok(())
}

/// One batch's device buffers: its inputs, its outputs, and the check after it.
struct BatchBuffers<K: Key, V: Value> {
    ops: DeviceBuffer<u8>,
    keys: DeviceBuffer<K>,
    vals: DeviceBuffer<V>,
    st: DeviceBuffer<u32>,
    out: DeviceBuffer<V>,
    found: DeviceBuffer<u8>,
    /// The keys the batch inserts, then those it deletes (searched for after it).
    check: DeviceBuffer<K>,
    cout: DeviceBuffer<V>,
    cfound: DeviceBuffer<u8>,
}

impl<K: Key, V: Value> BatchBuffers<K, V> {
    fn new(gpu: &Gpu, ops: usize, checks: usize) -> Result<Self> {
        Ok(BatchBuffers {
            ops: gpu.alloc(ops)?,
            keys: gpu.alloc(ops)?,
            vals: gpu.alloc(ops)?,
            st: gpu.alloc(ops)?,
            out: gpu.alloc(ops)?,
            found: gpu.alloc(ops)?,
            check: gpu.alloc(checks.max(1))?,
            cout: gpu.alloc(checks.max(1))?,
            cfound: gpu.alloc(checks.max(1))?,
        })
    }

    /// Batch `b`'s inputs and check keys in, its outputs poisoned (an unwritten one fails).
    fn upload(&mut self, gpu: &Gpu, b: &MixedBatch<K, V>) -> Result<()> {
        gpu.copy_to_device(&b.ops, &mut self.ops)?;
        gpu.copy_to_device(&b.keys, &mut self.keys)?;
        gpu.copy_to_device(&b.vals, &mut self.vals)?;
        if !b.check.is_empty() {
            gpu.copy_to_device(&b.check, &mut self.check)?;
        }
        gpu.fill_bytes(&mut self.st, 0xaa)?;
        gpu.fill_bytes(&mut self.out, 0xaa)?;
        gpu.fill_bytes(&mut self.found, 0xaa)
    }
}

/// One concurrent cell: a table of `n0` keys at utilisation `target`, then per run
/// `batches_per_run` timed batches of `mix`.
pub(crate) fn concurrent_cell<K: Key, V: Value>(
    cx: &mut SlabCx<'_>,
    experiment: &'static str,
    n0: usize,
    target: f64,
    mix: Mix,
    cell: usize,
) -> Result<()> {
    let (gpu, plan, timer) = (cx.gpu, cx.plan, cx.timer);
    let bops = 1usize << plan.batch_log2[0];
    let per_run = plan.batches_per_run.unwrap_or(1);
    let counts = mix.counts(bops);
    let what = format!(
        "{experiment} {}/{} {} n0 2^{} util {target}",
        K::NAME,
        V::NAME,
        mix.name,
        n0.trailing_zeros()
    );
    cx.say(format!("{what}: choosing the buckets"));
    let (buckets, _) = slab::calibrate::<K, V>(gpu, n0, target, cx.seed(cell, CALIBRATION_RUN))?;
    let mut t = slab::make::<K, V>(gpu, n0, buckets)?;
    slab::warm_up(gpu, &mut t, timer, plan.seed)?;

    let mut d0k = gpu.alloc::<K>(n0)?;
    let mut d0v = gpu.alloc::<V>(n0)?;
    let nc = counts[0] + counts[1];
    // Every batch of a run on the device before its first timed launch (inputs, the keys of the
    // check after it, poisoned outputs), and the answers checked after the run: with a batch
    // copied in and the previous one checked just before its start event, the host took a
    // median 27 us from that event to the launch's return, against 19-22 us so (H100 host;
    // 7-9 us for batches of 2^10), and the timed batch pays it (bench/NOTES.md, issue 11).
    let mut bufs = (0..per_run)
        .map(|_| BatchBuffers::<K, V>::new(gpu, bops, nc))
        .collect::<Result<Vec<_>>>()?;
    let (mut st, mut out, mut found) = (vec![0u32; bops], vec![V::zeroed(); bops], vec![0u8; bops]);
    let (mut cout, mut cfound) = (vec![V::zeroed(); nc], vec![0u8; nc]);

    let (mut ms, mut failures) = (Vec::new(), Vec::new());
    // The host's share of a timed batch: from the start event's record to the launch's return.
    let (mut host_us, mut record_us) = (Vec::new(), Vec::new());
    let reads_before = pool_count_reads(&t)?;
    let (mut u0, mut u1) = (Vec::new(), Vec::new());
    let mut first: Option<SlabInfo> = None;
    for r in 0..plan.runs {
        cx.say(format!("{what} run {}/{}: building", r + 1, plan.runs));
        let seed = cx.seed(cell, r);
        let mut pool = KeyPool::<K>::new(n0, seed)?;
        let mut rng = Stream::new(seed, 0x7f7f);
        gpu.copy_to_device(&pool.present, &mut d0k)?;
        gpu.copy_to_device(&keygen::values_for::<K, V>(&pool.present), &mut d0v)?;
        t.clear()?;
        t.insert_device_async(&d0k, &d0v, None)?;
        table_full_is_failure(t.synchronize(), &mut failures, r)?;
        let mut expect = n0;
        let len = t.len()?;
        if len != expect {
            failures.push(format!("run {r}: len {len} after building {n0} keys"));
        }
        let info = slab::info(&t)?;
        u0.push(info.utilization);
        if r == 0 {
            first = Some(info);
        }
        let batches = (0..per_run)
            .map(|_| next_batch::<K, V>(&mut pool, counts, &mut rng))
            .collect::<Result<Vec<_>>>()?;
        for (b, d) in batches.iter().zip(bufs.iter_mut()) {
            d.upload(gpu, b)?;
        }
        gpu.synchronize()?;
        for (bi, (b, d)) in batches.iter().zip(bufs.iter_mut()).enumerate() {
            let host = std::time::Instant::now();
            timer.start()?;
            let recorded = host.elapsed().as_secs_f64() * 1e6;
            t.mixed_device_async(
                &d.ops,
                &d.keys,
                &d.vals,
                &mut d.st,
                &mut d.out,
                &mut d.found,
            )?;
            host_us.push(host.elapsed().as_secs_f64() * 1e6);
            record_us.push(recorded);
            ms.push(timer.stop_ms()?);
            table_full_is_failure(t.synchronize(), &mut failures, r)?;
            expect = expect + counts[0] - counts[1];
            let len = t.len()?;
            if len != expect {
                failures.push(format!("run {r} batch {bi}: len {len}, expected {expect}"));
            }
            // Untimed: the inserted keys are there, the deleted ones gone.
            if nc > 0 {
                gpu.fill_bytes(&mut d.cfound, 0xaa)?;
                t.find_device_async(&d.check, &mut d.cout, &mut d.cfound)?;
                t.synchronize()?;
                gpu.copy_to_host(&d.cout, &mut cout)?;
                gpu.copy_to_host(&d.cfound, &mut cfound)?;
                let ni = b.inserts;
                let bad = (0..nc)
                    .filter(|&i| {
                        if i < ni {
                            cfound[i] != 1 || !value_matches(b.check[i], cout[i])
                        } else {
                            cfound[i] != 0
                        }
                    })
                    .count();
                if bad > 0 {
                    failures.push(format!(
                        "run {r} batch {bi}: {bad} of {nc} inserted keys missing or deleted \
                         keys still found after the batch"
                    ));
                }
            }
        }
        // Every batch's answers, after the run's batches.
        for (bi, (b, d)) in batches.iter().zip(bufs.iter()).enumerate() {
            gpu.copy_to_host(&d.st, &mut st)?;
            gpu.copy_to_host(&d.out, &mut out)?;
            gpu.copy_to_host(&d.found, &mut found)?;
            let bad = check_batch(b, &st, &out, &found);
            if bad.iter().any(|&x| x > 0) {
                failures.push(format!(
                    "run {r} batch {bi}: wrong inserts {}, deletes {}, hits {}, misses {} of \
                     {counts:?}",
                    bad[0], bad[1], bad[2], bad[3]
                ));
            }
        }
        u1.push(slab::info(&t)?.utilization);
    }
    cx.say(format!(
        "{what}: host time per timed batch (start event to launch returned) median {:.1} us \
         (the start event's record {:.1} us); the pool's count read {} times in the cell",
        median(&host_us),
        median(&record_us),
        pool_count_reads(&t)? - reads_before
    ));
    let mut row = SlabRow::new::<K, V>(experiment, SlabOp::Concurrent, n0, bops, &ms, failures);
    row.utilization_target = Some(target);
    row.utilization = Some(median(&u0));
    row.utilization_end = Some(median(&u1));
    row.slab = first;
    row.batch = Some(bops);
    row.batches = Some(per_run);
    row.mix = Some(mix);
    row.memory_bytes = t.memory_bytes();
    cx.push(row);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use warpmap::CpuTable;

    /// The batches on the CPU backend's mixed batch: every check passes on a correct table,
    /// the pool follows the table, and wrong answers are counted.
    #[test]
    fn batches_verify_on_the_cpu_table() {
        let n0 = 4000;
        let mut pool = KeyPool::<u32>::new(n0, 11).unwrap();
        let mut rng = Stream::new(11, 1);
        let mut t = CpuTable::<u32, u32>::new(3 * n0).unwrap();
        let vals: Vec<u32> = keygen::values_for(&pool.present);
        t.insert(&pool.present, &vals).unwrap();
        for (mix, ops) in [(Mix::G0, 1000), (Mix::G1, 1024), (Mix::G2, 999)] {
            let counts = mix.counts(ops);
            let before: HashSet<u32> = pool.present.iter().copied().collect();
            let b = next_batch::<u32, u32>(&mut pool, counts, &mut rng).unwrap();
            assert_eq!(b.keys.len(), ops);
            // Kinds as asked, ops as the kinds say.
            for (k, want) in Kind::ALL.iter().zip(counts) {
                assert_eq!(b.kinds.iter().filter(|x| *x == k).count(), want);
            }
            for (o, k) in b.ops.iter().zip(&b.kinds) {
                assert_eq!(*o, k.op() as u8);
            }
            // Every key at most once; deletes and hits present, inserts and misses not.
            let distinct: HashSet<u32> = b.keys.iter().copied().collect();
            assert_eq!(distinct.len(), ops);
            for (k, kind) in b.keys.iter().zip(&b.kinds) {
                let present = before.contains(k);
                assert_eq!(
                    present,
                    matches!(kind, Kind::Delete | Kind::Hit),
                    "{kind:?}"
                );
            }
            // Shuffled: not all of one kind first.
            let head = &b.kinds[..counts[0].min(ops)];
            assert!(counts[0] == 0 || head.iter().any(|k| *k != Kind::Insert));

            let mops: Vec<MixedOp> = b.kinds.iter().map(|k| k.op()).collect();
            let mut status = vec![InsertStatus(0); ops];
            let mut out = vec![0u32; ops];
            let mut found = vec![false; ops];
            t.mixed_batch(&mops, &b.keys, &b.vals, &mut status, &mut out, &mut found)
                .unwrap();
            let st: Vec<u32> = status.iter().map(|s| s.0).collect();
            let fd: Vec<u8> = found.iter().map(|&f| f as u8).collect();
            assert_eq!(check_batch(&b, &st, &out, &fd), [0; 4], "{}", mix.name);
            // The pool is the table.
            assert_eq!(t.len().unwrap(), pool.present.len());
            let (keys, _) = t.retrieve_all().unwrap();
            let table: HashSet<u32> = keys.into_iter().collect();
            let pooled: HashSet<u32> = pool.present.iter().copied().collect();
            assert_eq!(table, pooled);
            // The check list: inserted keys found, deleted ones absent.
            let f = t.contains(&b.check).unwrap();
            assert!(f[..b.inserts].iter().all(|x| *x) && f[b.inserts..].iter().all(|x| !*x));

            // Wrong answers are counted by kind; unwritten flags count too.
            let mut fd2 = fd.clone();
            let mut st2 = st.clone();
            let mut out2 = out.clone();
            for (i, k) in b.kinds.iter().enumerate() {
                match k {
                    Kind::Insert => st2[i] = warpmap::status::UPDATED,
                    Kind::Delete => fd2[i] = 0xaa,
                    Kind::Hit => out2[i] ^= 1,
                    Kind::Miss => fd2[i] = 1,
                }
            }
            assert_eq!(check_batch(&b, &st2, &out2, &fd2), counts);
        }
    }

    #[test]
    fn unequal_inserts_and_deletes_keep_the_pool() {
        let mut pool = KeyPool::<u64>::new(100, 3).unwrap();
        let mut rng = Stream::new(3, 2);
        let b = next_batch::<u64, u64>(&mut pool, [5, 20, 10, 0], &mut rng).unwrap();
        assert_eq!(pool.present.len(), 85);
        let b2 = next_batch::<u64, u64>(&mut pool, [30, 2, 0, 3], &mut rng).unwrap();
        assert_eq!(pool.present.len(), 113);
        let p: HashSet<u64> = pool.present.iter().copied().collect();
        assert_eq!(p.len(), 113);
        for k in &b.check[b.inserts..] {
            assert!(!p.contains(k), "a deleted key is back");
        }
        for k in &b2.check[..b2.inserts] {
            assert!(p.contains(k));
        }
        assert!(next_batch::<u64, u64>(&mut pool, [0, 100, 100, 0], &mut rng).is_err());
    }
}
