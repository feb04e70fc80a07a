//! The locality-partitioned bulk insert: a batch of keys in the order of the table's stretches,
//! so that the inserts in flight hit L2 instead of DRAM.
//!
//! Every GPU hash table inserts a batch in input order, so each insert's first probe (and its
//! CAS) is a random access into a table many times the L2 cache: the random-access bound that
//! every peer obeys (on an H100, random CAS on a 2 GiB table runs at ~12.8 G/s, on a 32 MiB one
//! at ~36.5). Here the batch is first split by the engine's one-pass
//! [`multisplit`](super::multisplit) into parts by the *top bits of each key's first probe
//! position*: part `p`'s keys all start in the `p`-th of `parts` equal stretches of the table.
//! Then the scheme's *ordered* insert kernel runs over the split: one resident wave of blocks
//! that take tiles of consecutive keys in order from a counter (`wm_for_each_ordered` in
//! kernels/common/bulk.cuh), a thread per key, so that the keys in flight start in a narrow
//! stretch of the table, which stays in L2. Neither of the obvious launches keeps that: a
//! grid-stride loop lets blocks drift far apart over a large batch, and a block per few keys
//! pays a block launch and a count flush per few keys (both measured: bench/NOTES.md, issue 18).
//! The results are the same as in input order: an insert's outcome does not depend on the
//! batch's order beyond what the schemes already leave unspecified (which copy of a duplicated
//! key wins).
//!
//! A scheme opts in with [`Scheme::locality`](super::Scheme::locality): the seed and hash
//! function of its first probe, which must be `map_to_range(h.x, n)` of the key's first 32-bit
//! hash (WarpDrive's first window), so that [`PartFunction::part_of`] with the same seed and
//! hash gives the stretch, and its ordered kernel. Only inserts without per-key statuses take
//! this path ([`DeviceHashTable::insert_device_async`](crate::DeviceHashTable::insert_device_async)
//! with `None`); inserts with statuses, mixed batches and rehashes run in input order.
//!
//! **The split:** by default the split with slack
//! ([`multisplit_slack_async`](super::multisplit::multisplit_slack_async): one pass, each part
//! a region of its own with room to spare, no count), whose regions the ordered kernel walks up
//! to their fill before it inserts the keys that found their region full, from the chunk in
//! input order ([`slack_split`]); the counting split (a count, then the moves) where the slack
//! split does not serve (more than 2^10 parts) or the L2's sided walk is on.
//!
//! **Scratch:** the batch goes through in chunks ([`Plan::chunks`]); each chunk's split takes
//! `chunk × (key + value bytes)` of device memory and its regions' slack (about 2 % at 2^20
//! keys a part: [`slack_cap`](super::multisplit::slack_cap)), a bit a key for the flags and a
//! few KiB of counts, allocated on the table's stream and freed after the chunk's insert. A chunk is at least [`MIN_CHUNK`] keys and
//! long enough that the keys in flight start within a third of the L2 cache: about
//! `in_flight × table bytes / (L2 / 3)` keys (on an H100, 83M keys for a table of 2 GiB: 664 MiB
//! of u32 pairs), and less than twice that. A chunk whose split finds no device memory for its
//! scratch goes in input order (an out-of-memory error only where that fails too).
//!
//! **When:** [`LocalityMode::Auto`] (the default) partitions when the table is at least twice
//! the L2 cache (a smaller one is in L2 anyway) and the batch is at least one such chunk (see
//! [`plan`]). `WARPMAP_LOCALITY=on` or `=off` overrides `Auto` (for measurements). Measured on an
//! H100: bench/NOTES.md, issue 18.

use super::multisplit::PartFunction;
use super::{knob, BLOCK};
use crate::device::{Gpu, Kernel};
use crate::hash::HashFunction;
use crate::Result;

/// Parts of a split at most (two passes of the counting multisplit).
pub const MAX_PARTS: u32 = 1 << 20;
/// Keys per chunk, at least: the scratch of a chunk of 2^24 u32 pairs is 128 MiB.
pub const MIN_CHUNK: usize = 1 << 24;
/// Rounds of a block's tile in an ordered insert kernel (`wm_for_each_ordered`): a tile is this
/// many times the block's threads, consecutive keys. 4 beat 1 on an H100 (bench/NOTES.md,
/// issue 18).
pub const ORDERED_ROUNDS: u32 = 4;

/// [`ORDERED_ROUNDS`], unless the measurement knob `WARPMAP_ORDERED_ROUNDS` (1 to 16) says
/// otherwise: the kernels' define and the host's count of the keys in flight both read it here.
pub fn ordered_rounds() -> u32 {
    knob::<u32>("WARPMAP_ORDERED_ROUNDS")
        .filter(|r| (1..=16).contains(r))
        .unwrap_or(ORDERED_ROUNDS)
}

