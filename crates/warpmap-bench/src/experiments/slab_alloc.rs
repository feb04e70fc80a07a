//! SlabAlloc's rate (slab-hash.txt §V): one slab allocated per thread by the warp-synchronous
//! allocator (`Slab::allocate_slabs_async`), then the slabs freed (`free_slabs_async`). The
//! paper: 1 M allocations of 128-byte slabs from a pool of 32 super blocks of 256 memory
//! blocks of 1024 slabs (8 M slabs) in 1.8 ms on a K40c (600 M slabs/s); here the pool holds
//! [`SlabPlan::pool_factor`](crate::plan::SlabPlan::pool_factor) times the allocations in
//! super blocks of 256 memory blocks.
//!
//! Per size: a table whose pool is made up front, one warm-up allocation and free, then per run
//! the allocation timed alone (CUDA events), the addresses downloaded and checked distinct (none
//! the all-ones "pool full" address), the pool's allocated slabs checked to have grown by the
//! allocations, the free timed alone, and the pool's allocated slabs checked back where they
//! were.

use super::slab_report::{SlabOp, SlabRow};
use super::slab_run::SlabCx;
use crate::schemes::slab;
use rayon::prelude::*;
use warpmap::Result;

/// Memory blocks per super block (the paper's N_M).
const MEMORY_BLOCKS: u32 = 256;

/// The number of distinct addresses in `addrs` (sorted in place).
pub(crate) fn distinct_addresses(addrs: &mut [u32]) -> usize {
    if addrs.is_empty() {
        return 0;
    }
    addrs.par_sort_unstable();
    1 + addrs.par_windows(2).filter(|w| w[0] != w[1]).count()
}

/// The preset: a cell per allocation count.
pub(crate) fn run(cx: &mut SlabCx<'_>) -> Result<()> {
    let (gpu, plan, timer) = (cx.gpu, cx.plan, cx.timer);
    let factor = plan.pool_factor.unwrap_or(8);
    for n in plan.sizes() {
        let what = format!("alloc 2^{} slabs", n.trailing_zeros());
        cx.say(format!("{what}: a pool of {} slabs", n * factor));
        let mut t = slab::allocator_table(gpu, n * factor, MEMORY_BLOCKS)?;
        let base = slab::info(&t)?;
        // Warm-up: both kernels once.
        let mut w = gpu.alloc::<u32>(1024)?;
        slab::allocate(&mut t, &mut w)?;
        slab::free(&mut t, &w)?;
        gpu.synchronize()?;
        let mut out = gpu.alloc::<u32>(n)?;
        let mut host = vec![0u32; n];
        let (mut a_ms, mut f_ms, mut a_fail, mut f_fail) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut fill = 0.0;
        let mut pool = base;
        for r in 0..plan.runs {
            cx.say(format!("{what} run {}/{}", r + 1, plan.runs));
            gpu.fill_bytes(&mut out, 0xaa)?;
            timer.start()?;
            slab::allocate(&mut t, &mut out)?;
            a_ms.push(timer.stop_ms()?);
            gpu.synchronize()?;
            let mid = slab::info(&t)?;
            pool = mid;
            let (mid, before) = (mid.stats, base.stats);
            fill = mid.allocated_slabs as f64 / mid.pool_slabs.max(1) as f64;
            if mid.allocated_slabs != before.allocated_slabs + n {
                a_fail.push(format!(
                    "run {r}: {} slabs allocated after {n} allocations (before: {})",
                    mid.allocated_slabs, before.allocated_slabs
                ));
            }
            gpu.copy_to_host(&out, &mut host)?;
            let null = host.par_iter().filter(|&&a| a == u32::MAX).count();
            if null > 0 {
                a_fail.push(format!(
                    "run {r}: {null} of {n} allocations found the pool full"
                ));
            }
            let d = distinct_addresses(&mut host);
            if d != n {
                a_fail.push(format!(
                    "run {r}: {d} distinct addresses of {n} allocations"
                ));
            }
            timer.start()?;
            slab::free(&mut t, &out)?;
            f_ms.push(timer.stop_ms()?);
            gpu.synchronize()?;
            let after = slab::info(&t)?;
            if after.stats.allocated_slabs != base.stats.allocated_slabs {
                f_fail.push(format!(
                    "run {r}: {} slabs allocated after the free (before: {})",
                    after.stats.allocated_slabs, base.stats.allocated_slabs
                ));
            }
        }
        f_fail.extend(a_fail.iter().map(|f| format!("alloc {f}")));
        for (op, ms, fail) in [(SlabOp::Alloc, a_ms, a_fail), (SlabOp::Free, f_ms, f_fail)] {
            let mut row = SlabRow::new::<u32, u32>("alloc", op, n, n, &ms, fail);
            row.pool_fill = Some(fill);
            row.slab = Some(pool);
            row.memory_bytes = pool.stats.pool_slabs * pool.stats.slab_bytes;
            cx.push(row);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_addresses_counts() {
        assert_eq!(distinct_addresses(&mut []), 0);
        assert_eq!(distinct_addresses(&mut [5, 1, 5, 3]), 3);
        let mut v: Vec<u32> = (0..100_000).rev().collect();
        assert_eq!(distinct_addresses(&mut v), 100_000);
    }
}
