//! The mixed-batch experiment on the CPU backend ([`super`] explains it): a
//! [`CpuTable`](warpmap::CpuTable) per load factor, both sequences through host slices, each
//! timed as a whole with [`Instant`].

use super::{bad_mixed, bad_separated, mixed_seed, push_row, MixedRun, Slicing};
use crate::harness::report::{BenchResult, Measured, OpStats, Progress, Roofline, Sink};
use crate::harness::verify::bad_hits;
use crate::plan::{with_kv_types, Distribution, Plan};
use crate::schemes::cpu::make_table;
use std::time::Instant;
use warpmap::status::InsertStatus;
use warpmap::table::{Backend, HashTable};
use warpmap::{Error, Key, Result, Value};

/// The CPU backend's mixed experiment: [`CpuTable`](warpmap::CpuTable) through host slices.
pub(crate) fn run(plan: &Plan, progress: &mut dyn FnMut(Progress)) -> Result<Vec<BenchResult>> {
    let mut sink = Sink::new(progress, (plan.sets() * plan.runs) as u64);
    let roofline = Roofline::default();
    for &ty in &plan.types {
        with_kv_types!(ty, cpu_set(plan, &roofline, &mut sink))?;
    }
    Ok(sink.results)
}

fn cpu_set<K: Key, V: Value>(
    plan: &Plan,
    roofline: &Roofline,
    sink: &mut Sink<'_>,
    type_tag: u64,
) -> Result<()> {
    let n = plan
        .keys()
        .ok_or_else(|| Error::invalid("the mixed experiment needs fixed keys (keys_log2)"))?;
    for (li, &lf) in plan.load_factors.iter().enumerate() {
        let cap = plan.capacity_for(n, n, lf, Distribution::Unique);
        let mut table = make_table::<K, V>(cap)?;
        for (si, &sl) in plan.slice_log2.iter().enumerate() {
            let slice_ops = 1usize << sl;
            let mut sep_ms = Vec::new();
            let mut mixed = OpStats::new();
            for r in 0..plan.runs {
                let run =
                    MixedRun::<K, V>::new(n, slice_ops, mixed_seed(plan, type_tag, li, si, r))?;
                sink.say(format!(
                    "cpu {}/{} lf {lf} slices of {slice_ops} run {}/{}",
                    K::NAME,
                    V::NAME,
                    r + 1,
                    plan.runs
                ));
                let (s_ms, m_ms) = cpu_run_once(table.as_mut(), &run, &mut mixed.failures, r)?;
                sep_ms.push(s_ms);
                mixed.ms.push(m_ms);
                sink.step(format!(
                    "cpu lf {lf} slices of {slice_ops} run {} done",
                    r + 1
                ));
            }
            let m = Measured {
                scheme: table.scheme(),
                backend: Backend::Cpu,
                key_bytes: K::BYTES,
                value_bytes: V::BYTES,
                key_type: K::NAME,
                value_type: V::NAME,
                capacity: table.capacity(),
                group_size: None,
                filter_bits: None,
                memory_bytes: table.memory_bytes(),
                stadium: None,
                n: Slicing::new(n, slice_ops)?.total_ops(),
                load_factor: lf,
                roofline,
                distribution: Distribution::Unique,
                distinct: Vec::new(),
                two_level: None,
                counters: Vec::new(),
            };
            push_row(&m, slice_ops, sep_ms, mixed, &mut sink.results);
        }
    }
    Ok(())
}

