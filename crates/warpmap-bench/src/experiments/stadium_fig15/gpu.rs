//! The mixed-batch experiment on the GPU ([`super`] explains it): a table per (variant, load
//! factor), and per slice size the runs, each with fresh keys uploaded into per-slice device
//! buffers, then the separated and the mixed sequence timed with CUDA events around the whole
//! sequence, every output downloaded and checked.

use super::{bad_mixed, bad_separated, mixed_seed, push_row, MixedRun, Slicing};
use crate::harness::report::{BenchResult, Measured, OpStats, Progress, Roofline};
use crate::harness::session::{attach_host_bound, run_sets, SetCx};
use crate::harness::timing::warm_up_device;
use crate::harness::verify::{bad_hits, table_full_is_failure};
use crate::plan::{with_kv_types, Distribution, Plan};
use crate::schemes::warpdrive::mixed_unsupported;
use crate::schemes::{build_table, Built, Variant};
use std::sync::Arc;
use warpmap::device::{DeviceBuffer, Timer};
use warpmap::key::{Key, Value};
use warpmap::table::{Backend, DeviceHashTable, MixedOp};
use warpmap::{Error, Gpu, Result};

/// The experiment: the roofline, then every type's tables.
pub(crate) fn run(
    gpu: &Arc<Gpu>,
    plan: &Plan,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Roofline, Vec<BenchResult>)> {
    run_sets(gpu, plan, progress, |cx, ty| {
        with_kv_types!(ty, mixed_set(cx))
    })
}

fn mixed_set<K: Key, V: Value>(cx: &mut SetCx<'_, '_>, type_tag: u64) -> Result<()> {
    let (gpu, plan) = (cx.gpu, cx.plan);
    let per_table = (plan.runs * plan.slice_log2.len()) as u64;
    for variant in plan.variants() {
        let n = plan
            .keys_for_variant(variant, Distribution::Unique)
            .ok_or_else(|| Error::invalid("the mixed experiment needs fixed keys (keys_log2)"))?;
        if matches!(variant, Variant::WarpDrive { .. }) && mixed_unsupported::<K, V>(gpu) {
            cx.sink.done += per_table * plan.load_factors.len() as u64;
            cx.sink.say(format!(
                "warpdrive {}/{}: mixed batches of 16-byte pairs need sm_90; skipped",
                K::NAME,
                V::NAME
            ));
            continue;
        }
        for (li, &lf) in plan.load_factors.iter().enumerate() {
            let cap = plan.capacity_for(n, n, lf, Distribution::Unique);
            cx.sink.say(format!(
                "mixed {}/{} {} lf {lf}: making a table of {cap} slots",
                K::NAME,
                V::NAME,
                variant.name()
            ));
            let mut b = build_table::<K, V>(gpu, plan, variant, cap)?;
            attach_host_bound(cx, &mut b, K::BYTES + V::BYTES)?;
            mixed_table(cx, &mut b, variant, n, li, lf, type_tag)?;
        }
    }
    Ok(())
}

/// One slice's device buffers: its inserts, its finds' outputs (the queries are the previous
/// slice's insert keys), and its mixed batch.
struct DevSlice<K: Key, V: Value> {
    ik: DeviceBuffer<K>,
    iv: DeviceBuffer<V>,
    fout: DeviceBuffer<V>,
    ffound: DeviceBuffer<u8>,
    mops: DeviceBuffer<u8>,
    mk: DeviceBuffer<K>,
    mv: DeviceBuffer<V>,
    mst: DeviceBuffer<u32>,
    mout: DeviceBuffer<V>,
    mfound: DeviceBuffer<u8>,
}

/// Every slice's buffers, plus the outputs of the last slice's keys in the final check.
struct DevSlices<K: Key, V: Value> {
    slices: Vec<DevSlice<K, V>>,
    tail_out: DeviceBuffer<V>,
    tail_found: DeviceBuffer<u8>,
}

impl<K: Key, V: Value> DevSlices<K, V> {
    fn new(gpu: &Gpu, sl: Slicing, run: &MixedRun<K, V>) -> Result<Self> {
        let mut slices = Vec::with_capacity(sl.count());
        for s in 0..sl.count() {
            let (i, f, m) = (
                sl.inserts(s).len(),
                sl.finds(s).len().max(1),
                run.batch(s).len(),
            );
            slices.push(DevSlice {
                ik: gpu.alloc(i)?,
                iv: gpu.alloc(i)?,
                fout: gpu.alloc(f)?,
                ffound: gpu.alloc(f)?,
                mops: gpu.alloc(m)?,
                mk: gpu.alloc(m)?,
                mv: gpu.alloc(m)?,
                mst: gpu.alloc(m)?,
                mout: gpu.alloc(m)?,
                mfound: gpu.alloc(m)?,
            });
        }
        let last = sl.inserts(sl.count() - 1).len();
        Ok(DevSlices {
            slices,
            tail_out: gpu.alloc(last)?,
            tail_found: gpu.alloc(last)?,
        })
    }

