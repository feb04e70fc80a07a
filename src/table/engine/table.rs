//! [`GpuTable`]: one GPU table over any [`Scheme`], with [`HashTable`] and [`DeviceHashTable`]
//! written once.

use super::l2_sides::TableL2Sides;
use super::multisplit::{
    multisplit_async, multisplit_within, multisplit_within_indexed, PartFunction, SlackItems,
    SlackLayout, SlackScatter, SlackSplit, MAX_WITHIN_PARTS,
};
use super::{bulk_grid, locality, Bulk, Scheme, SchemeConfig, BLOCK};
use crate::device::{DeviceBuffer, Gpu, Kernel, Launch, PinnedBuffer};
use crate::error::check_same_len;
use crate::sharded::split::{unsplit_by, Keep};
use crate::status::{InsertStatus, TABLE_FULL};
use crate::table::{
    check_index_range, check_mixed_lens, check_rehash_capacity, find_in_input_order,
    reject_mixed_erase, Backend, DeviceHashTable, HashTable, InsertMode, MixedOp, OrderedFind,
    UnorderedFind,
};
use crate::trace::stream as trace;
use crate::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// `[stored keys, keys left unplaced by all inserts so far, tiles taken by an ordered launch
/// (zeroed before each), spare]` on the device, and how many of those failures were already
/// reported.
struct Counters {
    buf: DeviceBuffer<u64>,
    /// `buf[1]` when failures were last reported: later ones are `buf[1] - this`.
    failed_seen: AtomicU64,
    /// At least the stored keys (`buf[0]`) without a read of the device: `buf[0]` when last
    /// read, plus the keys of every insert enqueued since. A lookup's plan asks it for the load
    /// ([`GpuTable::find_plan`]); being only a speed choice, it need not be exact.
    stored_bound: AtomicU64,
}

impl Counters {
    fn new(gpu: &Gpu) -> Result<Self> {
        Ok(Counters {
            buf: gpu.alloc_filled::<u64>(4, 0)?,
            failed_seen: AtomicU64::new(0),
            stored_bound: AtomicU64::new(0),
        })
    }
    fn read(&self, gpu: &Gpu) -> Result<[u64; 2]> {
        let mut m = [0u64; 2];
        gpu.copy_to_host(&self.buf, &mut m)?;
        self.stored_bound.store(m[0], Ordering::Relaxed);
        Ok(m)
    }
    /// Notes an insert of `n` keys enqueued (see `stored_bound`).
    fn inserting(&self, n: usize) {
        self.stored_bound.fetch_add(n as u64, Ordering::Relaxed);
    }
    /// Zero stored keys (the failure count stays: it is reported once).
    fn reset(&mut self, gpu: &Gpu) -> Result<()> {
        let failed = self.read(gpu)?[1];
        gpu.copy_to_device(&[0u64, failed], &mut self.buf)?;
        self.stored_bound.store(0, Ordering::Relaxed);
        Ok(())
    }
    /// Marks every failure so far as reported (the caller returned them per key).
    fn mark_reported(&self, gpu: &Gpu) -> Result<()> {
        self.failed_seen
            .store(self.read(gpu)?[1], Ordering::Relaxed);
        Ok(())
    }
    /// Waits for the GPU, then reports the failures of asynchronous inserts since the last
    /// report as [`Error::TableFull`].
    fn synchronize(&self, gpu: &Gpu, capacity: usize) -> Result<()> {
        gpu.synchronize()?;
        let total = self.read(gpu)?[1];
        let seen = self.failed_seen.swap(total, Ordering::Relaxed);
        let failed = total.saturating_sub(seen) as usize;
        if failed > 0 {
            return Err(Error::table_full_async(failed, capacity));
        }
        Ok(())
    }
}

/// The arrays an ordered insert reads its batch from: the keys and the values, or a slack
/// split's `{key, value}` pairs ([`SlackItems::Pairs`]).
enum OrderedBatch<'a, K, V> {
    Columns(&'a DeviceBuffer<K>, &'a DeviceBuffer<V>),
    Pairs(&'a DeviceBuffer<u8>),
}

/// The five bulk kernels of a scheme's module (`<scheme>_<op>`).
struct Kernels {
    insert: Kernel,
    find: Kernel,
    erase: Kernel,
    mixed: Kernel,
    retrieve: Kernel,
}

/// A hash table on a GPU: scheme `S` (its arrays, layout and kernels) on the shared engine.
/// The schemes' tables are aliases of it: [`WarpDrive<K, V>`](crate::WarpDrive),
/// [`Stadium<K, V>`](crate::Stadium). See [`HashTable`] and [`DeviceHashTable`] for what it
/// does, and each scheme's module for how.
pub struct GpuTable<S: Scheme> {
    pub(crate) gpu: Arc<Gpu>,
    pub(crate) scheme: S,
    kernels: Kernels,
    counters: Counters,
    /// Pinned memory for the parts tables of launches over several parts
    /// ([`Self::parts_batch`]), [`PARTS_STAGING`] of them used in turn (allocated on first use),
    /// and the next one's index.
    parts_staging: std::sync::Mutex<(Vec<PinnedBuffer<super::OrderedPart>>, usize)>,
    /// The L2's sides of the scheme's first-probe array ([`l2_sides`]), measured at the first
    /// ordered insert: the array (device address, bytes) they were measured for, and what the
    /// measurement found (`None`: no sides; the array moved: measured again).
    l2_sides: Option<((u64, u64), Option<TableL2Sides>)>,
    /// The slack split's scatter of the last partitioned insert, prepared for its batch shape
    /// (a lookup and an occupancy query less at each batch of that shape).
    slack_scatter: Option<SlackScatter>,
}

/// Pinned parts tables a table uses in turn ([`GpuTable::parts_batch`]): a launch's table is
/// written while the copies of the launches before it may still wait in the stream.
const PARTS_STAGING: usize = 4;