/// Items of a tile of the ordered insert kernels (`wm_for_each_ordered`): [`BLOCK`] threads
/// times [`deep_rounds`] (`deep`) or [`ordered_rounds`].
pub fn tile_items(deep: bool) -> u64 {
    let rounds = if deep {
        deep_rounds()
    } else {
        ordered_rounds()
    };
    BLOCK as u64 * rounds as u64
}

/// Whether a partitioned insert splits its chunks with slack
/// ([`multisplit_slack_async`](super::multisplit::multisplit_slack_async)): one pass over the
/// chunk, where the counting split reads its keys twice (a count, then the moves), the ordered
/// kernel walking each part's region up to its fill and then inserting the keys that found
/// their region full from the chunk. On, unless the measurement knob `WARPMAP_SLACK_SPLIT=0`;
/// splits of more parts than one pass takes (2^10) and the L2's sided walk count as before.
pub fn slack_split() -> bool {
    knob::<u32>("WARPMAP_SLACK_SPLIT").is_none_or(|v| v != 0)
}

/// Rounds of a tile of a scheme's *deep* ordered insert ([`Locality::deep_insert`]), which a
/// batch takes when it leaves the table [`DEEP_LOADS`] full. Measured on an H200 (WarpDrive,
/// 2^27 keys, the compare preset, bench/NOTES.md, session AE), 6 rounds against 4: inserts of
/// u64 pairs +1 / +6.6 / +3 % at load 0.8 / 0.9 / 0.95, u32 pairs +6 / +8 / −1 %, and the
/// finds of present keys that follow −0.7 / −3.8 / −2.9 % (u64) and −0 / −0.7 / −2.1 % (u32):
/// the chains come out laid differently. At load 0.5, equal (u64) and −1.6 % (u32) inserts.
pub const DEEP_ROUNDS: u32 = 6;

/// The loads after a batch (by the table's bound on its stored keys) at which it takes the deep
/// ordered insert ([`DEEP_ROUNDS`]): from 0.75 to 0.925, where an insert followed by as many
/// finds of its keys gains (u32 +3.5 / +4 %, u64 +0.2 / +1.9 % at 0.8 / 0.9); at 0.95 the finds
/// lose as much as the inserts gain (u64) or both lose (u32).
pub const DEEP_LOADS: std::ops::Range<f64> = 0.75..0.925;

/// [`DEEP_ROUNDS`], unless the measurement knob `WARPMAP_ORDERED_ROUNDS_DEEP` (1 to 16) says
/// otherwise (read by the kernels' define and the plan alike, as [`ordered_rounds`]).
pub fn deep_rounds() -> u32 {
    knob::<u32>("WARPMAP_ORDERED_ROUNDS_DEEP")
        .filter(|r| (1..=16).contains(r))
        .unwrap_or(DEEP_ROUNDS)
}

/// Whether inserts are partitioned by locality (see the [module docs](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LocalityMode {
    /// When the table and the batch are large enough ([`plan`]).
    #[default]
    Auto,
    /// Every insert batch without statuses (for tests and measurements).
    On,
    /// Never: inserts in input order, as every peer.
    Off,
    /// Every insert batch without statuses, in chunks of this many keys (at least 1): for
    /// tests of the chunked path and for measurements.
    Chunks(usize),
}

impl LocalityMode {
    /// `Auto`, unless `WARPMAP_LOCALITY` says `on` or `off`; `On` and `Off` stay as they are.
    pub(crate) fn resolved(self) -> LocalityMode {
        if self != LocalityMode::Auto {
            return self;
        }
        match std::env::var("WARPMAP_LOCALITY").as_deref().map(str::trim) {
            Ok("on") => LocalityMode::On,
            Ok("off") => LocalityMode::Off,
            _ => LocalityMode::Auto,
        }
    }
}

/// A scheme's locality: how its keys' first probes fall in the table ([`Stretches`]), and its
/// ordered kernels: `(view, wm_bulk)` like the bulk ones, a thread per key over
/// `wm_for_each_ordered`, results in the batch's order. The insert takes no statuses and its
/// tile counter is the engine counters' third word; the find's tile counter is `wm_bulk`'s
/// `counter` (zeroed by the engine). The kernels over several parts at once take the parts in
/// `wm_bulk`'s `parts` (`wm_for_each_ordered_parts`, tile counter in `counter`).
#[derive(Clone, Copy)]
pub struct Locality<'a> {
    /// How the first probes fall.
    pub stretches: Stretches,
    /// The ordered insert kernel.
    pub insert: OrderedKernel<'a>,
    /// The ordered insert with tiles of [`deep_rounds`] rounds, for batches that leave the
    /// table [`DEEP_LOADS`] full, if the scheme has one.
    pub deep_insert: Option<OrderedKernel<'a>>,
    /// The ordered find kernel (finds and contains), if the scheme has one.
    pub find: Option<OrderedKernel<'a>>,
    /// The ordered insert and find over several parts in one launch, if the scheme has them.
    pub parts: Option<[OrderedKernel<'a>; 2]>,
    /// The array the first probes read (device address, bytes), where the ordered insert
    /// kernels take the L2's sides ([`super::l2_sides`]: `wm_bulk`'s `sm_l2_side` and `granule_l2_side`,
    /// granules counted from this address); `None`: they do not.
    pub array: Option<(u64, u64)>,
    /// Whether the ordered inserts read a batch of `{key, value}` pairs (`wm_batch_item`: a
    /// slack split in [`SlackLayout::Pairs`](super::multisplit::SlackLayout::Pairs), where it
    /// serves the types).
    pub reads_pairs: bool,
}