    fn upload(&mut self, gpu: &Gpu, run: &MixedRun<K, V>) -> Result<()> {
        let sl = run.slicing;
        for (s, d) in self.slices.iter_mut().enumerate() {
            let i = sl.inserts(s);
            gpu.copy_to_device(&run.keys[i.clone()], &mut d.ik)?;
            gpu.copy_to_device(&run.vals[i], &mut d.iv)?;
            let b = run.batch(s);
            gpu.copy_to_device(
                bytemuck::cast_slice::<MixedOp, u8>(&run.ops[b.clone()]),
                &mut d.mops,
            )?;
            gpu.copy_to_device(&run.mkeys[b.clone()], &mut d.mk)?;
            gpu.copy_to_device(&run.mvals[b], &mut d.mv)?;
        }
        Ok(())
    }
}

/// A small mixed batch through the table: the mixed kernel's first-launch costs.
fn warm_mixed<K: Key, V: Value>(
    gpu: &Gpu,
    t: &mut dyn DeviceHashTable<K, V>,
    n: usize,
    seed: u64,
) -> Result<()> {
    let nw = n.min(1 << 12).min(t.capacity() / 2).max(2);
    let run = MixedRun::<K, V>::new(nw, nw, seed ^ 0x3b3b)?;
    let b = run.batch(0);
    let ops = gpu.upload(bytemuck::cast_slice::<MixedOp, u8>(&run.ops[b.clone()]))?;
    let k = gpu.upload(&run.mkeys[b.clone()])?;
    let v = gpu.upload(&run.mvals[b.clone()])?;
    let mut st = gpu.alloc::<u32>(b.len())?;
    let mut out = gpu.alloc::<V>(b.len())?;
    let mut found = gpu.alloc::<u8>(b.len())?;
    t.mixed_device_async(&ops, &k, &v, &mut st, &mut out, &mut found)?;
    t.synchronize()?;
    t.clear()
}

fn mixed_table<K: Key, V: Value>(
    cx: &mut SetCx<'_, '_>,
    b: &mut Built<K, V>,
    variant: Variant,
    n: usize,
    li: usize,
    lf: f64,
    type_tag: u64,
) -> Result<()> {
    let (gpu, plan, timer) = (cx.gpu, cx.plan, cx.timer);
    let t = b.table.as_mut();
    warm_up_device(gpu, t, timer, n, plan.seed)?;
    warm_mixed(gpu, t, n, plan.seed)?;
    let what = format!("mixed {}/{} {} lf {lf}", K::NAME, V::NAME, variant.name());
    for (si, &sl) in plan.slice_log2.iter().enumerate() {
        let slice_ops = 1usize << sl;
        let mut dev: Option<DevSlices<K, V>> = None;
        let mut sep_ms = Vec::with_capacity(plan.runs);
        let mut mixed = OpStats::new();
        for r in 0..plan.runs {
            cx.sink.say(format!(
                "{what} slices of {slice_ops} run {}/{}: generating {n} keys",
                r + 1,
                plan.runs
            ));
            let run = MixedRun::<K, V>::new(n, slice_ops, mixed_seed(plan, type_tag, li, si, r))?;
            if dev.is_none() {
                dev = Some(DevSlices::new(gpu, run.slicing, &run)?);
            }
            let d = dev.as_mut().expect("made above");
            d.upload(gpu, &run)?;
            let (s_ms, m_ms) = run_once(gpu, t, timer, &run, d, &mut mixed.failures, r)?;
            sep_ms.push(s_ms);
            mixed.ms.push(m_ms);
            cx.sink.step(format!(
                "{what} slices of {slice_ops} run {}/{} done",
                r + 1,
                plan.runs
            ));
        }
        let m = Measured {
            scheme: t.scheme(),
            backend: Backend::Gpu,
            key_bytes: K::BYTES,
            value_bytes: V::BYTES,
            key_type: K::NAME,
            value_type: V::NAME,
            capacity: t.capacity(),
            group_size: b.group_size,
            filter_bits: b.filter_bits,
            memory_bytes: t.memory_bytes(),
            stadium: b.stadium.clone(),
            n: Slicing::new(n, slice_ops)?.total_ops(),
            load_factor: lf,
            roofline: cx.roofline,
            distribution: Distribution::Unique,
            distinct: Vec::new(),
            two_level: None,
            counters: Vec::new(),
        };
        push_row(&m, slice_ops, sep_ms, mixed, &mut cx.sink.results);
    }
    Ok(())
}