impl<S: Scheme> GpuTable<S> {
    /// Creates an empty table on `gpu`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a capacity of 0; the scheme's checks of `config` (see its
    /// [`Scheme::new`]: [`WarpDriveScheme`](crate::table::warpdrive::WarpDriveScheme),
    /// [`StadiumScheme`](crate::table::stadium::StadiumScheme)); [`Error::OutOfMemory`] when
    /// its arrays cannot be allocated; NVRTC errors when its kernels cannot be compiled
    /// ([`Error::NvrtcMissing`] names the remedy).
    ///
    /// # Examples
    /// ```no_run
    /// use warpmap::{Gpu, HashTable, Stadium, StadiumConfig};
    /// # fn main() -> warpmap::Result<()> {
    /// let mut t = Stadium::<u64, u64>::new(Gpu::default_gpu()?, StadiumConfig::new(1 << 20))?;
    /// t.insert(&[1], &[2])?;
    /// assert_eq!(t.find(&[1])?, vec![Some(2)]);
    /// # Ok(()) }
    /// ```
    pub fn new(gpu: Arc<Gpu>, config: S::Config) -> Result<Self> {
        if config.capacity() == 0 {
            return Err(Error::invalid("capacity must be at least 1"));
        }
        let (mut scheme, source) = S::new(&gpu, config)?;
        let module = gpu.module(&source)?;
        let kernel = |op: &str| module.kernel(&format!("{}_{op}", S::NAME));
        let kernels = Kernels {
            insert: kernel("insert")?,
            find: kernel("find")?,
            erase: kernel("erase")?,
            mixed: kernel("mixed")?,
            retrieve: kernel("retrieve")?,
        };
        scheme.bind(&gpu, &module)?;
        let counters = Counters::new(&gpu)?;
        let mut table = GpuTable {
            gpu,
            scheme,
            kernels,
            counters,
            parts_staging: std::sync::Mutex::new((Vec::new(), 0)),
            l2_sides: None,
            slack_scatter: None,
        };
        table.clear()?;
        Ok(table)
    }

    /// A table of at least `capacity` keys with the scheme's default parameters, on the
    /// process's default GPU.
    pub fn with_capacity(capacity: usize) -> Result<Self> {
        Self::new(Gpu::default_gpu()?, S::Config::with_capacity(capacity))
    }

    /// The parameters it was made with (defaults resolved).
    pub fn config(&self) -> &S::Config {
        self.scheme.config()
    }

    /// The one launch site: `kernel` over the scheme's view and `bulk`, `grid` blocks of
    /// [`BLOCK`] threads, on the table's stream. A scheme's own kernels (looked up in
    /// [`Scheme::bind`]) go through it too; those that write the table are launched from
    /// `&mut self` methods only.
    /// `order` names the batch's buffers to the launch (`reads` / `writes`), which orders them
    /// for the table's stream when they belong to another one.
    pub(crate) fn launch<'b>(
        &self,
        kernel: &'b Kernel,
        grid: u32,
        view: &'b S::View,
        bulk: &'b Bulk,
        order: impl FnOnce(&mut Launch<'b>),
    ) -> Result<()> {
        let mut l = kernel.launch();
        l.value(view).value(bulk);
        order(&mut l);
        // SAFETY: every engine kernel takes (view, wm_bulk) by value; both structs' sizes are
        // checked against their host twins when the module compiles (engine_source's defines).
        // The view describes the scheme's own buffers (allocated on the table's stream), as
        // large as its kernels index (the Scheme contract), alive while `self` is. Every buffer
        // in `bulk` was checked by the caller to hold the elements the kernel indexes (n keys;
        // retrieve: n outputs), is borrowed for this enqueue, and is ordered for the table's
        // stream by `order` (reads / writes: a buffer of another stream waits for its earlier
        // uses, and its free waits for this kernel). Kernels that write the table are launched
        // from `&mut self` methods only.
        unsafe { l.run(grid, BLOCK, 0) }
    }

    /// [`Error::Unsupported`] for [`InsertMode::Apply`] where the values are not numeric or the
    /// scheme does not reduce by key ([`Scheme::check_apply`]); the other modes pass.
    fn check_mode(&self, mode: InsertMode) -> Result<()> {
        if let InsertMode::Apply(_) = mode {
            mode.check_values::<S::Value>(S::NAME)?;
            self.scheme.check_apply(&self.gpu)?;
        }
        Ok(())
    }

    /// The scheme's view, with the engine's counters.
    pub(crate) fn view(&self) -> S::View {
        self.scheme.view(self.counters.buf.device_address())
    }

    fn grid(&self, n: usize) -> u32 {
        bulk_grid(&self.gpu, n as u64 * self.scheme.group_size() as u64)
    }

    /// One insert of host slices through the device, statuses back.
    fn insert_pass(
        &mut self,
        keys: &[S::Key],
        values: &[S::Value],
        status: &mut [InsertStatus],
        mode: InsertMode,
    ) -> Result<()> {
        let gpu = self.gpu.clone();
        let (dk, dv) = (gpu.upload(keys)?, gpu.upload(values)?);
        let mut ds = gpu.alloc::<u32>(keys.len())?;
        self.insert_device_async_with_mode(&dk, &dv, Some(&mut ds), mode)?;
        gpu.copy_to_host(&ds, bytemuck::cast_slice_mut(status))
    }

    /// While keys of a host-slice insert found no room (`TABLE_FULL`) and the scheme grows
    /// ([`Scheme::grow_after_failures`]), inserts them again; their statuses are replaced.
    fn retry_after_growth(
        &mut self,
        keys: &[S::Key],
        values: &[S::Value],
        status: &mut [InsertStatus],
        mode: InsertMode,
    ) -> Result<()> {
        loop {
            let full: Vec<usize> = (0..keys.len())
                .filter(|&i| status[i].0 & TABLE_FULL != 0)
                .collect();
            if full.is_empty() {
                return Ok(());
            }
            // These failures are answered here (inserted again, or reported in the statuses):
            // a growth that rehashes synchronizes first, and must not report them again as
            // failures of asynchronous inserts.
            self.counters.mark_reported(&self.gpu)?;
            if !S::grow_table(self, full.len())? {
                return Ok(());
            }
            let mut st = vec![InsertStatus::default(); full.len()];
            self.insert_pass(&gather(keys, &full), &gather(values, &full), &mut st, mode)?;
            for (&i, s) in full.iter().zip(st) {
                status[i] = s;
            }
        }
    }