/// One verified run of both sequences on the CPU table: (separated ms, mixed ms).
fn cpu_run_once<K: Key, V: Value>(
    table: &mut dyn HashTable<K, V>,
    run: &MixedRun<K, V>,
    failures: &mut Vec<String>,
    r: usize,
) -> Result<(f64, f64)> {
    let sl = run.slicing;
    let n = sl.n;
    let mut ms = [0.0f64; 2];
    // Alternate which sequence goes first between runs.
    for phase in [r % 2, 1 - r % 2] {
        table.clear()?;
        if phase == 0 {
            let t = sl.total_finds();
            let mut out = vec![V::zeroed(); t];
            let mut found = vec![false; t];
            let mut failed = 0;
            let start = Instant::now();
            for s in 0..sl.count() {
                let ins = sl.inserts(s);
                let st = table.insert_with_status(
                    &run.keys[ins.clone()],
                    &run.vals[ins],
                    &mut vec![InsertStatus::default(); sl.inserts(s).len()],
                )?;
                failed += st;
                let f = sl.finds(s);
                table.find_into(&run.keys[f.clone()], &mut out[f.clone()], &mut found[f])?;
            }
            ms[0] = start.elapsed().as_secs_f64() * 1e3;
            let bad = bad_separated(run, &out, &found);
            if failed > 0 || bad > 0 {
                failures.push(format!(
                    "run {r} separated: {failed} inserts failed, {bad} of {t} finds wrong"
                ));
            }
        } else {
            let m = run.ops.len();
            let mut status = vec![InsertStatus(0xaaaa_aaaa); m];
            let mut out = vec![V::zeroed(); m];
            let mut found = vec![false; m];
            let start = Instant::now();
            for s in 0..sl.count() {
                let b = run.batch(s);
                table.mixed_batch(
                    &run.ops[b.clone()],
                    &run.mkeys[b.clone()],
                    &run.mvals[b.clone()],
                    &mut status[b.clone()],
                    &mut out[b.clone()],
                    &mut found[b],
                )?;
            }
            ms[1] = start.elapsed().as_secs_f64() * 1e3;
            let raw: Vec<u32> = status.iter().map(|s| s.0).collect();
            let (bf, bi) = bad_mixed(run, &raw, &out, &found);
            if bf > 0 || bi > 0 {
                failures.push(format!(
                    "run {r} mixed: {bf} finds wrong, {bi} inserts not new"
                ));
            }
            let mut out = vec![V::zeroed(); n];
            let mut found = vec![false; n];
            table.find_into(&run.keys, &mut out, &mut found)?;
            let bad = bad_hits(&run.keys, &out, &found);
            if bad > 0 {
                failures.push(format!(
                    "run {r}: {bad} of {n} keys not found after the mixed sequence"
                ));
            }
        }
        let len = table.len()?;
        if len != n {
            failures.push(format!(
                "run {r} {}: len {len} after inserting {n} keys",
                if phase == 0 { "separated" } else { "mixed" }
            ));
        }
    }
    Ok((ms[0], ms[1]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{resolve, BenchConfig, KvType, Op};

    /// The whole experiment on the CPU backend: verified rows with the mixed fields.
    #[test]
    fn cpu_mixed_experiment_verifies() {
        let cfg = BenchConfig {
            force_cpu: true,
            keys_log2: Some(12),
            runs: Some(2),
            load_factors: Some(vec![0.5, 0.95]),
            ops: Some(vec![Op::Mixed]),
            slice_log2: Some(vec![7, 10]),
            types: Some(vec![KvType::U32, KvType::U64B32]),
            ..Default::default()
        };
        let plan = resolve(&cfg, Backend::Cpu).unwrap();
        assert_eq!(plan.sets(), 2 * 2 * 2);
        let rows = run(&plan, &mut |_| {}).unwrap();
        assert_eq!(rows.len(), 8);
        for r in &rows {
            assert!(r.verified, "{:?}", r.failures);
            assert_eq!(r.op, Op::Mixed);
            assert_eq!(r.runs, 2);
            let so = r.slice_ops.unwrap();
            assert!(so == 128 || so == 1024);
            assert_eq!(r.n, Slicing::new(4096, so).unwrap().total_ops());
            let e = r.concurrency_efficiency.unwrap();
            assert!(e > 0.0 && e.is_finite());
            assert!((e - r.separated_ms.unwrap() / r.median_ms).abs() < 1e-12);
        }
        assert!(rows.iter().any(|r| r.value_bytes == 32 && r.key_bytes == 8));
    }
}