/// An ordered kernel and its blocks of [`BLOCK`] threads resident at once
/// ([`resident_blocks`], asked once when the scheme binds the kernel, not per batch): it is
/// launched as one resident wave.
#[derive(Clone, Copy)]
pub struct OrderedKernel<'a> {
    /// The kernel.
    pub kernel: &'a Kernel,
    /// Its resident blocks.
    pub resident_blocks: u32,
}

/// Blocks of [`BLOCK`] threads of `kernel` resident at once on `gpu` (one wave).
///
/// # Errors
/// The driver's, from the occupancy query.
pub fn resident_blocks(gpu: &Gpu, kernel: &Kernel) -> Result<u32> {
    Ok(gpu.sm_count().max(1) * gpu.max_active_blocks_per_sm(kernel, BLOCK)?.max(1))
}

/// How a table's keys' first probes fall in its stretches (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stretches {
    /// The seed of the first probe's hash.
    pub seed: u64,
    /// The hash function of the first probe.
    pub hash: HashFunction,
    /// The bytes of the table's arrays that the first probes spread over.
    pub table_bytes: u64,
    /// The table's setting.
    pub mode: LocalityMode,
}

/// How one insert batch is partitioned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The split: parts in the order of the table's stretches.
    pub part: PartFunction,
    /// Keys per chunk (each chunk is split, then inserted; the ordered insert runs one resident
    /// wave, [`OrderedKernel::resident_blocks`]).
    pub chunk: usize,
    /// Whether the chunks go through the deep ordered insert ([`Locality::deep_insert`]).
    pub deep: bool,
}

impl Plan {
    /// The chunks of a batch of `n` keys: `chunk` keys each, the last one taking the rest (so
    /// it holds less than twice `chunk`).
    pub fn chunks(&self, n: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
        let chunk = self.chunk.max(1);
        let count = (n / chunk).max(1);
        (0..count).map(move |c| c * chunk..if c + 1 == count { n } else { (c + 1) * chunk })
    }
}

/// The machine facts a plan depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    /// L2 cache bytes.
    pub l2_bytes: u64,
    /// Blocks of [`BLOCK`] threads of the ordered kernel resident at once (one wave).
    pub resident_blocks: u32,
    /// Rounds of the ordered kernel's tile ([`ordered_rounds`], or [`deep_rounds`]).
    pub rounds: u32,
}

impl Machine {
    /// The facts of `gpu` for a scheme's locality (its ordered insert).
    pub fn of(gpu: &Gpu, loc: &Locality) -> Machine {
        Machine {
            l2_bytes: gpu.l2_bytes(),
            resident_blocks: loc.insert.resident_blocks,
            rounds: ordered_rounds(),
        }
    }

    /// The same for the scheme's deep ordered insert, if it has one.
    pub fn of_deep(gpu: &Gpu, loc: &Locality) -> Option<Machine> {
        let deep = loc.deep_insert?;
        Some(Machine {
            l2_bytes: gpu.l2_bytes(),
            resident_blocks: deep.resident_blocks,
            rounds: deep_rounds(),
        })
    }

    /// Keys the blocks in flight hold: a tile each.
    pub fn in_flight(&self) -> u64 {
        self.resident_blocks as u64 * BLOCK as u64 * self.rounds as u64
    }
}

/// The keys in flight may start in at most `1 / SPAN_OF_L2` of the L2 cache. Measured on an
/// H100 (WarpDrive, 2^27 keys, bench/NOTES.md issue 18): spans of 10.8 and 13.5 MB gained 1.3-1.7x,
/// 21.6 MB nothing, 86 MB lost.
const SPAN_OF_L2: u64 = 3;

