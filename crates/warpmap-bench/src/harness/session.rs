//! One GPU benchmark session, as every GPU experiment runs it: the in-run roofline first, then
//! the plan's sets with one CUDA-event timer, and the out-of-core bound of each host-bucket
//! table size measured once, before the first table of that size is timed, and kept in the
//! report's roofline ([`Roofline::host_bounds`]).

use super::report::{BenchResult, HostBound, Progress, Roofline, Sink};
use super::roofline::{self, RooflineConfig};
use crate::plan::{KvType, Plan};
use crate::schemes::Built;
use std::sync::Arc;
use warpmap::device::Timer;
use warpmap::table::stadium::Location;
use warpmap::{Gpu, Key, Result, Value};

/// What every set of a run shares.
pub(crate) struct SetCx<'a, 'b> {
    pub gpu: &'a Arc<Gpu>,
    pub plan: &'a Plan,
    pub roofline: &'a Roofline,
    pub sink: &'a mut Sink<'b>,
    pub timer: &'a Timer,
    /// The host bounds measured so far (one per table size and record size).
    pub bounds: &'a mut Vec<HostBound>,
}

/// The host bound of a host-bucket table of `bytes` bytes of `record_bytes`-byte records:
/// measured on first use, then reused for tables of the same size.
pub(crate) fn host_bound(
    cx: &mut SetCx<'_, '_>,
    bytes: u64,
    record_bytes: usize,
) -> Result<HostBound> {
    let words = (record_bytes / 4).max(1) as u64;
    let want = bytes / (4 * words) * 4 * words;
    if let Some(b) = cx
        .bounds
        .iter()
        .find(|b| b.bytes == want && b.record_bytes == record_bytes)
    {
        return Ok(b.clone());
    }
    let ops = roofline::host_bound_ops(cx.plan.quick, bytes / (4 * words));
    cx.sink.say(format!(
        "host bound: {} MiB of {record_bytes}-byte records in pinned host memory, {ops} random \
         writes and reads per kernel",
        bytes >> 20
    ));
    let b = roofline::measure_host_bound(
        cx.gpu,
        bytes,
        record_bytes,
        ops,
        cx.plan.runs,
        warpmap::device::DEFAULT_HOST_PAGES,
    )?;
    cx.bounds.push(b.clone());
    Ok(b)
}

/// Measures and attaches the host bound of a host-bucket Stadium table (`record_bytes` per
/// bucket); other tables are left as they are.
pub(crate) fn attach_host_bound<K: Key, V: Value>(
    cx: &mut SetCx<'_, '_>,
    b: &mut Built<K, V>,
    record_bytes: usize,
) -> Result<()> {
    if let Some(st) = b.stadium.as_mut() {
        if st.location == Location::Host {
            st.bound = Some(host_bound(cx, st.host_memory_bytes as u64, record_bytes)?);
        }
    }
    Ok(())
}

/// The session: the roofline (three steps of progress), then `per_type` once per key/value
/// type of the plan with the shared context. Returns the roofline, with the host bounds the
/// sets measured, and every row.
pub(crate) fn run_sets(
    gpu: &Arc<Gpu>,
    plan: &Plan,
    progress: &mut dyn FnMut(Progress),
    mut per_type: impl FnMut(&mut SetCx<'_, '_>, KvType) -> Result<()>,
) -> Result<(Roofline, Vec<BenchResult>)> {
    let rcfg = RooflineConfig::new(plan.quick);
    let mut sink = Sink::new(progress, 3 + (plan.sets() * plan.runs) as u64);
    sink.say(format!(
        "roofline: {} u64, {} random accesses per kernel",
        rcfg.elements, rcfg.ops
    ));
    let roof = roofline::measure(gpu, rcfg, &mut |what| {
        sink.step(format!("roofline {what} done"))
    })?;
    let timer = gpu.timer()?;
    let mut bounds = Vec::new();
    for &ty in &plan.types {
        let mut cx = SetCx {
            gpu,
            plan,
            roofline: &roof,
            sink: &mut sink,
            timer: &timer,
            bounds: &mut bounds,
        };
        per_type(&mut cx, ty)?;
    }
    let mut roof = roof;
    roof.host_bounds = bounds;
    Ok((roof, sink.results))
}