/// One verified run of both sequences (the order alternating with the run): (separated ms,
/// mixed ms).
fn run_once<K: Key, V: Value>(
    gpu: &Gpu,
    t: &mut dyn DeviceHashTable<K, V>,
    timer: &Timer,
    run: &MixedRun<K, V>,
    d: &mut DevSlices<K, V>,
    failures: &mut Vec<String>,
    r: usize,
) -> Result<(f64, f64)> {
    let sl = run.slicing;
    let (n, count) = (sl.n, sl.count());
    let mut ms = [0.0f64; 2];
    for phase in [r % 2, 1 - r % 2] {
        t.clear()?;
        if phase == 0 {
            for x in d.slices.iter_mut() {
                gpu.fill_bytes(&mut x.ffound, 0xaa)?;
            }
            timer.start()?;
            for s in 0..count {
                let (done, rest) = d.slices.split_at_mut(s);
                let cur = &mut rest[0];
                t.insert_device_async(&cur.ik, &cur.iv, None)?;
                if let Some(prev) = done.last() {
                    t.find_device_async(&prev.ik, &mut cur.fout, &mut cur.ffound)?;
                }
            }
            ms[0] = timer.stop_ms()?;
            table_full_is_failure(t.synchronize(), failures, r)?;
            let tf = sl.total_finds();
            let mut out = vec![V::zeroed(); tf];
            let mut found = vec![0u8; tf];
            for s in 1..count {
                let f = sl.finds(s);
                gpu.copy_to_host(&d.slices[s].fout, &mut out[f.clone()])?;
                gpu.copy_to_host(&d.slices[s].ffound, &mut found[f])?;
            }
            let bad = bad_separated(run, &out, &found);
            if bad > 0 {
                failures.push(format!("run {r} separated: {bad} of {tf} finds wrong"));
            }
        } else {
            for x in d.slices.iter_mut() {
                gpu.fill_bytes(&mut x.mst, 0xaa)?;
                gpu.fill_bytes(&mut x.mfound, 0xaa)?;
            }
            timer.start()?;
            for x in d.slices.iter_mut() {
                t.mixed_device_async(
                    &x.mops,
                    &x.mk,
                    &x.mv,
                    &mut x.mst,
                    &mut x.mout,
                    &mut x.mfound,
                )?;
            }
            ms[1] = timer.stop_ms()?;
            table_full_is_failure(t.synchronize(), failures, r)?;
            let m = run.ops.len();
            let mut st = vec![0u32; m];
            let mut out = vec![V::zeroed(); m];
            let mut found = vec![0u8; m];
            for (s, x) in d.slices.iter().enumerate() {
                let b = run.batch(s);
                gpu.copy_to_host(&x.mst, &mut st[b.clone()])?;
                gpu.copy_to_host(&x.mout, &mut out[b.clone()])?;
                gpu.copy_to_host(&x.mfound, &mut found[b])?;
            }
            let (bf, bi) = bad_mixed(run, &st, &out, &found);
            if bf > 0 || bi > 0 {
                failures.push(format!(
                    "run {r} mixed: {bf} finds wrong, {bi} inserts not new (or failed)"
                ));
            }
            // Every key is found afterwards (untimed): slice s's keys into slice s + 1's find
            // outputs (the same length), the last slice's into the tail buffers.
            let mut out = vec![V::zeroed(); n];
            let mut found = vec![0u8; n];
            for s in 0..count {
                let i = sl.inserts(s);
                let (head, tail) = d.slices.split_at_mut(s + 1);
                let keys = &head[s].ik;
                let (o, f) = match tail.first_mut() {
                    Some(next) => (&mut next.fout, &mut next.ffound),
                    None => (&mut d.tail_out, &mut d.tail_found),
                };
                gpu.fill_bytes(f, 0xaa)?;
                t.find_device_async(keys, o, f)?;
                t.synchronize()?;
                gpu.copy_to_host(o, &mut out[i.clone()])?;
                gpu.copy_to_host(f, &mut found[i])?;
            }
            let bad = bad_hits(&run.keys, &out, &found);
            if bad > 0 {
                failures.push(format!(
                    "run {r}: {bad} of {n} keys not found after the mixed sequence"
                ));
            }
        }
        let len = t.len()?;
        if len != n {
            failures.push(format!(
                "run {r} {}: len {len} after inserting {n} keys",
                if phase == 0 { "separated" } else { "mixed" }
            ));
        }
    }
    Ok((ms[0], ms[1]))
}