/// The plan for a batch of `n` keys, or `None` to insert in input order.
///
/// The keys in flight ([`Machine::in_flight`]) are consecutive keys of a chunk in part order,
/// so they start in about `in_flight × table_bytes / chunk` bytes of the table. `Auto`
/// partitions an insert when the table is at least twice the L2 cache and that span, with the
/// batch as one chunk, is at most a third of it. The chunk is the larger of [`MIN_CHUNK`] and
/// the length that keeps the span within that third ([`Plan::chunks`]: the last chunk takes the
/// rest), or the whole batch where it is shorter. (A batch shorter than [`MIN_CHUNK`] whose span
/// is within the third is partitioned too: 15 M u32 keys into a 240 MB table, a hash join's
/// build, took 1.2 ms instead of 1.9 on an H200; bench/NOTES.md, issue 19, session Z. Lookups
/// keep [`MIN_CHUNK`] as their least batch: [`find_plan`].)
/// Parts: a power of two, the fewest whose stretch is at most [`STRETCH_OF_L2`] of the L2
/// cache, at most [`MAX_PARTS`]. More parts cost the split more than they give (H100, u32
/// pairs into 2 GiB: 128 parts 16.0 G inserts/s, 256 14.6, 512 13.5; bench/NOTES.md).
/// The measurement knob `WARPMAP_INSERT_STRETCH=N/D` takes parts of at most `N/D` of the L2
/// cache instead, as many as that takes (not rounded up to a power of two).
pub fn plan(st: &Stretches, n: usize, machine: Machine) -> Option<Plan> {
    plan_at_load(st, n, machine, 0.0)
}

/// [`plan`] for a batch that leaves the table `load` full (by its bound on the stored keys):
/// from [`FULL_LOAD`] on, parts of at most [`FULL_STRETCH_OF_L2`] of the L2 cache, as many as
/// that takes (the knob `WARPMAP_INSERT_STRETCH` decides at every load where it is set).
pub fn plan_at_load(st: &Stretches, n: usize, machine: Machine, load: f64) -> Option<Plan> {
    let asked = knob::<String>("WARPMAP_INSERT_STRETCH").and_then(|f| {
        let (a, b) = f.split_once('/')?;
        let (a, b) = (a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?);
        (a > 0 && b > 0).then_some((a, b))
    });
    let asked = asked.or((load >= FULL_LOAD).then_some(FULL_STRETCH_OF_L2));
    let ((num, den), exact) = asked.map_or((STRETCH_OF_L2, false), |f| (f, true));
    plan_with(st, n, machine, machine.l2_bytes * num / den, 0, exact)
}

/// From this load after a batch (by the table's bound on its stored keys), an insert takes the
/// finer stretches of [`FULL_STRETCH_OF_L2`] ([`plan_at_load`]).
pub const FULL_LOAD: f64 = 0.925;

/// A batch that leaves the table [`FULL_LOAD`] full or more takes parts of at most this
/// fraction of the L2 cache (as many parts as that takes, not a power of two) instead of
/// [`STRETCH_OF_L2`]. Measured on H200s (WarpDrive, 2^27 keys, the compare preset, alternated,
/// bench/NOTES.md sessions AL call 3 and AM call 5): inserts at load 0.95 u32 14.61-14.62 →
/// 15.25-15.28 and 14.73-14.76 → 15.32-15.35 G/s (+4.4 %, +4.0 %), u64 11.32-11.36 →
/// 11.62-11.63 and 11.35-11.36 → 11.58-11.62 (+2.5 %, +2.1 %); at the lower loads the same
/// stretches moved the cells both ways (u64 at 0.5 −0.3 % and −0.5 %, u32 at 0.9 −0.5 %), so
/// they keep [`STRETCH_OF_L2`].
pub const FULL_STRETCH_OF_L2: (u64, u64) = (5, 16);

/// [`plan`] with parts of at most `max_stretch` bytes of the table (`exact`: as many parts as
/// that takes, else a power of two); under `Auto`, batches of fewer than `min_batch` keys go
/// in input order.
fn plan_with(
    st: &Stretches,
    n: usize,
    machine: Machine,
    max_stretch: u64,
    min_batch: usize,
    exact: bool,
) -> Option<Plan> {
    let span = (machine.l2_bytes / SPAN_OF_L2).max(1);
    // Keys per chunk so that the keys in flight span at most `span` bytes.
    let spanned = (machine.in_flight() as u128 * st.table_bytes as u128).div_ceil(span as u128);
    let spanned = spanned.min(usize::MAX as u128) as usize;
    let local = spanned.max(MIN_CHUNK);
    let chunk = match st.mode.resolved() {
        LocalityMode::Off => return None,
        _ if n == 0 => return None,
        LocalityMode::Chunks(c) => c.clamp(1, n),
        LocalityMode::On => local.min(n),
        LocalityMode::Auto => {
            if st.table_bytes < 2 * machine.l2_bytes || n < spanned.max(min_batch) {
                return None;
            }
            local.min(n)
        }
    };
    let mut plan = Plan {
        part: parts_for(st, max_stretch, exact),
        chunk,
        deep: false,
    };
    // Measurement knobs: the chunk and the parts.
    if let Some(c) = knob::<usize>("WARPMAP_LOCALITY_CHUNK") {
        plan.chunk = c.clamp(1, n);
    }
    if let Some(p) = knob::<u32>("WARPMAP_LOCALITY_PARTS") {
        plan.part.parts = p.clamp(1, MAX_PARTS);
    }
    Some(plan)
}