    /// Inserts the pairs a rehash moves (distinct keys) into this new table, on the device
    /// (locality-partitioned where the plan says so; if a key then finds no room, the table is
    /// cleared and the pairs go again in input order); keys that found no room go in again after
    /// growth ([`Scheme::grow_table`]), as in a host-slice insert. [`Error::TableFull`] when some
    /// still found none.
    fn insert_moved(
        &mut self,
        keys: &DeviceBuffer<S::Key>,
        values: &DeviceBuffer<S::Value>,
    ) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let gpu = self.gpu.clone();
        if self.partition_plan(keys.len())?.is_some() {
            // The locality-partitioned insert (no statuses): done if every key found room.
            let failed_before = self.counters.read(&gpu)?[1];
            self.insert_device_async_with_mode(keys, values, None, InsertMode::Assign)?;
            gpu.synchronize()?;
            if self.counters.read(&gpu)?[1] == failed_before {
                return Ok(());
            }
            // Some did not (rare): start again in input order, whose statuses say which.
            HashTable::clear(self)?;
            self.counters.mark_reported(&gpu)?;
        }
        let mut ds = gpu.alloc::<u32>(keys.len())?;
        self.insert_device_async_with_mode(keys, values, Some(&mut ds), InsertMode::Assign)?;
        let st = gpu.download(&ds)?;
        let full: Vec<usize> = (0..st.len()).filter(|&i| st[i] & TABLE_FULL != 0).collect();
        // Keys that failed otherwise (the probe limit) are not retried: growth does not lengthen
        // a probe budget. They count as left, so the rehash fails instead of losing them.
        let mut left = st
            .iter()
            .filter(|&&s| InsertStatus(s).is_failure() && s & TABLE_FULL == 0)
            .count();
        if !full.is_empty() {
            let (k, v) = (gpu.download(keys)?, gpu.download(values)?);
            let mut fs = vec![InsertStatus(TABLE_FULL); full.len()];
            self.retry_after_growth(
                &gather(&k, &full),
                &gather(&v, &full),
                &mut fs,
                InsertMode::Assign,
            )?;
            left += fs.iter().filter(|s| s.is_failure()).count();
        }
        gpu.synchronize()?;
        self.counters.mark_reported(&gpu)?; // the statuses were the report
        if left > 0 {
            return Err(Error::table_full_async(left, self.scheme.capacity()));
        }
        Ok(())
    }

    /// The table's load by its bound on the stored keys (`Counters::stored_bound`, which counts
    /// the inserts enqueued so far): what the plans ask, without a read of the device.
    fn load_bound(&self) -> f64 {
        let stored = self.counters.stored_bound.load(Ordering::Relaxed);
        stored as f64 / self.scheme.capacity().max(1) as f64
    }

    /// The plan of a locality-partitioned insert of `n` keys without statuses, where the scheme
    /// has an ordered kernel and [`locality::plan_at_load`] says so at the load the batch leaves
    /// (the deep plan: [`locality::plan`] where [`locality::DEEP_LOADS`] holds it).
    fn partition_plan(&self, n: usize) -> Result<Option<locality::Plan>> {
        if self.scheme.insert_kernel(n).is_some() {
            return Ok(None);
        }
        let Some(loc) = self.scheme.locality() else {
            return Ok(None);
        };
        // A batch that leaves the table well filled takes the deep ordered insert where its
        // longer tiles keep the keys in flight local enough (the plan's rule), else the plain one.
        if locality::DEEP_LOADS.contains(&self.load_bound()) {
            if let Some(machine) = locality::Machine::of_deep(&self.gpu, &loc) {
                if let Some(plan) = locality::plan(&loc.stretches, n, machine) {
                    return Ok(Some(locality::Plan { deep: true, ..plan }));
                }
            }
        }
        let machine = locality::Machine::of(&self.gpu, &loc);
        Ok(locality::plan_at_load(
            &loc.stretches,
            n,
            machine,
            self.load_bound(),
        ))
    }

    /// The insert kernel (the scheme's, or the bulk one) over the batch in input order.
    fn launch_insert(
        &self,
        keys: &DeviceBuffer<S::Key>,
        values: &DeviceBuffer<S::Value>,
        status: Option<&mut DeviceBuffer<u32>>,
        mode: InsertMode,
    ) -> Result<()> {
        let bulk = Bulk::insert_mode(keys, values, status.as_deref(), mode);
        let view = self.view();
        let (kernel, grid) = self
            .scheme
            .insert_kernel(keys.len())
            .unwrap_or((&self.kernels.insert, self.grid(keys.len())));
        self.launch(kernel, grid, &view, &bulk, |l| {
            l.reads(keys).reads(values);
            if let Some(s) = status {
                l.writes(s);
            }
        })
    }

    /// The locality-partitioned insert ([`locality`]): chunk by chunk, a split by the plan's
    /// part function (nothing waits for the stream), then the scheme's ordered insert kernel over
    /// the split, one resident wave taking tiles of keys in order from the counters' third word
    /// (zeroed first). A chunk whose split finds no device memory goes in input order.
    fn insert_partitioned(
        &mut self,
        keys: &DeviceBuffer<S::Key>,
        values: &DeviceBuffer<S::Value>,
        mode: InsertMode,
        plan: &locality::Plan,
    ) -> Result<()> {
        let gpu = self.gpu.clone();
        // The split with slack (no count: `locality::slack_split`) where the ordered kernel walks
        // plain tiles (not the L2's sides), in regions of whole tiles of the kernel that runs.
        let deep = plan.deep
            && self
                .scheme
                .locality()
                .is_some_and(|l| l.deep_insert.is_some());
        let slack_unit = match self.table_l2_sides()? {
            None if locality::slack_split() => Some(locality::tile_items(deep)),
            _ => None,
        };
        for range in plan.chunks(keys.len()) {
            let (kv, vv) = (gpu.view(keys, range.clone())?, gpu.view(values, range)?);
            if let Some(unit) = slack_unit {
                match self.split_with_slack(&kv, &vv, &plan.part, unit) {
                    Ok(Some(split)) => {
                        trace::mark(&gpu, "split");
                        self.launch_ordered_insert_slack(&kv, &vv, &split, mode, deep)?;
                        drop(split); // its frees queued here, so that the timeline shows them
                        trace::mark(&gpu, "freed");
                        continue;
                    }
                    Ok(None) => {} // more parts than one pass splits: the counting split
                    Err(Error::OutOfMemory { .. }) => {
                        self.launch_insert(&kv, &vv, None, mode)?;
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            let split = match multisplit_async(&gpu, &kv, Some(&*vv), &plan.part) {
                Ok(split) => split,
                // No room for the split's scratch (a table that fills the GPU): this chunk in
                // input order, as without the partition.
                Err(Error::OutOfMemory { .. }) => {
                    self.launch_insert(&kv, &vv, None, mode)?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let split_values = split
                .values
                .as_ref()
                .expect("a split with values returns them");
            self.launch_ordered_insert(&split.keys, split_values, mode, plan.deep)?;
        }
        Ok(())
    }

    /// The slack split of a chunk
    /// ([`multisplit_slack_async`](super::multisplit::multisplit_slack_async)) through the table's prepared
    /// scatter, prepared again where the chunk's shape differs from the last one's.
    fn split_with_slack(
        &mut self,
        keys: &DeviceBuffer<S::Key>,
        values: &DeviceBuffer<S::Value>,
        f: &PartFunction,
        unit: u64,
    ) -> Result<Option<SlackSplit<S::Key, S::Value>>> {
        let n = keys.len();
        // Pairs where the scheme's ordered inserts read them and they serve the types.
        let layout = match self.scheme.locality() {
            Some(l) if l.reads_pairs => SlackLayout::for_insert::<S::Key, S::Value>(),
            _ => SlackLayout::Columns,
        };
        let served = self
            .slack_scatter
            .as_ref()
            .is_some_and(|s| s.serves::<S::Key, S::Value>(n, true, f, unit, layout));
        if !served {
            self.slack_scatter =
                SlackScatter::prepare::<S::Key, S::Value>(&self.gpu, n, true, f, unit, layout)?;
        }
        match &self.slack_scatter {
            Some(scatter) => scatter
                .split_async(&self.gpu, keys, Some(values), f)
                .map(Some),
            None => Ok(None),
        }
    }

    /// The L2's sides of the scheme's first-probe array, measured on first use and again when
    /// the array has moved (a rehash), or `None` where the GPU has no two sides or they are off
    /// (the default: [`super::l2_sides`]).
    fn table_l2_sides(&mut self) -> Result<Option<&TableL2Sides>> {
        if !super::l2_sides::enabled() {
            return Ok(None);
        }
        let Some(array) = self.scheme.locality().and_then(|l| l.array) else {
            return Ok(None);
        };
        if self.l2_sides.as_ref().map(|s| s.0) != Some(array) {
            let measured = TableL2Sides::measure(&self.gpu, array.0, array.1)?;
            self.l2_sides = Some((array, measured));
        }
        Ok(self.l2_sides.as_ref().and_then(|s| s.1.as_ref()))
    }

    /// The scheme's ordered insert kernel over a batch in the order of its stretches (no
    /// statuses): one resident wave taking tiles of keys in order from the counters' third word
    /// (zeroed first); with `deep`, its deep ordered insert where it has one
    /// ([`locality::Locality::deep_insert`]). In input order where the scheme has no ordered
    /// kernel.
    fn launch_ordered_insert(
        &mut self,
        keys: &DeviceBuffer<S::Key>,
        values: &DeviceBuffer<S::Value>,
        mode: InsertMode,
        deep: bool,
    ) -> Result<()> {
        // Where the L2's sides are on and the GPU has two, the sided walk (measured on first use:
        // before the kernel is borrowed from the scheme).
        let mut bulk = Bulk::insert_mode(keys, values, None, mode);
        if let Some(sides) = self.table_l2_sides()? {
            bulk = bulk.with_l2_sides(sides);
        }
        let batch = OrderedBatch::Columns(keys, values);
        self.launch_ordered(batch, bulk, (None, None), mode, deep)
    }

    /// The ordered insert of a chunk (`keys`, `values`) through its slack split: the split's
    /// regions as they are (each region's fill read by the kernel), then the keys that found
    /// their region full, from the chunk itself in input order (a launch that returns at once
    /// where there are none, the rule).
    fn launch_ordered_insert_slack(
        &mut self,
        keys: &DeviceBuffer<S::Key>,
        values: &DeviceBuffer<S::Value>,
        split: &SlackSplit<S::Key, S::Value>,
        mode: InsertMode,
        deep: bool,
    ) -> Result<()> {
        // Only an ordered kernel reads the regions (the input-order insert would take their
        // empty tails for keys); `deep` only where the scheme has the deep one (the caller's).
        let Some(loc) = self.scheme.locality() else {
            return Err(Error::invalid(
                "a slack split for a scheme with no ordered insert",
            ));
        };
        debug_assert!(!deep || loc.deep_insert.is_some());
        let unit = locality::tile_items(deep);
        let region_tiles = u32::try_from(split.cap / unit)
            .map_err(|_| Error::invalid("a slack split's region of 2^32 tiles or more"))?;
        let (batch, bulk) = match &split.items {
            SlackItems::Columns { keys, values } => {
                let values = values.as_ref().expect("a split with values returns them");
                let bulk = Bulk::insert_mode(keys, values, None, mode);
                (OrderedBatch::Columns(keys, values), bulk)
            }
            SlackItems::Pairs(pairs) => {
                if !loc.reads_pairs {
                    return Err(Error::invalid(
                        "a slack split of pairs for a scheme whose ordered insert reads columns",
                    ));
                }
                let n = split.parts as u64 * split.cap;
                let bulk = Bulk::insert_pairs::<S::Key, S::Value>(pairs, n, mode);
                (OrderedBatch::Pairs(pairs), bulk)
            }
        };
        let regions = bulk.with_regions(&split.fill, region_tiles);
        let fill = Some(&split.fill);
        self.launch_ordered(batch, regions, (fill, None), mode, deep)?;
        trace::mark(&self.gpu, "ordered");
        let flagged = Bulk::insert_mode(keys, values, None, mode).with_flagged(
            &split.flagged,
            &split.fill,
            split.parts,
        );
        let batch = OrderedBatch::Columns(keys, values);
        self.launch_ordered(batch, flagged, (fill, Some(&split.flagged)), mode, deep)
    }

    /// The scheme's ordered insert kernel (deep or plain) over `bulk`, which names the batch's
    /// arrays and the slack split's words it also reads (`fill`, `flagged`); in input order
    /// where the scheme has none (a batch of columns: a scheme without ordered inserts is never
    /// given pairs).
    fn launch_ordered(
        &mut self,
        batch: OrderedBatch<'_, S::Key, S::Value>,
        bulk: Bulk,
        (fill, flagged): (Option<&DeviceBuffer<u64>>, Option<&DeviceBuffer<u32>>),
        mode: InsertMode,
        deep: bool,
    ) -> Result<()> {
        let ordered = self
            .scheme
            .locality()
            .map(|l| l.deep_insert.filter(|_| deep).unwrap_or(l.insert));
        let Some(ordered) = ordered else {
            return match batch {
                OrderedBatch::Columns(keys, values) => self.launch_insert(keys, values, None, mode),
                OrderedBatch::Pairs(_) => Err(Error::invalid(
                    "a batch of pairs for a scheme with no ordered insert",
                )),
            };
        };
        // The tile counters: one, or one per side of the L2 (the counters' third and fourth words).
        let tiles = 2 * std::mem::size_of::<u64>();
        self.gpu.fill_range(
            &mut self.counters.buf,
            tiles,
            2 * std::mem::size_of::<u64>(),
            0,
        )?;
        let view = self.view();
        self.launch(ordered.kernel, ordered.resident_blocks, &view, &bulk, |l| {
            match batch {
                OrderedBatch::Columns(keys, values) => l.reads(keys).reads(values),
                OrderedBatch::Pairs(pairs) => l.reads(pairs),
            };
            if let Some(f) = fill {
                l.reads(f);
            }
            if let Some(f) = flagged {
                l.reads(f);
            }
        })
    }

    /// The batch of an ordered launch over the parts `lens` (`[keys, values, out, found, n]`
    /// each, see [`Bulk::ordered_parts`]): the parts' table on the device, a zeroed tile
    /// counter, and the `wm_bulk` naming both (insert mode word `assign`).
    fn parts_batch(
        &self,
        lens: &[[u64; 5]],
        assign: u32,
    ) -> Result<(DeviceBuffer<super::OrderedPart>, DeviceBuffer<u64>, Bulk)> {
        let (parts, steps) = Bulk::ordered_parts(lens, locality::tile_items(false));
        let table = if super::knob::<String>("WARPMAP_PARTS_UPLOAD").as_deref() == Some("sync") {
            // For measurements: the synchronous upload of before (2 H100s: the same rates;
            // bench/NOTES.md, issue 15, session U).
            self.gpu.upload(&parts)?
        } else {
            self.parts_through_pinned(&parts)?
        };
        let tiles = self.gpu.alloc_filled::<u64>(1, 0)?;
        let bulk = Bulk::over_parts(
            table.device_address(),
            lens.len(),
            steps,
            tiles.device_address(),
            assign,
        );
        Ok((table, tiles, bulk))
    }

    /// A parts table on the device through pinned memory, without waiting: a synchronous
    /// upload waits for the stream, and with it the host for the launches before (a sharded host
    /// pipeline's next chunk waited for the shards' work on the chunk before; bench/NOTES.md,
    /// session T). Writing a pinned table waits only for its copy [`PARTS_STAGING`] launches ago.
    fn parts_through_pinned(
        &self,
        parts: &[super::OrderedPart],
    ) -> Result<DeviceBuffer<super::OrderedPart>> {
        let mut staging = self
            .parts_staging
            .lock()
            .map_err(|_| Error::invalid("a table's parts staging was poisoned by a panic"))?;
        let (ring, next) = &mut *staging;
        // All of the ring at once, on first use: a pinned allocation costs the driver time
        // (the mapping for every GPU), so the launches after the first must not pay it.
        if ring.len() < PARTS_STAGING || ring.iter().any(|p| p.len() < parts.len()) {
            *ring = (0..PARTS_STAGING)
                .map(|_| self.gpu.alloc_pinned(parts.len().max(8)))
                .collect::<Result<_>>()?;
        }
        let at = *next % PARTS_STAGING;
        *next = next.wrapping_add(1);
        let pinned = &mut ring[at];
        pinned.as_mut_slice()?[..parts.len()].copy_from_slice(parts);
        let mut table = self.gpu.alloc::<super::OrderedPart>(parts.len())?;
        self.gpu
            .copy_from_pinned(pinned, 0, &mut table, 0, parts.len())?;
        Ok(table)
    }

    /// The scheme's ordered find kernel over a batch in the order of its stretches, its tile
    /// counter a zeroed word of scratch; the bulk find where the scheme has none.
    fn launch_ordered_find(
        &self,
        keys: &DeviceBuffer<S::Key>,
        out: Option<&mut DeviceBuffer<S::Value>>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()> {
        let Some(ordered) = self.scheme.locality().and_then(|l| l.find) else {
            return self.launch_find(keys, out, found);
        };
        check_same_len("find", keys.len(), found.len())?;
        if let Some(o) = &out {
            check_same_len("find", keys.len(), o.len())?;
        }
        if keys.is_empty() {
            return Ok(());
        }
        let mut tiles = self.gpu.alloc::<u64>(1)?;
        self.gpu.fill_bytes(&mut tiles, 0)?;
        let mut bulk = Bulk::find(keys, out.as_deref(), found);
        bulk.counter = tiles.device_address();
        let view = self.view();
        self.launch(ordered.kernel, ordered.resident_blocks, &view, &bulk, |l| {
            l.reads(keys).writes(found).writes(&mut tiles);
            if let Some(o) = out {
                l.writes(o);
            }
        })
    }

    /// The plan of a locality-partitioned lookup of `n` keys, where the scheme has an ordered
    /// find, in parts one split pass can make: with `any_load`, at any load
    /// ([`locality::lookup_plan`]); else where [`locality::find_plan`] says so at the table's
    /// load (its upper bound `Counters::stored_bound`).
    fn find_plan(&self, n: usize, any_load: bool) -> Option<locality::Plan> {
        let loc = self.scheme.locality()?;
        loc.find?;
        let machine = locality::Machine::of(&self.gpu, &loc);
        let plan = if any_load {
            locality::lookup_plan(&loc.stretches, n, machine)
        } else {
            let load = self.load_bound();
            let slot_bytes = loc.stretches.table_bytes / self.scheme.capacity().max(1) as u64;
            locality::find_plan(&loc.stretches, n, machine, slot_bytes, load)
        };
        plan.filter(|p| p.part.parts <= MAX_WITHIN_PARTS)
    }

    /// A lookup (`out: None`: contains), results in input order: partitioned where
    /// [`Self::find_plan`] says so at the table's load, else the bulk find.
    fn find_any(
        &self,
        keys: &DeviceBuffer<S::Key>,
        mut out: Option<&mut DeviceBuffer<S::Value>>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()> {
        let Some(plan) = self.find_plan(keys.len(), false) else {
            return self.launch_find(keys, out, found);
        };
        check_same_len("find", keys.len(), found.len())?;
        if let Some(o) = &out {
            check_same_len("find", keys.len(), o.len())?;
        }
        // Chunk by chunk: the split with each key's position, the ordered find into scratch in
        // split order, the answers gathered back to input order. Scratch per key of a chunk:
        // the key, its position, a value and a flag.
        let gpu = &self.gpu;
        for range in plan.chunks(keys.len()) {
            let kv = gpu.view(keys, range.clone())?;
            let mut fv = one_view(found, &range, gpu)?;
            let mut ov = out
                .as_deref_mut()
                .map(|o| one_view(o, &range, gpu))
                .transpose()?;
            let len = range.len();
            let scratch = (|| {
                let f = gpu.alloc::<u8>(len)?;
                let v = ov
                    .is_some()
                    .then(|| gpu.alloc::<S::Value>(len))
                    .transpose()?;
                Ok((f, v))
            })();
            let answered = match scratch {
                Ok((mut f, mut v)) => self
                    .find_split(&kv, v.as_mut(), &mut f, &plan)?
                    .map(|positions| (positions, f, v)),
                Err(Error::OutOfMemory { .. }) => None,
                Err(e) => return Err(e),
            };
            // No room for the scratch (a table that fills the GPU): this chunk in input order.
            let Some((positions, f, v)) = answered else {
                self.launch_find(&kv, ov.as_deref_mut(), &mut fv)?;
                continue;
            };
            unsplit_by::<S::Key, S::Value>(
                gpu,
                &whole_batch(&plan),
                &positions,
                Keep::ValuesWhereMissing,
                None,
                v.as_ref().zip(ov.as_deref_mut()),
                Some((&f, &mut fv)),
            )?;
        }
        Ok(())
    }

    /// The split of `keys` by the plan's part function with where each key went, and the
    /// scheme's ordered find over it into `out` and `found` in split order; the positions, or
    /// `None` (nothing enqueued) where the split finds no device memory for its scratch.
    fn find_split(
        &self,
        keys: &DeviceBuffer<S::Key>,
        out: Option<&mut DeviceBuffer<S::Value>>,
        found: &mut DeviceBuffer<u8>,
        plan: &locality::Plan,
    ) -> Result<Option<DeviceBuffer<u32>>> {
        let gpu = &self.gpu;
        let split = multisplit_within::<S::Key, u32>(
            gpu,
            gpu,
            keys,
            None,
            &whole_batch(plan),
            &plan.part,
            true,
            false,
        );
        let (split, positions) = match split {
            Ok(s) => s,
            Err(Error::OutOfMemory { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let positions = positions.expect("a split asked for positions returns them");
        self.launch_ordered_find(&split.keys, out, found)?;
        Ok(Some(positions))
    }

    fn launch_find(
        &self,
        keys: &DeviceBuffer<S::Key>,
        out: Option<&mut DeviceBuffer<S::Value>>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()> {
        check_same_len("find", keys.len(), found.len())?;
        if let Some(o) = &out {
            check_same_len("find", keys.len(), o.len())?;
        }
        if keys.is_empty() {
            return Ok(());
        }
        let (bulk, view, grid) = (
            Bulk::find(keys, out.as_deref(), found),
            self.view(),
            self.grid(keys.len()),
        );
        self.launch(&self.kernels.find, grid, &view, &bulk, |l| {
            l.reads(keys).writes(found);
            if let Some(o) = out {
                l.writes(o);
            }
        })
    }
}

impl<S: Scheme> HashTable<S::Key, S::Value> for GpuTable<S> {
    fn scheme(&self) -> &'static str {
        S::NAME
    }

    fn backend(&self) -> Backend {
        Backend::Gpu
    }

    /// Through the device: upload, launch, per-key statuses back.
    fn insert_with_mode(
        &mut self,
        keys: &[S::Key],
        values: &[S::Value],
        status: &mut [InsertStatus],
        mode: InsertMode,
    ) -> Result<usize> {
        check_same_len("insert", keys.len(), values.len())?;
        check_same_len("insert status", keys.len(), status.len())?;
        self.check_mode(mode)?;
        if keys.is_empty() {
            return Ok(0);
        }
        self.synchronize()?; // earlier asynchronous failures surface here, not in these statuses
        self.insert_pass(keys, values, status, mode)?;
        self.retry_after_growth(keys, values, status, mode)?;
        self.counters.mark_reported(&self.gpu)?; // the statuses are the report
        Ok(status.iter().filter(|s| s.is_failure()).count())
    }

    fn mixed_batch(
        &mut self,
        ops: &[MixedOp],
        keys: &[S::Key],
        values: &[S::Value],
        status: &mut [InsertStatus],
        out: &mut [S::Value],
        found: &mut [bool],
    ) -> Result<usize> {
        check_mixed_lens(
            keys.len(),
            ops.len(),
            values.len(),
            status.len(),
            out.len(),
            found.len(),
        )?;
        if keys.is_empty() {
            return Ok(0);
        }
        if let Some(reason) = S::NO_MIXED_ERASE {
            reject_mixed_erase(ops, S::NAME, reason)?;
        }
        self.scheme.check_mixed(&self.gpu)?;
        self.synchronize()?;
        let gpu = self.gpu.clone();
        let d_ops = gpu.upload(bytemuck::cast_slice::<MixedOp, u8>(ops))?;
        let (dk, dv) = (gpu.upload(keys)?, gpu.upload(values)?);
        // Uploaded, so that entries of the other kind of operation come back unchanged.
        let mut ds = gpu.upload(bytemuck::cast_slice::<InsertStatus, u32>(status))?;
        let mut d_out = gpu.upload(out)?;
        let mut d_found = gpu.alloc_filled::<u8>(keys.len(), 0)?;
        self.mixed_device_async(&d_ops, &dk, &dv, &mut ds, &mut d_out, &mut d_found)?;
        gpu.copy_to_host(&ds, bytemuck::cast_slice_mut::<InsertStatus, u32>(status))?;
        gpu.copy_to_host(&d_out, out)?;
        let flags = gpu.download(&d_found)?;
        // Inserts that found no room go in again after growth (as if after the batch).
        let full = |i: usize| ops[i] == MixedOp::Insert && status[i].0 & TABLE_FULL != 0;
        if (0..ops.len()).any(full) {
            let inserts: Vec<usize> = (0..ops.len())
                .filter(|&i| ops[i] == MixedOp::Insert)
                .collect();
            let (keys, values) = (gather(keys, &inserts), gather(values, &inserts));
            let mut st = gather(status, &inserts);
            self.retry_after_growth(&keys, &values, &mut st, InsertMode::Assign)?;
            for (&i, s) in inserts.iter().zip(st) {
                status[i] = s;
            }
        }
        let mut failed = 0;
        for (i, op) in ops.iter().enumerate() {
            match op {
                MixedOp::Insert => failed += usize::from(status[i].is_failure()),
                MixedOp::Find | MixedOp::Erase => found[i] = flags[i] != 0,
            }
        }
        self.counters.mark_reported(&gpu)?;
        Ok(failed)
    }

    fn find_into(
        &self,
        keys: &[S::Key],
        values: &mut [S::Value],
        found: &mut [bool],
    ) -> Result<usize> {
        check_same_len("find", keys.len(), values.len())?;
        check_same_len("find", keys.len(), found.len())?;
        if keys.is_empty() {
            return Ok(0);
        }
        let gpu = &self.gpu;
        let dk = gpu.upload(keys)?;
        let mut dv = gpu.alloc::<S::Value>(keys.len())?;
        let mut df = gpu.alloc::<u8>(keys.len())?;
        self.find_device_async(&dk, &mut dv, &mut df)?;
        let (flags, v) = (gpu.download(&df)?, gpu.download(&dv)?);
        let mut hits = 0;
        for i in 0..keys.len() {
            found[i] = flags[i] != 0;
            if found[i] {
                values[i] = v[i];
                hits += 1;
            }
        }
        Ok(hits)
    }

    fn contains(&self, keys: &[S::Key]) -> Result<Vec<bool>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let dk = self.gpu.upload(keys)?;
        let mut df = self.gpu.alloc::<u8>(keys.len())?;
        self.contains_device_async(&dk, &mut df)?;
        Ok(self
            .gpu
            .download(&df)?
            .into_iter()
            .map(|b| b != 0)
            .collect())
    }

    /// Through the device: the number erased is the drop in `len`.
    fn erase(&mut self, keys: &[S::Key]) -> Result<usize> {
        if keys.is_empty() {
            return Ok(0);
        }
        let before = self.len()?;
        let dk = self.gpu.upload(keys)?;
        self.erase_device_async(&dk)?;
        let erased = before.saturating_sub(self.len()?);
        S::after_erase(self)?;
        Ok(erased)
    }

    fn len(&self) -> Result<usize> {
        Ok(self.counters.read(&self.gpu)?[0] as usize)
    }

    fn capacity(&self) -> usize {
        self.scheme.capacity()
    }

    fn max_load_factor(&self) -> f64 {
        self.scheme.max_load_factor()
    }

    fn clear(&mut self) -> Result<()> {
        self.scheme.clear(&self.gpu)?;
        self.counters.reset(&self.gpu)?;
        self.gpu.synchronize()
    }

    /// Moves every pair, on the device, into a new table of at least `new_capacity` keys (the
    /// same parameters otherwise) that then replaces this one. Peak device memory is both
    /// tables plus the pairs.
    fn rehash(&mut self, new_capacity: usize) -> Result<()> {
        self.synchronize()?; // earlier async failures surface here, not after the swap
        let n = self.len()?;
        check_rehash_capacity(new_capacity, n)?;
        let (keys, values) = self.retrieve_device()?;
        let config = self.scheme.config().resized(new_capacity);
        let mut grown = GpuTable::<S>::new(self.gpu.clone(), config)?;
        grown.insert_moved(&keys, &values)?;
        let placed = grown.len()?;
        if placed != n {
            return Err(Error::CountMismatch {
                operation: format!("{} rehash: keys placed", S::NAME),
                expected: n,
                got: placed,
            });
        }
        *self = grown;
        Ok(())
    }

    fn retrieve_all(&self) -> Result<(Vec<S::Key>, Vec<S::Value>)> {
        let (keys, values) = self.retrieve_device()?;
        Ok((self.gpu.download(&keys)?, self.gpu.download(&values)?))
    }

    fn memory_bytes(&self) -> usize {
        self.scheme.memory_bytes() + self.counters.buf.num_bytes()
    }
}

impl<S: Scheme> DeviceHashTable<S::Key, S::Value> for GpuTable<S> {
    fn mixed_erase_refusal(&self) -> Option<&'static str> {
        S::NO_MIXED_ERASE
    }

    fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    fn counters(&self) -> Result<Vec<(&'static str, u64)>> {
        S::counters(self)
    }

    fn insert_device_async_with_mode(
        &mut self,
        keys: &DeviceBuffer<S::Key>,
        values: &DeviceBuffer<S::Value>,
        mut status: Option<&mut DeviceBuffer<u32>>,
        mode: InsertMode,
    ) -> Result<()> {
        check_same_len("insert", keys.len(), values.len())?;
        if let Some(s) = &status {
            check_same_len("insert status", keys.len(), s.len())?;
        }
        self.check_mode(mode)?;
        if keys.is_empty() {
            return Ok(());
        }
        trace::start(&self.gpu, "entry");
        S::before_insert(self, keys, values, None, status.as_deref_mut())?;
        self.counters.inserting(keys.len());
        let plan = match status {
            None => self.partition_plan(keys.len())?,
            Some(_) => None,
        };
        trace::mark(&self.gpu, "plan");
        match plan {
            Some(plan) => self.insert_partitioned(keys, values, mode, &plan)?,
            None => self.launch_insert(keys, values, status, mode)?,
        }
        S::after_insert(self)?;
        trace::mark(&self.gpu, "end");
        trace::report(format_args!("insert of {} keys", keys.len()));
        Ok(())
    }

    fn find_device_async(
        &self,
        keys: &DeviceBuffer<S::Key>,
        values: &mut DeviceBuffer<S::Value>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()> {
        self.find_any(keys, Some(values), found)
    }

    fn find_device_unordered_async(
        &self,
        keys: &DeviceBuffer<S::Key>,
    ) -> Result<UnorderedFind<S::Value>> {
        check_index_range(keys.len())?;
        // The insert's rule (a large table, a long batch), at any load; the batch in one piece
        // (a longer piece only keeps the keys in flight closer, and the scratch is only the
        // split keys: the indices are the answer).
        let Some(plan) = self.find_plan(keys.len(), true) else {
            return find_in_input_order(self, keys);
        };
        let gpu = &self.gpu;
        // The keys in the stretches' order, each with its batch index (written by the split
        // itself), then the ordered find straight into the answers.
        let split =
            multisplit_within_indexed(gpu, gpu, keys, &whole_batch(&plan), &plan.part, false);
        let split = match split {
            Ok(split) => split,
            // No room for the split's scratch: in input order.
            Err(Error::OutOfMemory { .. }) => return find_in_input_order(self, keys),
            Err(e) => return Err(e),
        };
        let n = keys.len();
        let (mut values, mut found) = (gpu.alloc::<S::Value>(n)?, gpu.alloc::<u8>(n)?);
        self.launch_ordered_find(&split.keys, Some(&mut values), &mut found)?;
        Ok(UnorderedFind {
            index: split.values.expect("an indexed split has values"),
            values,
            found,
        })
    }

    fn stretch_order(&self, n: usize) -> Option<PartFunction> {
        if self.scheme.insert_kernel(n).is_some() {
            return None; // the scheme chooses its own insert for this batch
        }
        let loc = self.scheme.locality()?;
        locality::order_for(&loc.stretches, n, locality::Machine::of(&self.gpu, &loc))
    }

    fn insert_device_ordered_async(
        &mut self,
        keys: &DeviceBuffer<S::Key>,
        values: &DeviceBuffer<S::Value>,
        mode: InsertMode,
    ) -> Result<()> {
        check_same_len("insert", keys.len(), values.len())?;
        self.check_mode(mode)?;
        if keys.is_empty() {
            return Ok(());
        }
        S::before_insert(self, keys, values, None, None)?;
        self.counters.inserting(keys.len());
        if self.scheme.insert_kernel(keys.len()).is_some() {
            self.launch_insert(keys, values, None, mode)?;
        } else {
            self.launch_ordered_insert(keys, values, mode, false)?;
        }
        S::after_insert(self)
    }

    fn find_device_ordered_async(
        &self,
        keys: &DeviceBuffer<S::Key>,
        values: Option<&mut DeviceBuffer<S::Value>>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()> {
        self.launch_ordered_find(keys, values, found)
    }

    fn insert_device_ordered_parts_async(
        &mut self,
        parts: &[(&DeviceBuffer<S::Key>, &DeviceBuffer<S::Value>)],
        mode: InsertMode,
    ) -> Result<()> {
        for (keys, values) in parts {
            check_same_len("insert", keys.len(), values.len())?;
        }
        self.check_mode(mode)?;
        let full: Vec<_> = parts.iter().filter(|(k, _)| !k.is_empty()).collect();
        // (A clone of the kernel handle: before_insert below borrows the table mutably.)
        let kernel = self.scheme.locality().and_then(|l| l.parts);
        let kernel = kernel.map(|[k, _]| (k.kernel.clone(), k.resident_blocks));
        let (Some((kernel, resident_blocks)), true) = (kernel, full.len() > 1) else {
            for (keys, values) in full {
                self.insert_device_ordered_async(keys, values, mode)?;
            }
            return Ok(());
        };
        for (keys, values) in &full {
            S::before_insert(self, keys, values, None, None)?;
            self.counters.inserting(keys.len());
        }
        let lens: Vec<[u64; 5]> = full
            .iter()
            .map(|(k, v)| [k.device_address(), v.device_address(), 0, 0, k.len() as u64])
            .collect();
        let (table, mut tiles, bulk) = self.parts_batch(&lens, mode.word::<S::Value>())?;
        let view = self.view();
        self.launch(&kernel, resident_blocks, &view, &bulk, |l| {
            l.reads(&table).writes(&mut tiles);
            for (keys, values) in &full {
                l.reads(keys).reads(values);
            }
        })?;
        S::after_insert(self)
    }

    fn find_device_ordered_parts_async(
        &self,
        parts: &mut [OrderedFind<'_, S::Key, S::Value>],
    ) -> Result<()> {
        for p in parts.iter() {
            check_same_len("find", p.keys.len(), p.found.len())?;
            if let Some(v) = &p.values {
                check_same_len("find", p.keys.len(), v.len())?;
            }
        }
        let kernel = self.scheme.locality().and_then(|l| l.parts).map(|[_, k]| k);
        let mut full: Vec<&mut OrderedFind<'_, S::Key, S::Value>> =
            parts.iter_mut().filter(|p| !p.keys.is_empty()).collect();
        let (Some(kernel), true) = (kernel, full.len() > 1) else {
            for p in full {
                self.launch_ordered_find(p.keys, p.values.as_deref_mut(), p.found)?;
            }
            return Ok(());
        };
        let lens: Vec<[u64; 5]> = full
            .iter()
            .map(|p| {
                let out = p.values.as_ref().map_or(0, |v| v.device_address());
                let (keys, n) = (p.keys.device_address(), p.keys.len() as u64);
                [keys, 0, out, p.found.device_address(), n]
            })
            .collect();
        let (table, mut tiles, bulk) = self.parts_batch(&lens, 0)?;
        let view = self.view();
        self.launch(kernel.kernel, kernel.resident_blocks, &view, &bulk, |l| {
            l.reads(&table).writes(&mut tiles);
            for p in full.iter_mut() {
                l.reads(p.keys).writes(p.found);
                if let Some(v) = p.values.as_deref_mut() {
                    l.writes(v);
                }
            }
        })
    }

    fn contains_device_async(
        &self,
        keys: &DeviceBuffer<S::Key>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()> {
        self.find_any(keys, None, found)
    }

    fn erase_device_async(&mut self, keys: &DeviceBuffer<S::Key>) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        S::before_erase(self, keys.len())?;
        let (bulk, view, grid) = (Bulk::erase(keys), self.view(), self.grid(keys.len()));
        self.launch(&self.kernels.erase, grid, &view, &bulk, |l| {
            l.reads(keys);
        })
    }

    fn mixed_device_async(
        &mut self,
        ops: &DeviceBuffer<u8>,
        keys: &DeviceBuffer<S::Key>,
        values: &DeviceBuffer<S::Value>,
        status: &mut DeviceBuffer<u32>,
        out: &mut DeviceBuffer<S::Value>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()> {
        check_mixed_lens(
            keys.len(),
            ops.len(),
            values.len(),
            status.len(),
            out.len(),
            found.len(),
        )?;
        // Checked here, where the kernel is launched, so that the device path is guarded too.
        self.scheme.check_mixed(&self.gpu)?;
        if keys.is_empty() {
            return Ok(());
        }
        S::before_insert(self, keys, values, Some(ops), None)?;
        self.counters.inserting(keys.len());
        S::before_erase(self, keys.len())?;
        let bulk = Bulk::mixed(ops, keys, values, status, out, found);
        let (view, grid) = (self.view(), self.grid(keys.len()));
        self.launch(&self.kernels.mixed, grid, &view, &bulk, |l| {
            l.reads(ops).reads(keys).reads(values);
            l.writes(status).writes(out).writes(found);
        })?;
        S::after_insert(self)
    }

    fn retrieve_device(&self) -> Result<(DeviceBuffer<S::Key>, DeviceBuffer<S::Value>)> {
        let n = self.len()?;
        let mut keys = self.gpu.alloc::<S::Key>(n)?;
        let mut values = self.gpu.alloc::<S::Value>(n)?;
        let mut counter = self.gpu.alloc_filled::<u64>(1, 0)?;
        let positions = self.scheme.capacity() as u64;
        let grid = positions.div_ceil(BLOCK as u64).clamp(1, 65_536) as u32;
        let bulk = Bulk::retrieve(&keys, &values, &counter);
        let view = self.view();
        self.launch(&self.kernels.retrieve, grid, &view, &bulk, |l| {
            l.writes(&mut keys).writes(&mut values).writes(&mut counter);
        })?;
        let got = self.gpu.download(&counter)?[0] as usize;
        if got != n {
            return Err(Error::CountMismatch {
                operation: format!("{}_retrieve: stored pairs", S::NAME),
                expected: n,
                got,
            });
        }
        Ok((keys, values))
    }

    fn synchronize(&self) -> Result<()> {
        self.counters.synchronize(&self.gpu, self.scheme.capacity())
    }
}

/// The one-part function of a partitioned lookup's split (the plan's parts within it:
/// [`multisplit_within`] takes an outer and an inner function of one hash).
fn whole_batch(plan: &locality::Plan) -> PartFunction {
    PartFunction::new(1, plan.part.seed).hash(plan.part.hash)
}

/// A writable view of `range` of `buf` on `gpu`'s stream (the stream that owns it).
fn one_view<'a, T: bytemuck::Pod>(
    buf: &'a mut DeviceBuffer<T>,
    range: &std::ops::Range<usize>,
    gpu: &Gpu,
) -> Result<crate::device::BufferViewMut<'a, T>> {
    let mut views = Gpu::views_mut(buf, std::slice::from_ref(range), &[gpu])?;
    Ok(views.pop().expect("one range, one view"))
}

/// The elements of `v` at `at`, in that order.
fn gather<T: Copy>(v: &[T], at: &[usize]) -> Vec<T> {
    at.iter().map(|&i| v[i]).collect()
}