/// Under [`LocalityMode::Auto`], lookups take the partitioned path ([`find_plan`]) from this
/// load factor up, in tables other than those of [`FIND_ANY_LOAD_SLOT_BYTES`]-byte slots. A lookup in input order reads
/// one random window after another along its key's chain, and the chains lengthen with the
/// load; in the order of the stretches the windows are mostly in L2, but the split (keys with
/// their positions) and the gather of the answers back to input order move every key, its
/// position and its answer twice more. Measured on an H200 (2^27 keys, bench/NOTES.md, issue
/// 18, session Y): with 16-byte slots (u64 pairs) the partitioned find of present keys ran at
/// 0.74 / 0.91 / 0.99 / 1.08 of the direct one at load 0.5 / 0.8 / 0.9 / 0.95 (absent keys:
/// 0.91 / 1.09 / 1.14 / 1.23); with 8-byte slots (u32 pairs) at 1.12-1.24 at every load
/// ([`FIND_ANY_LOAD_SLOT_BYTES`]).
pub const FIND_MIN_LOAD: f64 = 0.9;

/// Tables of slots of exactly this many bytes (WarpDrive's packed layout: a 4-byte key and a
/// 4-byte value in one word) take the partitioned lookup at any load under `Auto` (the
/// table-size and batch rules still apply): a window holds more keys per sector and the split
/// moves less per key, and on an H200 the partitioned find of
/// 2^27 u32 keys ran 1.16 / 1.12 / 1.23 / 1.24 times the direct one at load 0.5 / 0.8 / 0.9 /
/// 0.95 (misses 1.25 / 1.17 / 1.28 / 1.35). (On an H100 at load 0.8, the same path once measured
/// 7.08 ms against 6.94 direct: bench/NOTES.md, issue 14, step 2.) The tagged layout's 4-byte
/// slots are tags whose pairs lie elsewhere; not measured, they follow the load rule.
pub const FIND_ANY_LOAD_SLOT_BYTES: u64 = 8;

/// The plan for a lookup of `n` keys in a table of `slot_bytes`-byte slots whose load factor is
/// at most `load`, or `None` to look up in input order: as [`plan`] (the same chunks, parts of
/// at most [`FIND_STRETCH_OF_L2`],
/// the same table-size and batch rules), and under `Auto` in tables of other slots than
/// [`FIND_ANY_LOAD_SLOT_BYTES`]-byte ones only from [`FIND_MIN_LOAD`]. `On` and `Chunks` partition every
/// lookup, as they do inserts (for tests). `WARPMAP_LOCALITY_FIND=off` never partitions a
/// lookup and `=on` ignores the load (for measurements).
pub fn find_plan(
    st: &Stretches,
    n: usize,
    machine: Machine,
    slot_bytes: u64,
    load: f64,
) -> Option<Plan> {
    let forced = knob::<String>("WARPMAP_LOCALITY_FIND");
    let any_load = slot_bytes == FIND_ANY_LOAD_SLOT_BYTES;
    match forced.as_deref() {
        Some("off") => return None,
        Some("on") => {}
        _ if st.mode.resolved() == LocalityMode::Auto && !any_load && load < FIND_MIN_LOAD => {
            return None
        }
        _ => {}
    }
    lookup_plan(st, n, machine)
}

/// The split of a lookup of `n` keys at any load (answers in the table's order take it where an
/// insert would be partitioned): the chunks of [`plan`], parts of at most [`FIND_STRETCH_OF_L2`]
/// of L2, and under `Auto` batches of at least [`MIN_CHUNK`] keys.
pub fn lookup_plan(st: &Stretches, n: usize, machine: Machine) -> Option<Plan> {
    let max_stretch = machine.l2_bytes * FIND_STRETCH_OF_L2.0 / FIND_STRETCH_OF_L2.1;
    plan_with(st, n, machine, max_stretch, MIN_CHUNK, false)
}

/// A lookup's split ([`find_plan`]) takes parts of at most this fraction of the L2 cache, not
/// [`STRETCH_OF_L2`]: on an H200 (u32 pairs at load 0.5, 2 GiB, session Z) 64 parts of 33.5 MB
/// found 2 % (hits) to 7.5 % (misses) slower than 128 of 16.8 MB, while the insert was equal.
pub const FIND_STRETCH_OF_L2: (u64, u64) = (1, 2);

/// For a caller that splits a batch of `n` keys anyway (the sharded table splits every batch by
/// shard): the part function that puts the batch in the order of the table's stretches, so that
/// the scheme's ordered kernels can take it, or `None` where that would not pay. The split then
/// costs nothing of its own, so no chunk length is asked for ([`MIN_CHUNK`] is there to spread a
/// split's cost), and the keys in flight may start within [`ORDERED_SPAN_OF_L2`] times the L2
/// cache (not a third of it); under `Auto` the table must be at least twice the L2 cache.
pub fn order_for(st: &Stretches, n: usize, machine: Machine) -> Option<PartFunction> {
    let span = machine.l2_bytes as u128 * ORDERED_SPAN_OF_L2 as u128;
    let local = n as u128 * span >= machine.in_flight() as u128 * st.table_bytes as u128;
    let ordered = match st.mode.resolved() {
        LocalityMode::Off => false,
        _ if n == 0 => false,
        LocalityMode::On | LocalityMode::Chunks(_) => true,
        LocalityMode::Auto => st.table_bytes >= 2 * machine.l2_bytes && local,
    };
    ordered.then(|| parts_for(st, machine.l2_bytes / 2, false))
}

/// Where a caller's split is free ([`order_for`]), the keys in flight may start within this many
/// times the L2 cache. Measured on an H100 (8 shards of 168 MB, u32 pairs through the sharded
/// host pipeline, chunks of 2^24 / 2^25 / 2^26 pairs: each shard's keys in flight spanning about
/// 57 / 28 / 14 MB): ordered 0.89 / 0.85 / 0.78 of the bus, against 0.61 / 0.72 / 0.65 in
/// input order (bench/NOTES.md, issue 14).
pub const ORDERED_SPAN_OF_L2: u64 = 2;

/// A part's stretch of the table in a batch's split ([`plan`]) is at most this fraction
/// (numerator, denominator) of the L2 cache. Stretches of 16-34 MB did best on an H200 (60 MiB
/// of L2; WarpDrive, 2^27 keys, bench/NOTES.md issue 18, sessions Y and Z): u64 pairs at load
/// 0.5 (4.29 GB) 128 parts (33.5 MB) 14.8-15.1 G inserts/s against 256 parts 14.3-14.6, while
/// 42 MB stretches lost 9 % (u32 at 0.8, 32 parts) and 3 % (u64 at 0.8). At half of L2, the
/// bound before, 4.29 GB took 256 parts. On an H100 (50 MiB) the counts stay those measured
/// there. A caller's free split ([`order_for`]) keeps half of L2 (its parts are per shard, not
/// measured with the larger bound), and so do lookups ([`FIND_STRETCH_OF_L2`]).
pub const STRETCH_OF_L2: (u64, u64) = (9, 16);

/// The split by the table's stretches: the fewest parts, a power of two, whose stretch is at
/// most `max_stretch` bytes, at most [`MAX_PARTS`].
fn parts_for(st: &Stretches, max_stretch: u64, exact: bool) -> PartFunction {
    let stretch = max_stretch.max(1);
    let fewest = st.table_bytes.div_ceil(stretch);
    let parts = if exact {
        fewest
    } else {
        fewest.next_power_of_two()
    }
    .clamp(1, MAX_PARTS as u64) as u32;
    PartFunction::new(parts, st.seed).hash(st.hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An H100 running the WarpDrive ordered insert: 132 multiprocessors, 5 blocks each.
    const H100: Machine = Machine {
        l2_bytes: 50 << 20,
        resident_blocks: 660,
        rounds: ORDERED_ROUNDS,
    };

    fn st(table_bytes: u64, mode: LocalityMode) -> Stretches {
        Stretches {
            seed: 7,
            hash: HashFunction::default(),
            table_bytes,
            mode,
        }
    }

    #[test]
    fn auto_partitions_large_batches_into_large_tables() {
        // 2^28 slots of 8 bytes (the compare preset at load 0.5): 2 GiB, in one chunk.
        let p = plan(&st(2 << 30, LocalityMode::Auto), 1 << 27, H100).expect("partitioned");
        assert_eq!((p.part.parts, p.part.seed), (128, 7));
        assert_eq!(p.chunks(1 << 27).collect::<Vec<_>>(), vec![0..1 << 27]);
        // The keys in flight span at most a third of L2, in every chunk.
        let span = |len: usize| H100.in_flight() as u128 * (2u128 << 30) / len as u128;
        assert!(span(p.chunk) <= (50 << 20) / 3);
        // A larger batch: chunks of that length at least.
        let p = plan(&st(2 << 30, LocalityMode::Auto), 1 << 29, H100).expect("partitioned");
        let chunks: Vec<_> = p.chunks(1 << 29).collect();
        assert!(chunks.len() > 1);
        assert!(chunks.iter().all(|c| span(c.len()) <= (50 << 20) / 3));
    }

    #[test]
    fn auto_leaves_small_tables_and_small_batches() {
        // A table within twice the L2 cache.
        assert_eq!(plan(&st(80 << 20, LocalityMode::Auto), 1 << 27, H100), None);
        // A batch whose keys in flight would spread over much of the table.
        assert_eq!(plan(&st(2 << 30, LocalityMode::Auto), 1 << 24, H100), None);
        assert_eq!(plan(&st(2 << 30, LocalityMode::Auto), 0, H100), None);
    }

    #[test]
    fn auto_partitions_a_short_batch_whose_span_fits() {
        // A hash join's build: 15 M u32 pairs into 30 M slots (240 MB). The keys in flight of
        // the whole batch span about 10.8 MB, within a third of L2: one chunk, partitioned.
        let table = st(240 << 20, LocalityMode::Auto);
        let p = plan(&table, 15_000_000, H100).expect("partitioned");
        assert_eq!(p.chunk, 15_000_000);
        // Lookups keep MIN_CHUNK as their least batch.
        assert_eq!(find_plan(&table, 15_000_000, H100, 8, 0.5), None);
        assert!(find_plan(&table, MIN_CHUNK, H100, 8, 0.5).is_some());
        // Shorter still: the span would pass the third.
        assert_eq!(plan(&table, 5_000_000, H100), None);
    }

    #[test]
    fn forced_modes() {
        let on = plan(&st(1 << 10, LocalityMode::On), 100, H100).expect("on");
        assert_eq!((on.chunk, on.part.parts), (100, 1));
        let on = plan(&st(2 << 30, LocalityMode::On), 1 << 20, H100).expect("on");
        assert_eq!((on.chunk, on.part.parts), (1 << 20, 128));
        assert_eq!(plan(&st(2 << 30, LocalityMode::Off), 1 << 27, H100), None);
        assert_eq!(plan(&st(1 << 10, LocalityMode::On), 0, H100), None);
        let c = plan(&st(2 << 30, LocalityMode::Chunks(1000)), 5000, H100).expect("chunks");
        assert_eq!((c.chunk, c.part.parts), (1000, 128));
        let c = plan(&st(1 << 10, LocalityMode::Chunks(0)), 5, H100).expect("chunks");
        assert_eq!(c.chunk, 1);
        assert_eq!(plan(&st(1 << 10, LocalityMode::Chunks(8)), 0, H100), None);
    }

    #[test]
    fn lookups_partition_from_the_load_bound_under_auto() {
        let auto = st(2 << 30, LocalityMode::Auto);
        // Wide slots: below FIND_MIN_LOAD in input order; from it the insert's plan.
        assert_eq!(find_plan(&auto, 1 << 27, H100, 16, 0.8), None);
        assert_eq!(
            find_plan(&auto, 1 << 27, H100, 16, FIND_MIN_LOAD),
            plan(&auto, 1 << 27, H100)
        );
        assert!(find_plan(&auto, 1 << 27, H100, 16, 0.95).is_some());
        // Narrow slots: at any load.
        assert_eq!(
            find_plan(&auto, 1 << 27, H100, 8, 0.1),
            plan(&auto, 1 << 27, H100)
        );
        // The table-size and batch rules still hold.
        assert_eq!(find_plan(&auto, 1 << 27, H100, 4, 0.5), None); // tags
        let small = st(80 << 20, LocalityMode::Auto);
        assert_eq!(find_plan(&small, 1 << 27, H100, 8, 0.95), None);
        assert_eq!(find_plan(&auto, 1 << 24, H100, 16, 0.95), None);
        // Forced modes ignore the load.
        let on = find_plan(&st(1 << 10, LocalityMode::On), 100, H100, 16, 0.0).expect("on");
        assert_eq!((on.chunk, on.part.parts), (100, 1));
        let off = st(2 << 30, LocalityMode::Off);
        assert_eq!(find_plan(&off, 1 << 27, H100, 8, 0.99), None);
    }

    #[test]
    fn chunks_cover_the_batch_and_the_last_takes_the_rest() {
        let p = |chunk| Plan {
            part: PartFunction::new(4, 1),
            chunk,
            deep: false,
        };
        let all = |chunk, n| p(chunk).chunks(n).collect::<Vec<_>>();
        assert_eq!(
            all(1000, 5000),
            vec![0..1000, 1000..2000, 2000..3000, 3000..4000, 4000..5000]
        );
        assert_eq!(all(1000, 2999), vec![0..1000, 1000..2999]);
        assert_eq!(all(1000, 999), vec![0..999]);
        assert_eq!(all(0, 3), vec![0..1, 1..2, 2..3]);
        assert_eq!(all(1 << 20, 1 << 27).len(), 128);
    }

    #[test]
    fn order_for_a_caller_that_splits_anyway() {
        // A shard of an 8-way sharded table at load 0.5: 256 MiB, 2^24 keys per batch.
        let f = order_for(&st(256 << 20, LocalityMode::Auto), 1 << 24, H100).expect("ordered");
        assert_eq!((f.parts, f.seed), (16, 7));
        // No chunk length asked for: shorter than MIN_CHUNK, the keys in flight still local.
        assert!(order_for(&st(256 << 20, LocalityMode::Auto), 12 << 20, H100).is_some());
        // Longer than a chunk's rule allows: the keys in flight within twice the L2 cache.
        assert!(order_for(&st(256 << 20, LocalityMode::Auto), 1 << 22, H100).is_some());
        // Too short for that; a table in L2; off.
        assert_eq!(
            order_for(&st(256 << 20, LocalityMode::Auto), 1 << 20, H100),
            None
        );
        assert_eq!(
            order_for(&st(64 << 20, LocalityMode::Auto), 1 << 24, H100),
            None
        );
        assert_eq!(
            order_for(&st(256 << 20, LocalityMode::Off), 1 << 24, H100),
            None
        );
        assert_eq!(order_for(&st(256 << 20, LocalityMode::Auto), 0, H100), None);
        // On: any batch, any table.
        let f = order_for(&st(1 << 10, LocalityMode::On), 100, H100).expect("on");
        assert_eq!(f.parts, 1);
    }

    #[test]
    fn deep_tiles_count_in_the_keys_in_flight() {
        // An H200 with u64 pairs at load 0.9 (2.39 GB): 6 rounds keep the keys in flight of a
        // batch of 2^27 within a third of L2, in one chunk; at load 0.5 (4.29 GB) they would not.
        let deep = Machine {
            l2_bytes: 60 << 20,
            resident_blocks: 528,
            rounds: DEEP_ROUNDS,
        };
        assert_eq!(deep.in_flight(), 528 * BLOCK as u64 * DEEP_ROUNDS as u64);
        let full = st(16 * 149_130_808, LocalityMode::Auto);
        let p = plan(&full, 1 << 27, deep).expect("partitioned");
        assert_eq!(p.chunks(1 << 27).collect::<Vec<_>>(), vec![0..1 << 27]);
        assert!(!p.deep); // the caller marks it deep
        assert_eq!(plan(&st(16 << 28, LocalityMode::Auto), 1 << 27, deep), None);
        let plain = Machine {
            rounds: ORDERED_ROUNDS,
            ..deep
        };
        assert!(plan(&st(16 << 28, LocalityMode::Auto), 1 << 27, plain).is_some());
    }

    #[test]
    fn huge_tables_take_more_parts_and_longer_chunks() {
        // 64 GiB: stretches of at most 9/16 of L2 need 2^12 parts; chunks grow with the table.
        let p = plan(&st(64 << 30, LocalityMode::Auto), 1 << 32, H100).expect("partitioned");
        assert_eq!(p.part.parts, 1 << 12);
        assert!(p.chunk > MIN_CHUNK);
    }

    #[test]
    fn a_batch_split_takes_stretches_up_to_nine_sixteenths_of_l2() {
        // An H200 (60 MiB of L2) with u64 pairs at load 0.5: 2^28 slots of 16 bytes. Stretches
        // of 33.5 MB (128 parts) measured faster than 16.8 MB (256); a caller's free split
        // keeps stretches of at most half of L2 (256 parts).
        let h200 = Machine {
            l2_bytes: 60 << 20,
            resident_blocks: 660,
            rounds: ORDERED_ROUNDS,
        };
        let table = 16u64 << 28;
        let p = plan(&st(table, LocalityMode::On), 1 << 27, h200).expect("forced");
        assert_eq!(p.part.parts, 128);
        let f = order_for(&st(table, LocalityMode::On), 1 << 27, h200).expect("forced");
        assert_eq!(f.parts, 256);
        // u32 pairs at load 0.8 (1.34 GB) stay at 64 parts (21 MB): 32 (42 MB) lost 9 %.
        let p = plan(&st(8 * 167_772_160, LocalityMode::On), 1 << 27, h200).expect("forced");
        assert_eq!(p.part.parts, 64);
        // u32 pairs at load 0.5 (2 GiB): inserts 64 parts, lookups 128 (half of L2).
        let p = plan(&st(2 << 30, LocalityMode::On), 1 << 27, h200).expect("forced");
        assert_eq!(p.part.parts, 64);
        let f = find_plan(&st(2 << 30, LocalityMode::On), 1 << 27, h200, 8, 0.5).expect("forced");
        assert_eq!(f.part.parts, 128);
    }

    #[test]
    fn a_batch_that_fills_the_table_takes_finer_stretches() {
        // u64 pairs at load 0.95 on an H200: 2^27 / 0.95 slots of 16 bytes (2.26 GB). Below
        // FULL_LOAD the power of two whose stretch is at most 9/16 of L2 (64 parts of 35 MB);
        // from it on, as many parts of at most 5/16 of L2 (19.7 MB) as that takes (115).
        let h200 = Machine {
            l2_bytes: 60 << 20,
            resident_blocks: 660,
            rounds: ORDERED_ROUNDS,
        };
        let table = 16 * (134_217_728f64 / 0.95) as u64;
        let s = st(table, LocalityMode::On);
        assert_eq!(plan_at_load(&s, 1 << 27, h200, 0.9).unwrap().part.parts, 64);
        assert_eq!(
            plan_at_load(&s, 1 << 27, h200, 0.95).unwrap().part.parts,
            115
        );
        assert_eq!(plan(&s, 1 << 27, h200).unwrap().part.parts, 64);
    }
}
