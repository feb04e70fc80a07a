//! A table sharded over several GPUs (WarpDrive §IV-B), or over several tables of one GPU or of
//! the host: [`ShardedMap`] wraps any scheme of the [registry](crate::table::registry).
//!
//! Every key belongs to one shard by a partition hash `p(k)` ([`PartFunction`], under a seed
//! no table uses). A **rank** is a GPU handle (a stream) that holds input and owns
//! `shards_per_rank` shards; ranks are usually one per GPU. An operation runs the paper's
//! cascades:
//! - **insert**: each rank splits its batch into one part per shard (a stable split on the GPU,
//!   kernels/sharded.cu), the parts are exchanged (all-to-all: part `p` of every rank goes to
//!   shard `p`), and each shard inserts what it received;
//! - **query** (find, contains): the same, then each shard's answers travel back the same way
//!   (transposed), and each rank puts them into its callers' original order;
//! - **erase** and **mixed batches** the same (a mixed batch's operations travel with their keys,
//!   so every operation on one key meets the same shard).
//!
//! **By default nothing travels** ([`Transport::Peer`]): the GPUs of one process reach each
//! other's memory (peer access, over NVLink), so every shard works on its part of every rank's
//! split where that rank put it (a view: no copy), its kernels reading the keys and writing the
//! answers over the link, and each rank then puts the answers into its callers' order. The
//! link's traffic rides inside the kernels, beside their table work, where copies would come
//! before (the parts) and after it (the answers). A shard's parts go to its table in one call
//! ([`DeviceHashTable::insert_device_ordered_parts_async`] and the find's twin), its own rank's
//! first, then the next ranks' in turn; WarpDrive takes them in one launch whose tiles
//! interleave the parts by their progress through its stretches, so that the link's traffic
//! rides beside the local work. On 4 H100s with 2^27 keys per GPU, inserts went from 0.64 of
//! four times one GPU's rate with copies to 0.88-0.90 and finds from 0.51 to 0.69-0.72 (0.78 /
//! 0.60 with the parts one after another); on 2, from 0.87-0.89 / 0.71-0.73 to 0.96-0.97 /
//! 0.89-0.93 (bench/NOTES.md, Issues 15 and 16, session R).
//!
//! Otherwise the parts travel through one small interface ([`exchange::Exchange`]) with two
//! implementations that the same cascade drives: device-to-device copies ([`Transport::Copy`];
//! peer copies between GPUs of this process; the fallback of `Peer` where two GPUs cannot reach
//! each other) and NCCL grouped send/receive ([`Transport::Nccl`], cargo feature `nccl`; the
//! only one across processes). A shard then takes its part of its own rank's split in place
//! and works on it first, while the copies of the other ranks' parts into it run; then it works
//! on what arrived. With one shard in all, an operation goes straight to the one table.
//!
//! **Shards in the order of their stretches.** Where every shard's table names the same order
//! that it takes fastest ([`DeviceHashTable::stretch_order`]: WarpDrive's stretches, once a
//! shard's share of a batch is long enough for its keys in flight to stay in L2), every rank's
//! split also orders each shard's keys by its table's stretches, in the same pass (the engine's
//! counting split by (shard, stretch),
//! [`multisplit_within`](crate::table::engine::multisplit::multisplit_within), with positions),
//! and the shards insert and look up through their ordered kernels, on their own part and on
//! each piece that arrives (each in that order). Inserts without statuses, finds and contains
//! take that path, device batches and host chunks alike; statuses, erases and mixed batches keep
//! the stable split. On the H100 (u32 pairs, 2^27 keys, load 0.8, 8 shards on one GPU): device
//! inserts 0.66 → 1.05 of the bare table, finds 0.75 → 0.97-0.98 (bench/NOTES.md, Issue 14,
//! session M); on 2 H200s, each with 2^27 keys of its own: inserts 0.70 → 0.86 of twice one
//! GPU's rate, finds 0.59 → 0.71 (Issue 15, session Q).
//!
//! Inputs can be on the host ([`HashTable`]: the batch is cut into one piece per rank) or
//! already on the GPU ([`DeviceHashTable`]: the batch is on rank 0; [`ShardedMap::ranks`] gives
//! the handles).
//!
//! Without a GPU, a sharded map of CPU tables ([`TableConfig::Cpu`]) runs the same cascade on
//! the host (split by the same partition hash, shards in parallel on rayon).
//!
//! # Capacity
//!
//! Each shard is made with room for `capacity / shards` keys plus the partition's spread (six
//! standard deviations of a binomial draw, and 16): [`capacity`](HashTable::capacity) is the
//! number of keys that fits at that margin in the smallest shard, at least the capacity asked
//! for. A shard that fills up reports its keys (per-key statuses, [`Error::TableFull`]), like
//! any table; the other shards are not affected.
//!
//! # Across processes and nodes
//!
//! [`ShardedMap::new`] over several GPUs of one process is the easy path. A table over several
//! processes or nodes is made by each process with the ranks it holds:
//! 1. one process makes an NCCL unique id (`device::nccl::UniqueId::new`, feature `nccl`)
//!    and hands it to the others out of band (as text: `to_hex` / `from_hex`);
//! 2. every process joins the group with its ranks
//!    (`device::nccl::Communicator::from_unique_id`,
//!    `ncclCommInitRank`), one GPU per rank;
//! 3. every process makes its part of the table with the same configuration
//!    (`ShardedMap::join`) and then calls the same operations in the same order, each with
//!    its own keys.
//!
//! The cascade is the same code: each process splits its keys, the part sizes of every rank
//! come to every process through an NCCL all-gather, and each process enqueues its halves of
//! the grouped send/receive. [`Transport::NcclGroup`] runs that protocol in one process (the
//! tests run it over the contract suite, and over two processes on one GPU that claim
//! different hosts, through NCCL's socket transport).

pub mod exchange;
pub mod split;

use crate::device::{BufferView, BufferViewMut, DeviceBuffer, Gpu, Move, PinnedBuffer, Stamp};
use crate::hash::HashFunction;
use crate::key::{Key, Value};
use crate::status::InsertStatus;
use crate::table::engine::multisplit::{PartFunction, MAX_WITHIN_PARTS};
use crate::table::registry::TableConfig;
use crate::table::{
    check_mixed_lens, Backend, DeviceHashTable, HashTable, InsertMode, MixedOp, OrderedFind,
};
use crate::trace::{env_flag, PhaseClock};
use crate::{Error, Result};
use exchange::{CopyExchange, Exchange};
use rayon::prelude::*;
use split::{split_async, unsplit, Keep, SplitBatch};
use std::sync::Arc;

/// The partition seed: unlike every table's default seed, so that one shard's keys spread over
/// its table's slots like any keys.
pub const DEFAULT_PARTITION_SEED: u64 = 0x5ba2_d0c7_13e9_4f61;

/// How a sharded table's ranks exchange parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Nothing is copied: every shard works on its parts where the ranks split them, its
    /// kernels reading the keys (and values) and writing the answers in place on the splitting
    /// rank's GPU, over the link (peer access, which the table turns on between its GPUs).
    /// Each GPU's kernels then carry the traffic themselves, beside their own work, instead of
    /// waiting for copies in and copies back. Where two of the GPUs cannot reach each other,
    /// the table exchanges by [`Copy`](Self::Copy) instead.
    #[default]
    Peer,
    /// Device-to-device copies (peer copies between GPUs): a shard's parts from other ranks
    /// are copied to its GPU before its work on them, and its answers copied back; the parts
    /// that stay on their rank are not copied.
    Copy,
    /// NCCL grouped send/receive (cargo feature `nccl`), every part through NCCL (also between
    /// shards of one GPU, which NCCL sends to itself).
    Nccl,
    /// NCCL through a communicator made from a new unique id in this process, and the
    /// protocol of a table over several processes (`ShardedMap::join`, feature `nccl`: part sizes and
    /// agreements through NCCL all-gathers) with this process as the whole group: what every
    /// process of a multi-process table runs, in one process (cargo feature `nccl`).
    NcclGroup,
}

/// A sharded table's configuration.
#[derive(Clone, Debug)]
pub struct ShardedConfig {
    /// Keys the table holds in all (see the [module docs](self#capacity)).
    pub capacity: usize,
    /// The scheme of every shard (its capacity is replaced).
    pub inner: Box<TableConfig>,
    /// Shards per rank (1 to 256 shards in all).
    pub shards_per_rank: usize,
    /// Rank handles per GPU given: 1 (one rank per GPU) unless several ranks should share a
    /// GPU, which exercises the copy exchange on one GPU.
    pub ranks_per_gpu: usize,
    /// How ranks exchange parts.
    pub transport: Transport,
    /// The partition hash's seed.
    pub partition_seed: u64,
    /// The partition hash.
    pub hash: HashFunction,
    /// Host-slice batches of GPU shards longer than this run as a pipeline of chunks of this
    /// many keys per rank: the upload of one chunk (through pinned memory) overlaps the split,
    /// exchange and table work of the one before (WarpDrive Fig. 11). `None`: automatic
    /// ([`ShardedConfig::chunk`]).
    pub pipeline_batch: Option<usize>,
}

impl ShardedConfig {
    /// `capacity` keys over shards of `inner`, one shard per rank, copies, the default seed.
    pub fn new(capacity: usize, inner: TableConfig) -> Self {
        ShardedConfig {
            capacity,
            inner: Box::new(inner),
            shards_per_rank: 1,
            ranks_per_gpu: 1,
            transport: Transport::Copy,
            partition_seed: DEFAULT_PARTITION_SEED,
            hash: HashFunction::default(),
            pipeline_batch: None,
        }
    }
    /// The host pipeline's chunk (keys per rank; at least 1).
    pub fn pipeline_batch(mut self, keys: usize) -> Self {
        self.pipeline_batch = Some(keys.max(1));
        self
    }
    /// The host pipeline's chunk in keys per rank: `pipeline_batch`, or by default 2^24 (the
    /// issue's own example; [`ShardedMap::host_chunk`] doubles it for large batches into shards
    /// whose tables are large beside the L2 cache): long enough for every shard's share to go in the order of its
    /// table's stretches (see the [module docs](self)), short enough that the uploads overlap
    /// the shards' work. On the H100, 2^27 pinned pairs into 8 shards of one rank, in that order,
    /// went at 0.89 of the bus in chunks of 2^24, 0.85 in chunks of 2^25, 0.78 in chunks of 2^26;
    /// in input order at 0.61 / 0.72 / 0.65 (bench/NOTES.md, Issue 14). The last chunk's worth
    /// of a rank's piece goes in smaller chunks (halves down to an eighth), so that little work
    /// is left after the last upload.
    pub fn chunk(&self) -> usize {
        self.pipeline_batch.unwrap_or(1usize << 24)
    }
    /// Shards per rank.
    pub fn shards_per_rank(mut self, n: usize) -> Self {
        self.shards_per_rank = n;
        self
    }
    /// Rank handles per GPU.
    pub fn ranks_per_gpu(mut self, n: usize) -> Self {
        self.ranks_per_gpu = n;
        self
    }
    /// The exchange.
    pub fn transport(mut self, t: Transport) -> Self {
        self.transport = t;
        self
    }
    /// The partition seed.
    pub fn partition_seed(mut self, seed: u64) -> Self {
        self.partition_seed = seed;
        self
    }
}

/// The capacity each of `shards` shards is made with for `total` keys: an even share plus the
/// partition's spread (see the [module docs](self#capacity)).
pub fn shard_capacity(total: usize, shards: usize) -> usize {
    if shards <= 1 {
        return total.max(1);
    }
    let share = total.div_ceil(shards);
    share + (6.0 * (share as f64).sqrt()).ceil() as usize + 16
}

/// The keys that fit in `shards` shards whose smallest holds `smallest`: the largest `n` with
/// `shard_capacity(n, shards) <= smallest` (the inverse of [`shard_capacity`]).
pub fn sharded_capacity(smallest: usize, shards: usize) -> usize {
    if shards <= 1 {
        return smallest;
    }
    // share + 6 sqrt(share) + 16 <= smallest: sqrt(share) <= -3 + sqrt(9 + smallest - 16).
    let room = smallest as f64 - 16.0;
    if room <= 0.0 {
        return 0;
    }
    let x = (-3.0 + (9.0 + room).sqrt()).max(0.0);
    let mut n = (x * x).floor() as usize * shards;
    while n > 0 && shard_capacity(n, shards) > smallest {
        n -= shards; // float rounding: step down to the exact bound
    }
    while shard_capacity(n + 1, shards) <= smallest {
        n += 1;
    }
    n
}

/// A table sharded by a partition hash over tables of any scheme (see the [module
/// docs](self)).
pub struct ShardedMap<K: Key, V: Value> {
    config: ShardedConfig,
    part: PartFunction,
    body: Body<K, V>,
}

enum Body<K: Key, V: Value> {
    /// CPU tables: split on the host.
    Host(Vec<Box<dyn HashTable<K, V>>>),
    /// GPU tables.
    Device(Box<Shards<K, V>>),
}

/// The GPU side: the tables (shard `s` belongs to rank `s / per_rank`, each table on a stream
/// of its own) and how they are reached.
struct Shards<K: Key, V: Value> {
    tables: Vec<Box<dyn DeviceHashTable<K, V>>>,
    ctx: Ctx,
    /// Pinned staging of the host pipeline, per rank [`SLOTS`] slots (allocated on first use).
    staging: std::sync::Mutex<Vec<[Slot<K, V>; SLOTS]>>,
}

/// One slot of a rank's host pipeline: pinned host buffers for a chunk's inputs and results,
/// and the chunk's device buffers, kept until the slot is used again (their frees would
/// otherwise hold the upload stream back until the chunk's operations are done).
struct Slot<K, V> {
    keys: Option<PinnedBuffer<K>>,
    values: Option<PinnedBuffer<V>>,
    ops: Option<PinnedBuffer<u8>>,
    status: Option<PinnedBuffer<u32>>,
    out: Option<PinnedBuffer<V>>,
    found: Option<PinnedBuffer<u8>>,
    /// The chunk's device buffers: inputs, and outputs (in batch order).
    device: Option<(Input2<K, V>, Results<V>)>,
    /// The batch range whose results wait in the pinned buffers.
    pending: Option<std::ops::Range<usize>>,
}

/// A chunk's inputs on the device (owned).
type Input2<K, V> = (
    DeviceBuffer<K>,
    Option<DeviceBuffer<V>>,
    Option<DeviceBuffer<u8>>,
);

impl<K, V> Default for Slot<K, V> {
    fn default() -> Self {
        Slot {
            keys: None,
            values: None,
            ops: None,
            status: None,
            out: None,
            found: None,
            device: None,
            pending: None,
        }
    }
}

/// The ranks, each shard's handle and the exchange. A rank's own handle splits and sends (the
/// host waits only for it, to read the part sizes); the rest of a batch's work on a rank runs
/// on the streams of one of [`SLOTS`] lanes ([`Lane`]), so that consecutive batches (the
/// chunks of a host pipeline, the sub-batches of a device call) overlap.
struct Ctx {
    /// The handles of the ranks held here.
    ranks: Vec<Arc<Gpu>>,
    /// Their rank numbers in the group (`0..ranks.len()` unless joined).
    held: Vec<usize>,
    /// Ranks in the group (all processes).
    world: usize,
    /// Ranks in other processes may exist: every process takes part in every operation, and
    /// part sizes travel through NCCL ([`ShardedMap::join`]).
    joined: bool,
    /// [`SLOTS`] lanes: batch `c` of a pipeline works on lane `c % SLOTS`.
    lanes: Vec<Lane>,
    /// Each shard table's handle (its stream), for the shards held here: local shard `l`
    /// belongs to held rank `l / per_rank`.
    gpus: Vec<Arc<Gpu>>,
    per_rank: usize,
    exchange: exchange::Transport,
    /// Every shard reaches every rank's split in place ([`Transport::Peer`]): nothing travels.
    in_place: bool,
}

/// Where a table's ranks are and how its shards reach the parts of other ranks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// In this process, every GPU reaching every other (peer access): parts are used in place.
    InPlace,
    /// In this process, parts travel through the exchange.
    Exchange,
    /// Ranks in other processes too (`ShardedMap::join`): parts travel through NCCL.
    Joined,
}

impl Ctx {
    /// The group's number of local shard `l`.
    fn global_shard(&self, l: usize) -> usize {
        self.held[l / self.per_rank] * self.per_rank + l % self.per_rank
    }

    /// This process's `row` beside every other's: one row per rank of the group, `row` on
    /// the first rank held here and zeros on its other ranks (so sums count each process once).
    fn gather_process(&self, row: &[u64]) -> Result<Vec<Vec<u64>>> {
        let mut rows = vec![vec![0u64; row.len()]; self.ranks.len()];
        rows[0] = row.to_vec();
        self.gather_world(rows)
    }

    /// Every rank's row of numbers, rank by rank, from `rows` (one per rank held here, all of
    /// one length in every process): the rows themselves in one process, an NCCL all-gather
    /// in a group of processes (which waits for every process to get here).
    fn gather_world(&self, rows: Vec<Vec<u64>>) -> Result<Vec<Vec<u64>>> {
        if !self.joined {
            return Ok(rows);
        }
        #[cfg(feature = "nccl")]
        if let exchange::Transport::Nccl(x) = &self.exchange {
            let m = rows.first().map_or(0, |r| r.len());
            if m == 0 {
                return Ok(vec![Vec::new(); self.world]);
            }
            let send = rows
                .iter()
                .zip(&self.ranks)
                .map(|(row, g)| g.upload(row))
                .collect::<Result<Vec<_>>>()?;
            let mut recv = self
                .ranks
                .iter()
                .map(|g| g.alloc::<u64>(m * self.world))
                .collect::<Result<Vec<_>>>()?;
            {
                let s: Vec<&DeviceBuffer<u64>> = send.iter().collect();
                let mut d: Vec<&mut DeviceBuffer<u64>> = recv.iter_mut().collect();
                x.with(|c| c.all_gather(&s, &mut d))?;
            }
            let all = self.ranks[0].download(&recv[0])?;
            return Ok(all.chunks(m).map(|c| c.to_vec()).collect());
        }
        Err(Error::invalid(
            "a sharded table over processes exchanges through NCCL",
        ))
    }
}

/// One lane of every rank: `gathers[r]` owns a batch's split buffers and results and puts them
/// in order (it is the stream that waits for the shards); `copies[r]` uploads host batches.
///
/// Why lanes and not one such stream per rank: the device layer orders a stream after
/// another one at the other's *current* end (an event recorded when the wait is enqueued). On
/// one upload stream, the shards' read of chunk `c` would wait for the upload of chunk `c + 1`
/// (enqueued before it, to overlap), and that upload for the free of chunk `c - 2`'s buffers,
/// which waits for the shards' work of chunk `c - 1`: every chunk after the one before, no
/// overlap at all (a 1-shard host insert of 2^27 pinned pairs on an H100 took 39 ms, the
/// upload's and the insert's times added up; on lanes 23 ms). On lanes, chunk `c`'s streams
/// carry only chunk `c`'s work and that of chunks `c ± SLOTS`.
struct Lane {
    gathers: Vec<Arc<Gpu>>,
    copies: Vec<Arc<Gpu>>,
    /// Copies on the gather streams (the way back of the copy exchange).
    back_copies: CopyExchange,
}

impl Lane {
    fn new(ranks: &[Arc<Gpu>]) -> Result<Lane> {
        let gathers = ranks
            .iter()
            .map(|r| r.with_new_stream())
            .collect::<Result<Vec<_>>>()?;
        let copies = ranks
            .iter()
            .map(|r| r.with_new_stream())
            .collect::<Result<Vec<_>>>()?;
        Ok(Lane {
            back_copies: CopyExchange::new(gathers.clone())?,
            gathers,
            copies,
        })
    }
}

/// One shard's part of an operation, on the device: what the shard's table reads and writes.
struct Io<'a, K, V> {
    /// The keys are in the order of the shard table's stretches ([`Shape::order`]).
    ordered: bool,
    keys: &'a DeviceBuffer<K>,
    values: Option<&'a DeviceBuffer<V>>,
    ops: Option<&'a DeviceBuffer<u8>>,
    status: Option<&'a mut DeviceBuffer<u32>>,
    out: Option<&'a mut DeviceBuffer<V>>,
    found: Option<&'a mut DeviceBuffer<u8>>,
}

/// One rank's batch, in its caller's order.
struct Input<'a, K, V> {
    keys: &'a DeviceBuffer<K>,
    values: Option<&'a DeviceBuffer<V>>,
    ops: Option<&'a DeviceBuffer<u8>>,
}

/// One rank's results, in its caller's order.
struct Output<'a, V> {
    status: Option<&'a mut DeviceBuffer<u32>>,
    out: Option<&'a mut DeviceBuffer<V>>,
    found: Option<&'a mut DeviceBuffer<u8>>,
}

/// A shard's own call in an operation: `(tables, shard, ios)`, `ios` the shard's parts (in
/// place, one per rank with keys for it; through an exchange, one at a time).
type ShardOp<'o, T, K, V> = dyn FnMut(&mut T, usize, Vec<Io<'_, K, V>>) -> Result<()> + 'o;

/// A shard's insert of its parts: the ordered ones without statuses in one call
/// ([`DeviceHashTable::insert_device_ordered_parts_async`]: WarpDrive works on them together),
/// the others one by one.
fn insert_parts<K: Key, V: Value>(
    t: &mut dyn DeviceHashTable<K, V>,
    ios: Vec<Io<'_, K, V>>,
    mode: InsertMode,
) -> Result<()> {
    let mut ordered = Vec::with_capacity(ios.len());
    for io in ios {
        let values = io.values.expect("values travel with an insert's keys");
        match (io.ordered, io.status) {
            (true, None) => ordered.push((io.keys, values)),
            (_, status) => t.insert_device_async_with_mode(io.keys, values, status, mode)?,
        }
    }
    t.insert_device_ordered_parts_async(&ordered, mode)
}

/// A shard's mixed batches, one part after another (their operations and results travel with
/// their keys).
fn mixed_parts<K: Key, V: Value>(
    t: &mut dyn DeviceHashTable<K, V>,
    ios: Vec<Io<'_, K, V>>,
) -> Result<()> {
    for io in ios {
        t.mixed_device_async(
            io.ops.expect("operations travel with a mixed batch's keys"),
            io.keys,
            io.values.expect("values travel with a mixed batch's keys"),
            io.status.expect("statuses come back from a mixed batch"),
            io.out.expect("values come back from a mixed batch"),
            io.found.expect("found flags come back from a mixed batch"),
        )?;
    }
    Ok(())
}

/// A shard's lookups of its parts (`values`: finds; else contains): the ordered ones in one
/// call ([`DeviceHashTable::find_device_ordered_parts_async`]), the others one by one.
fn find_parts<K: Key, V: Value>(
    t: &dyn DeviceHashTable<K, V>,
    ios: Vec<Io<'_, K, V>>,
    values: bool,
) -> Result<()> {
    let mut ordered = Vec::with_capacity(ios.len());
    for io in ios {
        let found = io.found.expect("found flags come back from a lookup");
        let out = values.then(|| io.out.expect("values come back from a find"));
        match (io.ordered, out) {
            (true, values) => ordered.push(OrderedFind {
                keys: io.keys,
                values,
                found,
            }),
            (false, Some(out)) => t.find_device_async(io.keys, out, found)?,
            (false, None) => t.contains_device_async(io.keys, found)?,
        }
    }
    t.find_device_ordered_parts_async(&mut ordered)
}

/// Results on the device: statuses, values, found flags (each only where asked for).
type Results<V> = (
    Option<DeviceBuffer<u32>>,
    Option<DeviceBuffer<V>>,
    Option<DeviceBuffer<u8>>,
);

/// What an operation moves: payloads with the keys (values, mixed-batch operations), and
/// results back (statuses, values, found flags). The same in every process of a group, also
/// in one that has no keys in a batch (it still serves the others' keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Shape {
    values: bool,
    ops: bool,
    status: bool,
    out: bool,
    found: bool,
    /// The order that every shard's table takes fastest
    /// ([`DeviceHashTable::stretch_order`]), where they agree on one: every rank's split then
    /// puts each shard's keys in it (see [`Ctx::cascade`]).
    order: Option<PartFunction>,
}

/// What an operation's results keep of the caller's buffers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kept {
    Nothing,
    ValuesOfMisses,
    ByOperation,
}

/// The pieces of the forward exchange: `counts[g][p]` keys go from rank `g` to shard `p`, from
/// where part `p` is in rank `g`'s split (after its parts for lower shards) to where shard `p`
/// receives them (after the parts of lower ranks), except the parts that stay on their rank
/// (shard `p` belongs to rank `p / per_rank`: it reads its part of that rank's split in place).
/// Returns the pieces (from rank `g`, to shard `p`; empty ones left out) and each shard's
/// total received. The way back is the same pieces with `from` and `to` swapped.
fn exchange_plan(counts: &[Vec<u64>], per_rank: usize) -> (Vec<Move>, Vec<u64>) {
    let shards = counts.first().map_or(0, |c| c.len());
    let mut received = vec![0u64; shards];
    let mut moves = Vec::with_capacity(counts.len() * shards);
    for (g, row) in counts.iter().enumerate() {
        let mut at = 0u64;
        for (p, got) in received.iter_mut().enumerate() {
            let len = row[p];
            if len > 0 && p / per_rank != g {
                moves.push(Move {
                    from: g,
                    from_at: at,
                    to: p,
                    to_at: *got,
                    len,
                });
                *got += len;
            }
            at += len;
        }
    }
    (moves, received)
}

fn reversed(moves: &[Move]) -> Vec<Move> {
    moves
        .iter()
        .map(|m| Move {
            from: m.to,
            from_at: m.to_at,
            to: m.from,
            to_at: m.from_at,
            len: m.len,
        })
        .collect()
}

fn views<'a, T: bytemuck::Pod>(
    buf: &'a DeviceBuffer<T>,
    ranges: &[std::ops::Range<usize>],
    gpus: &[Arc<Gpu>],
) -> Result<Vec<BufferView<'a, T>>> {
    ranges
        .iter()
        .zip(gpus)
        .map(|(r, g)| g.view(buf, r.clone()))
        .collect()
}

/// One source's parts as the shards that work on them see them (views of its split and of
/// its results, in the order of `shards`).
struct PartViews<'a, K: bytemuck::Pod, V: bytemuck::Pod> {
    /// The source (a rank held here).
    rank: usize,
    /// The local shards with a part here.
    shards: Vec<usize>,
    keys: Vec<BufferView<'a, K>>,
    values: Option<Vec<BufferView<'a, V>>>,
    ops: Option<Vec<BufferView<'a, u8>>>,
    status: Option<Vec<BufferViewMut<'a, u32>>>,
    out: Option<Vec<BufferViewMut<'a, V>>>,
    found: Option<Vec<BufferViewMut<'a, u8>>>,
}

fn views_mut<'a, T: bytemuck::Pod>(
    buf: Option<&'a mut DeviceBuffer<T>>,
    ranges: &[std::ops::Range<usize>],
    gpus: &[Arc<Gpu>],
) -> Result<Option<Vec<BufferViewMut<'a, T>>>> {
    let on: Vec<&Gpu> = gpus.iter().map(|g| g.as_ref()).collect();
    buf.map(|b| Gpu::views_mut(b, ranges, &on)).transpose()
}

impl Ctx {
    /// Runs one operation over the shards: `inputs[r]` is rank `r`'s batch (`None`: nothing),
    /// `outputs[r]` where its results go (in the batch's order), `kept` what the results leave
    /// of the caller's buffers, and `op(tables, shard, ios)` the shard's own call on its parts,
    /// on the streams of `lane` (see [`Lane`]). Asynchronous but for the split's part sizes.
    #[allow(clippy::too_many_arguments)] // an operation's parts, each its own concern
    fn cascade<K: Key, V: Value, T>(
        &self,
        tables: &mut T,
        part: &PartFunction,
        inputs: &[Option<Input<'_, K, V>>],
        outputs: &mut [Option<Output<'_, V>>],
        kept: Kept,
        shape: Shape,
        op: &mut ShardOp<'_, T, K, V>,
        lane: &Lane,
    ) -> Result<()> {
        let Ctx {
            ranks,
            gpus,
            per_rank,
            exchange,
            ..
        } = self;
        let Lane {
            gathers,
            back_copies,
            ..
        } = lane;
        let per_rank = *per_rank;
        let shards = gpus.len();
        if self.world * per_rank == 1 {
            // One table: the operation goes straight to it.
            let (Some(i), o) = (inputs[0].as_ref(), outputs[0].as_mut()) else {
                return Ok(());
            };
            let io = match o {
                Some(o) => Io {
                    ordered: false,
                    keys: i.keys,
                    values: i.values,
                    ops: i.ops,
                    status: o.status.as_deref_mut(),
                    out: o.out.as_deref_mut(),
                    found: o.found.as_deref_mut(),
                },
                None => Io {
                    ordered: false,
                    keys: i.keys,
                    values: i.values,
                    ops: i.ops,
                    status: None,
                    out: None,
                    found: None,
                },
            };
            return op(tables, 0, vec![io]);
        }
        let want = (shape.status, shape.out, shape.found);
        // Results come back to the sources' order through the split's positions.
        let results = want.0 || want.1 || want.2;
        // Split every rank's batch.
        let one_gpu = ranks.len() == 1 && matches!(exchange, exchange::Transport::Copy(_));
        let mut trace = CascadeTrace::new(!one_gpu, ranks)?;
        // The split also puts each shard's keys in the order its table takes fastest (at no
        // cost of its own: the ranking is the same pass), where the parts fit one split. A
        // shard then works on its range of its own rank's split and on the piece from every
        // other rank, each in that order: its ordered kernels run through its stretches once
        // per piece.
        let within = shape.order.filter(|o| {
            o.hash == part.hash && part.parts as u64 * o.parts as u64 <= MAX_WITHIN_PARTS as u64
        });
        // Every rank's split is enqueued before the host waits for any part sizes, so that the
        // ranks' GPUs split side by side. With several ranks, each rank's split is enqueued and
        // waited for on a thread of its own: the enqueue of a split (its allocations and
        // launches) takes ~0.2 ms of host time on an H100 machine, so one thread enqueueing
        // four ranks' splits started the last one ~0.6 ms after the first.
        let split_one = |r: usize, b: &Input<'_, K, V>| -> Result<_> {
            let pending = split_async(
                &ranks[r],
                &gathers[r],
                part,
                within.as_ref(),
                b.keys,
                b.values,
                b.ops,
                results,
            )?;
            // (Traced: when the rank's split kernels end on its GPU, before the host waits
            // for its part sizes.)
            let stamp = trace.on().then(|| ranks[r].stamp()).transpose()?;
            Ok((r, pending, stamp))
        };
        let todo: Vec<(usize, &Input<'_, K, V>)> = inputs
            .iter()
            .enumerate()
            .filter_map(|(r, b)| b.as_ref().filter(|b| !b.keys.is_empty()).map(|b| (r, b)))
            .collect();
        let split_all = if todo.len() > 1 && split_threads() {
            todo.par_iter()
                .map(|&(r, b)| {
                    let (r, p, stamp) = split_one(r, b)?;
                    Ok((r, p.finish(&ranks[r])?, stamp))
                })
                .collect::<Result<Vec<_>>>()?
        } else {
            let pending = todo
                .iter()
                .map(|&(r, b)| split_one(r, b))
                .collect::<Result<Vec<_>>>()?;
            pending
                .into_iter()
                .map(|(r, p, stamp)| Ok((r, p.finish(&ranks[r])?, stamp)))
                .collect::<Result<Vec<_>>>()?
        };
        let mut sources: Vec<(usize, SplitBatch<K, V>)> = Vec::with_capacity(split_all.len());
        for (r, sb, stamp) in split_all {
            if let Some(stamp) = stamp {
                trace.push("split kernels", ranks[r].ordinal(), stamp);
            }
            sources.push((r, sb));
        }
        trace.mark("split", ranks)?;
        if sources.is_empty() && !self.joined {
            return Ok(()); // (in a group of processes, this one still serves the others)
        }
        // Per source: its results in split order (what the shards' answers come back into).
        let mut back: Vec<Results<V>> = Vec::new();
        for (r, sb) in &sources {
            let n = sb.keys.len();
            let g = &gathers[*r];
            back.push((
                want.0.then(|| g.alloc::<u32>(n)).transpose()?,
                want.1.then(|| g.alloc::<V>(n)).transpose()?,
                want.2.then(|| g.alloc::<u8>(n)).transpose()?,
            ));
        }
        // Every rank's part sizes: counts[g][p] keys go from rank g to shard p (all ranks of
        // the group, all shards; from other processes through NCCL).
        let all_shards = self.world * per_rank;
        let mut rows = vec![vec![0u64; all_shards]; ranks.len()];
        for (r, sb) in &sources {
            rows[*r] = (0..all_shards).map(|p| sb.plan.part_len(p)).collect();
        }
        let counts = self.gather_world(rows)?;
        // A shard's part of its own rank's split stays where it is; the other parts travel.
        let (moves, totals) = exchange_plan(&counts, per_rank);
        // The shards held here: local shard l is shard global[l] of the group.
        let global: Vec<usize> = (0..shards).map(|l| self.global_shard(l)).collect();
        let local_totals: Vec<u64> = global.iter().map(|&p| totals[p]).collect();
        fn receive<T: bytemuck::Pod>(
            gpus: &[Arc<Gpu>],
            totals: &[u64],
        ) -> Result<Vec<DeviceBuffer<T>>> {
            gpus.iter()
                .zip(totals)
                .map(|(g, &t)| g.alloc::<T>(t as usize))
                .collect()
        }
        // Per shard of the group: its buffer where it is held here, and its rank.
        fn by_shard<'b, T>(
            bufs: &'b mut [DeviceBuffer<T>],
            global: &[usize],
            all_shards: usize,
            per_rank: usize,
        ) -> Vec<(Option<&'b mut DeviceBuffer<T>>, usize)> {
            let mut v: Vec<(Option<&mut DeviceBuffer<T>>, usize)> =
                (0..all_shards).map(|p| (None, p / per_rank)).collect();
            for (b, &p) in bufs.iter_mut().zip(global) {
                v[p].0 = Some(b);
            }
            v
        }
        // Per rank of the group: its source, where it is one here.
        let source_of: Vec<Option<usize>> = (0..self.world)
            .map(|g| sources.iter().position(|(r, _)| self.held[*r] == g))
            .collect();
        // Whether any part travels (the same in every process: from the same counts). In
        // place, none does: every shard reaches every rank's split.
        let travel = !self.in_place && !moves.is_empty();
        // What a shard receives belongs to its rank's gather stream, not to the shard's own:
        // the copies into it then hold back the gather stream and the shard's work on what it
        // received, not the shard's work on its own part, which runs beside them.
        let owners: Vec<Arc<Gpu>> = (0..shards).map(|l| gathers[l / per_rank].clone()).collect();
        // The parts that stay first: each shard works on its range of its rank's split in
        // place, and in place (`Transport::Peer`) on its range of every rank's split, its
        // kernels reading the keys and writing the answers over the link. (First, as the views
        // of the results order each shard's stream after its source's gather stream, which the
        // copies below will hold up.)
        let mut parts = Vec::with_capacity(sources.len());
        for ((r, sb), (bs, bv, bf)) in sources.iter().zip(back.iter_mut()) {
            let all_ranges = sb.plan.ranges();
            let here: Vec<usize> = (0..shards)
                .filter(|&l| self.in_place || l / per_rank == *r)
                .filter(|&l| !all_ranges[global[l]].is_empty())
                .collect();
            if here.is_empty() {
                continue;
            }
            let ranges: Vec<_> = here
                .iter()
                .map(|&l| all_ranges[global[l]].clone())
                .collect();
            let on: Vec<Arc<Gpu>> = here.iter().map(|&l| gpus[l].clone()).collect();
            parts.push(PartViews {
                rank: *r,
                keys: views(&sb.keys, &ranges, &on)?,
                values: sb
                    .values
                    .as_ref()
                    .map(|v| views(v, &ranges, &on))
                    .transpose()?,
                ops: sb
                    .ops
                    .as_ref()
                    .map(|o| views(o, &ranges, &on))
                    .transpose()?,
                status: views_mut(bs.as_mut(), &ranges, &on)?,
                out: views_mut(bv.as_mut(), &ranges, &on)?,
                found: views_mut(bf.as_mut(), &ranges, &on)?,
                shards: here,
            });
        }
        // Each shard's parts, its own rank's first, then the next ranks' in turn, so that in
        // place the GPUs read from different GPUs at each step rather than all from the first
        // (its ordered kernels take them together, in one launch where the table can).
        let n = ranks.len();
        let mut ios: Vec<Vec<(usize, Io<'_, K, V>)>> = (0..shards).map(|_| Vec::new()).collect();
        for pv in parts.iter_mut() {
            let mut status = pv.status.as_mut().map(|v| v.iter_mut());
            let mut out = pv.out.as_mut().map(|v| v.iter_mut());
            let mut found = pv.found.as_mut().map(|v| v.iter_mut());
            for (j, &l) in pv.shards.iter().enumerate() {
                let turn = (pv.rank + n - l / per_rank) % n;
                ios[l].push((
                    turn,
                    Io {
                        ordered: within.is_some(),
                        keys: &pv.keys[j],
                        values: pv.values.as_ref().map(|v| &*v[j]),
                        ops: pv.ops.as_ref().map(|o| &*o[j]),
                        status: status.as_mut().and_then(|v| v.next()).map(|v| &mut **v),
                        out: out.as_mut().and_then(|v| v.next()).map(|v| &mut **v),
                        found: found.as_mut().and_then(|v| v.next()).map(|v| &mut **v),
                    },
                ));
            }
        }
        for (l, mut mine) in ios.into_iter().enumerate() {
            if mine.is_empty() {
                continue;
            }
            mine.sort_by_key(|&(turn, _)| turn);
            // (Traced: when the shard's stream reaches its work: after its inputs' events and
            // the host's enqueue.)
            trace.mark("shard starts", std::slice::from_ref(&gpus[l]))?;
            op(tables, l, mine.into_iter().map(|(_, io)| io).collect())?;
        }
        // Dropping the views orders the sources' streams after the shards' work.
        drop(parts);
        trace.mark(if travel { "own parts" } else { "shards' op" }, gpus)?;
        // Then the travelling parts, whose copies run beside the shards' work on the parts that
        // stay: part p of every other source to shard p, into a new buffer per shard held here.
        macro_rules! deliver {
            ($sb:ident => $field:expr) => {{
                let mut bufs = receive(&owners, &local_totals)?;
                let send: Vec<_> = source_of
                    .iter()
                    .enumerate()
                    .map(|(g, s)| {
                        let buf = s.and_then(|i| {
                            let $sb = &sources[i].1;
                            $field
                        });
                        (buf, g)
                    })
                    .collect();
                let mut recv = by_shard(&mut bufs, &global, all_shards, per_rank);
                exchange.transfer(&send, &mut recv, &moves)?;
                bufs
            }};
        }
        if travel {
            let keys = deliver!(sb => Some(&sb.keys));
            let values = shape
                .values
                .then(|| Ok(deliver!(sb => sb.values.as_ref())))
                .transpose()?;
            let ops = shape
                .ops
                .then(|| Ok(deliver!(sb => sb.ops.as_ref())))
                .transpose()?;
            trace.mark("delivered", gathers)?;
            let mut status: Option<Vec<DeviceBuffer<u32>>> = want
                .0
                .then(|| receive(&owners, &local_totals))
                .transpose()?;
            let mut out: Option<Vec<DeviceBuffer<V>>> = want
                .1
                .then(|| receive(&owners, &local_totals))
                .transpose()?;
            let mut found: Option<Vec<DeviceBuffer<u8>>> = want
                .2
                .then(|| receive(&owners, &local_totals))
                .transpose()?;
            for l in 0..shards {
                if local_totals[l] == 0 {
                    continue;
                }
                let io = Io {
                    ordered: within.is_some(),
                    keys: &keys[l],
                    values: values.as_ref().map(|v| &v[l]),
                    ops: ops.as_ref().map(|o| &o[l]),
                    status: status.as_mut().map(|v| &mut v[l]),
                    out: out.as_mut().map(|v| &mut v[l]),
                    found: found.as_mut().map(|v| &mut v[l]),
                };
                op(tables, l, vec![io])?;
            }
            trace.mark("shards' op", gpus)?;
            // The answers travel back: shard p's piece for rank g to where g's part p is in
            // its split.
            let moves = reversed(&moves);
            macro_rules! back {
                ($shard:expr, $field:tt) => {
                    if let Some(from) = $shard.as_mut() {
                        let send: Vec<_> = by_shard(from, &global, all_shards, per_rank)
                            .into_iter()
                            .map(|(b, r)| (b.map(|b| &*b), r))
                            .collect();
                        let mut recv: Vec<_> = (0..self.world).map(|g| (None, g)).collect();
                        for ((r, _), b) in sources.iter().zip(back.iter_mut()) {
                            recv[self.held[*r]].0 = b.$field.as_mut();
                        }
                        match exchange {
                            exchange::Transport::Copy(_) => {
                                back_copies.transfer(&send, &mut recv, &moves)?
                            }
                            #[allow(unreachable_patterns)]
                            _ => exchange.transfer(&send, &mut recv, &moves)?,
                        }
                    }
                };
            }
            back!(status, 0);
            back!(out, 1);
            back!(found, 2);
            if results {
                trace.mark("answers back", gathers)?;
            }
        }
        // Put every source's results in its caller's order.
        let keep_ops: Vec<Option<&DeviceBuffer<u8>>> =
            sources.iter().map(|(_, sb)| sb.ops.as_ref()).collect();
        for (((r, sb), (bs, bv, bf)), ops) in sources.iter().zip(&back).zip(keep_ops) {
            let Some(o) = outputs[*r].as_mut() else {
                continue;
            };
            let input = inputs[*r].as_ref().expect("a source has input");
            let keep = match (kept, ops) {
                (Kept::ByOperation, Some(ops)) => Keep::ByOperation(ops),
                (Kept::ValuesOfMisses, _) => Keep::ValuesWhereMissing,
                _ => Keep::Nothing,
            };
            unsplit(
                &gathers[*r],
                part,
                &sb.plan,
                input.keys,
                keep,
                bs.as_ref().zip(o.status.as_deref_mut()),
                bv.as_ref().zip(o.out.as_deref_mut()),
                bf.as_ref().zip(o.found.as_deref_mut()),
            )?;
        }
        if results {
            trace.mark("unsplit", gathers)?;
        }
        trace.report()
    }
}

/// Whether several ranks' splits are enqueued from threads of their own (see
/// [`Ctx::cascade`]); `WARPMAP_SPLIT_THREADS=0` enqueues them from the calling thread, one after
/// another (measurements).
fn split_threads() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("WARPMAP_SPLIT_THREADS").map_or(true, |v| v.trim() != "0"))
}

/// The chunks of a rank's piece of a host batch, in order: `chunk` keys each, but the last
/// chunk's worth in halves down to [`TAPER`] of a chunk. What runs after the last upload (that
/// chunk's split and its shards' work, which no upload overlaps) is then the work of a small
/// chunk: 2^24 pairs are ~1.4 ms of an H100's split and insert, 2^21 ~0.2 ms. A piece shorter
/// than two of the smallest chunks is one chunk.
fn chunk_ranges(piece: std::ops::Range<usize>, chunk: usize) -> Vec<std::ops::Range<usize>> {
    let chunk = chunk.max(1);
    let smallest = (chunk / taper()).max(1);
    // Whole chunks up to the last chunk's worth.
    let tapered = piece.len().min(chunk);
    let mut v = Vec::new();
    let mut start = piece.start;
    while start < piece.end - tapered {
        let end = (start + chunk).min(piece.end - tapered);
        v.push(start..end);
        start = end;
    }
    // Then halves of what is left, down to the smallest.
    while start < piece.end {
        let rest = piece.end - start;
        let take = if rest >= 2 * smallest { rest / 2 } else { rest };
        v.push(start..start + take);
        start += take;
    }
    v
}

/// A host batch's last chunk's worth goes in halves down to `chunk / TAPER` ([`chunk_ranges`]).
const TAPER: usize = 8;

/// [`TAPER`], or `WARPMAP_PIPELINE_TAPER` (1: no taper; for measurements).
fn taper() -> usize {
    static T: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *T.get_or_init(|| {
        crate::table::engine::knob::<usize>("WARPMAP_PIPELINE_TAPER")
            .filter(|&t| t >= 1)
            .unwrap_or(TAPER)
    })
}

/// A timeline of one cascade over several ranks (`WARPMAP_TRACE_CASCADE`): stamps on the
/// streams of each phase, each GPU's measured from a stamp taken on its ranks' streams as the
/// cascade began (stamps of one GPU only compare with each other), and the host's time per
/// phase. Printed once the cascade's work is done (tracing waits for it).
struct CascadeTrace {
    on: bool,
    clock: PhaseClock,
    /// Per GPU ordinal, the cascade's start on it.
    starts: Vec<(usize, Stamp)>,
    marks: Vec<(&'static str, usize, Stamp)>,
}

impl CascadeTrace {
    fn new(several: bool, ranks: &[Arc<Gpu>]) -> Result<Self> {
        static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let on = several && env_flag(&ON, "WARPMAP_TRACE_CASCADE");
        let mut starts: Vec<(usize, Stamp)> = Vec::new();
        if on {
            for g in ranks {
                if !starts.iter().any(|(o, _)| *o == g.ordinal()) {
                    starts.push((g.ordinal(), g.stamp()?));
                }
            }
        }
        Ok(CascadeTrace {
            on,
            clock: PhaseClock::new(on),
            starts,
            marks: Vec::new(),
        })
    }
    fn on(&self) -> bool {
        self.on
    }
    /// Adds a stamp taken elsewhere (on another thread) to `phase`.
    fn push(&mut self, phase: &'static str, ordinal: usize, stamp: Stamp) {
        if self.on {
            self.marks.push((phase, ordinal, stamp));
        }
    }
    /// Stamps the end of `phase` on every stream of `on`.
    fn mark(&mut self, phase: &'static str, on: &[Arc<Gpu>]) -> Result<()> {
        if !self.on {
            return Ok(());
        }
        self.clock.mark(phase);
        for g in on {
            self.marks.push((phase, g.ordinal(), g.stamp()?));
        }
        Ok(())
    }
    /// Waits for every stamp and prints, per phase, each GPU's latest stamp.
    fn report(&mut self) -> Result<()> {
        if !self.on {
            return Ok(());
        }
        let mut phases: Vec<&'static str> = Vec::new();
        for (p, _, _) in &self.marks {
            if !phases.contains(p) {
                phases.push(p);
            }
        }
        let mut line = String::new();
        for p in phases {
            line.push_str(&format!(" {p}:"));
            for (o, start) in &self.starts {
                let t = self
                    .marks
                    .iter()
                    .filter(|(q, g, _)| *q == p && g == o)
                    .map(|(_, _, s)| s.ms_since(start))
                    .collect::<Result<Vec<f32>>>()?
                    .into_iter()
                    .fold(f32::NAN, f32::max);
                line.push_str(&format!(" gpu{o} {t:.2}"));
            }
            line.push(';');
        }
        self.clock.report(format_args!(
            "cascade (ms since its start, per GPU):{line} host"
        ));
        Ok(())
    }
}

impl Ctx {
    /// A device-sided operation: `input` is on rank 0 and its results go to `output` (in its
    /// order), through [`Ctx::cascade`] on the first lane.
    ///
    /// (Sub-batches on the lanes in turn, so that the split of one would overlap the shards'
    /// work on the one before, were measured slower at every size: an 8-shard find of 2^27
    /// keys took 16.8 ms in sub-batches of 2^22, 11.1 ms of 2^24 and 9.9 ms of 2^25, against
    /// 9.4 ms whole. See bench/NOTES.md.)
    /// `order`: the shards' tables' [`Shape::order`], if they agree on one (see [`shard_order`]).
    #[allow(clippy::too_many_arguments)] // an operation's parts, each its own concern
    fn device_run<K: Key, V: Value, T>(
        &self,
        tables: &mut T,
        part: &PartFunction,
        input: Input<'_, K, V>,
        output: Option<Output<'_, V>>,
        kept: Kept,
        order: Option<PartFunction>,
        op: &mut ShardOp<'_, T, K, V>,
    ) -> Result<()> {
        let ranks = self.ranks.len();
        let shape = Shape {
            order,
            values: input.values.is_some(),
            ops: input.ops.is_some(),
            status: output.as_ref().is_some_and(|o| o.status.is_some()),
            out: output.as_ref().is_some_and(|o| o.out.is_some()),
            found: output.as_ref().is_some_and(|o| o.found.is_some()),
        };
        let inputs = on_rank0(ranks, input);
        let mut outputs = match output {
            Some(o) => on_rank0(ranks, o),
            None => (0..ranks).map(|_| None).collect(),
        };
        self.cascade(
            tables,
            part,
            &inputs,
            &mut outputs,
            kept,
            shape,
            op,
            &self.lanes[0],
        )
    }
}

/// The refusals of a configuration that every constructor shares.
fn check_config(config: &ShardedConfig) -> Result<()> {
    if config.shards_per_rank == 0 || config.ranks_per_gpu == 0 {
        return Err(Error::invalid(
            "a sharded table needs at least one shard per rank and one rank per GPU",
        ));
    }
    if matches!(*config.inner, TableConfig::Sharded(_)) {
        return Err(Error::invalid("a sharded table of sharded tables"));
    }
    Ok(())
}

/// The partition of `config` into `shards` shards ([`Error::InvalidInput`] above
/// [`split::MAX_SHARDS`]).
fn partition_of(config: &ShardedConfig, shards: usize) -> Result<PartFunction> {
    if shards > split::MAX_SHARDS {
        return Err(Error::invalid(format!(
            "{shards} shards: at most {}",
            split::MAX_SHARDS
        )));
    }
    Ok(PartFunction::new(shards as u32, config.partition_seed).hash(config.hash))
}

/// A table of the inner scheme with room for `capacity` keys, on the host (`gpu` `None`) or on
/// a GPU handle.
fn build_host<K: Key, V: Value>(
    inner: &TableConfig,
    capacity: usize,
) -> Result<Box<dyn HashTable<K, V>>> {
    inner.build::<K, V>(None, capacity)
}

impl<K: Key, V: Value> ShardedMap<K, V> {
    /// A sharded table over `gpus` (one rank per handle, times `config.ranks_per_gpu`), each
    /// rank holding `config.shards_per_rank` tables of `config.inner`, each on a stream of its
    /// own. For a CPU inner table (`TableConfig::Cpu`, `TwoLevelCpu`) `gpus` is not used and
    /// the map holds `shards_per_rank` host tables.
    ///
    /// # Errors
    /// - [`Error::InvalidInput`] for 0 shards or ranks per GPU, more than
    ///   [`split::MAX_SHARDS`] shards, or a nested sharded table;
    /// - [`Error::NoDevice`] for a GPU scheme without `gpus`;
    /// - [`Error::NcclMissing`] / [`Error::Nccl`] / [`Error::Unsupported`] for
    ///   [`Transport::Nccl`] without NCCL, with two ranks on one GPU (NCCL refuses them), or
    ///   without the `nccl` feature;
    /// - the inner scheme's own (see its `new`).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::sharded::{ShardedConfig, ShardedMap};
    /// use warpmap::table::registry::TableConfig;
    /// use warpmap::HashTable;
    /// // Four CPU tables; the same call with a GPU scheme and `&[gpu]` shards a GPU.
    /// let config = ShardedConfig::new(1000, TableConfig::Cpu { shards: None }).shards_per_rank(4);
    /// let mut map = ShardedMap::<u64, u32>::new(config, &[])?;
    /// map.insert(&[1, 2, 3], &[10, 20, 30])?;
    /// assert_eq!(map.find(&[2, 4])?, vec![Some(20), None]);
    /// assert!(map.capacity() >= 1000);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    pub fn new(config: ShardedConfig, gpus: &[Arc<Gpu>]) -> Result<Self> {
        check_config(&config)?;
        if config.inner.backend() == Backend::Cpu {
            let shards = config.shards_per_rank;
            let part = partition_of(&config, shards)?;
            let each = shard_capacity(config.capacity, shards);
            let tables = (0..shards)
                .map(|_| build_host::<K, V>(&config.inner, each))
                .collect::<Result<Vec<_>>>()?;
            return Ok(ShardedMap {
                config,
                part,
                body: Body::Host(tables),
            });
        }
        if gpus.is_empty() {
            return Err(Error::NoDevice {
                reason: "a sharded table of a GPU scheme was asked for without a GPU".into(),
            });
        }
        let mut ranks = Vec::with_capacity(gpus.len() * config.ranks_per_gpu);
        for g in gpus {
            ranks.push(g.clone());
            for _ in 1..config.ranks_per_gpu {
                ranks.push(g.with_new_stream()?);
            }
        }
        let world = ranks.len();
        partition_of(&config, world * config.shards_per_rank)?;
        // Peer copies between the GPUs go over their link (NVLink), not through host memory,
        // and with peer access each GPU's kernels reach the others' parts in place.
        let mut reach = true;
        for (i, a) in gpus.iter().enumerate() {
            for b in &gpus[i + 1..] {
                reach &= a.same_device(b) || a.enable_peer_access(b)?;
            }
        }
        let exchange = match config.transport {
            Transport::Copy | Transport::Peer => {
                exchange::Transport::Copy(CopyExchange::new(ranks.clone())?)
            }
            #[cfg(feature = "nccl")]
            Transport::Nccl => exchange::Transport::Nccl(exchange::NcclExchange::new(
                crate::device::nccl::Communicator::from_devices(&ranks)?,
            )),
            #[cfg(feature = "nccl")]
            Transport::NcclGroup => {
                use crate::device::nccl::{Communicator, UniqueId};
                let id = UniqueId::new()?;
                let held: Vec<(usize, Arc<Gpu>)> = ranks.iter().cloned().enumerate().collect();
                return Self::join(config, Communicator::from_unique_id(&id, world, &held)?).map(
                    |mut m| {
                        m.config.transport = Transport::NcclGroup;
                        m
                    },
                );
            }
            #[cfg(not(feature = "nccl"))]
            Transport::Nccl | Transport::NcclGroup => {
                return Err(Error::Unsupported(
                    "the NCCL exchange needs warpmap's cargo feature `nccl`".into(),
                ))
            }
        };
        let reach = if config.transport == Transport::Peer && reach {
            Reach::InPlace
        } else {
            Reach::Exchange
        };
        Self::on_ranks(config, ranks, (0..world).collect(), world, reach, exchange)
    }

    /// This process's part of a sharded table whose ranks span processes or nodes: the ranks
    /// of `comm` held here (a communicator every process of the group made from one NCCL
    /// unique id, [`Communicator::from_unique_id`](crate::device::nccl::Communicator::from_unique_id)),
    /// each holding `config.shards_per_rank` shards of `config.inner` (the exchange is NCCL's;
    /// `config.transport` and `ranks_per_gpu` are not used). Every process passes the same
    /// `config`.
    ///
    /// Operations are **collective**: each process of the group calls the same operations in
    /// the same order, each with its own keys (any number, none included), and gets the
    /// results of its own keys. Collective are every insert, find, contains, erase and mixed
    /// batch (host slices or device buffers), `len`, `rehash`, `reserve` and
    /// [`DeviceHashTable::synchronize`]; `clear`, `retrieve_all`, `shard_lens`, `capacity` and
    /// `memory_bytes` stay in this process. Between processes travel the parts (NCCL send/receive), the
    /// part sizes and round counts (an NCCL all-gather), and a word per operation saying
    /// whether every process accepted its input: a process whose input is refused (lengths
    /// that differ, ...) gets its error, the others an [`Error::InvalidInput`] naming the rank
    /// that refused, and none runs the operation. A GPU or NCCL failure in one process during
    /// an operation is not recovered: the others wait for it until NCCL's timeout.
    ///
    /// In a group, [`len`](HashTable::len) counts the keys of every process's shards,
    /// [`capacity`](HashTable::capacity) is the group's, `insert`'s [`Error::TableFull`] counts
    /// the keys no shard of the group could place (statuses per key:
    /// [`insert_with_status`](HashTable::insert_with_status)), `erase` returns the number the
    /// group erased, and [`shard_lens`](Self::shard_lens), `retrieve_all` and
    /// [`DeviceHashTable::retrieve_device`] give the shards held here.
    ///
    /// # Errors
    /// As [`ShardedMap::new`]; [`Error::InvalidInput`] for a CPU scheme.
    ///
    /// # Examples
    ///
    /// One process of two, each with one GPU (the id went from rank 0 to rank 1 out of band,
    /// as [`UniqueId::to_hex`](crate::device::nccl::UniqueId::to_hex) text):
    /// ```no_run
    /// use warpmap::device::nccl::{Communicator, UniqueId};
    /// use warpmap::sharded::{ShardedConfig, ShardedMap};
    /// use warpmap::table::registry::TableConfig;
    /// use warpmap::{Gpu, HashTable, WarpDriveConfig};
    /// # fn main() -> warpmap::Result<()> {
    /// # let (rank, id_hex) = (0usize, String::new());
    /// let id = UniqueId::from_hex(&id_hex)?;
    /// let comm = Communicator::from_unique_id(&id, 2, &[(rank, Gpu::default_gpu()?)])?;
    /// let config = ShardedConfig::new(1 << 20, TableConfig::WarpDrive(WarpDriveConfig::new(0)))
    ///     .shards_per_rank(2);
    /// let mut map = ShardedMap::<u64, u64>::join(config, comm)?;
    /// let mine: Vec<u64> = (0..1000).map(|i| 2 * i + rank as u64).collect();
    /// map.insert(&mine, &mine)?; // both processes call insert, each with its keys
    /// let theirs: Vec<u64> = (0..1000).map(|i| 2 * i + 1 - rank as u64).collect();
    /// assert!(map.find(&theirs)?.iter().all(|v| v.is_some())); // found in the other's shards
    /// assert_eq!(map.len()?, 2000);
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "nccl")]
    pub fn join(config: ShardedConfig, comm: crate::device::nccl::Communicator) -> Result<Self> {
        check_config(&config)?;
        if config.inner.backend() == Backend::Cpu {
            return Err(Error::invalid(
                "a sharded table over processes holds GPU tables (its exchange is NCCL's)",
            ));
        }
        let world = comm.world();
        partition_of(&config, world * config.shards_per_rank)?;
        let ranks: Vec<Arc<Gpu>> = (0..comm.size()).map(|i| comm.gpu(i).clone()).collect();
        let held = comm.held().to_vec();
        let config = ShardedConfig {
            transport: Transport::Nccl,
            ranks_per_gpu: 1,
            ..config
        };
        let exchange = exchange::Transport::Nccl(exchange::NcclExchange::new(comm));
        Self::on_ranks(config, ranks, held, world, Reach::Joined, exchange)
    }

    /// The GPU side: `config.shards_per_rank` tables per rank held here (`ranks`, rank numbers
    /// `held` of a group of `world`), lanes, and the exchange.
    fn on_ranks(
        config: ShardedConfig,
        ranks: Vec<Arc<Gpu>>,
        held: Vec<usize>,
        world: usize,
        reach: Reach,
        exchange: exchange::Transport,
    ) -> Result<Self> {
        let joined = reach == Reach::Joined;
        let in_place = reach == Reach::InPlace;
        let per_rank = config.shards_per_rank;
        let all = world * per_rank;
        let part = partition_of(&config, all)?;
        let each = shard_capacity(config.capacity, all);
        let mut tables = Vec::with_capacity(ranks.len() * per_rank);
        let mut shard_gpus = Vec::with_capacity(ranks.len() * per_rank);
        for r in &ranks {
            for _ in 0..per_rank {
                // One shard alone on a rank works on the rank's own stream (nothing to
                // overlap); several get a stream each.
                let g = if all == 1 {
                    r.clone()
                } else {
                    r.with_new_stream()?
                };
                tables.push(config.inner.build_device::<K, V>(&g, each)?);
                shard_gpus.push(g);
            }
        }
        let lanes = (0..SLOTS)
            .map(|_| Lane::new(&ranks))
            .collect::<Result<Vec<_>>>()?;
        Ok(ShardedMap {
            config,
            part,
            body: Body::Device(Box::new(Shards {
                tables,
                staging: std::sync::Mutex::new(Vec::new()),
                ctx: Ctx {
                    held,
                    world,
                    joined,
                    ranks,
                    lanes,
                    gpus: shard_gpus,
                    per_rank,
                    exchange,
                    in_place,
                },
            })),
        })
    }

    /// The configuration (its capacity: what was asked for last, by `new` or `rehash`).
    pub fn config(&self) -> &ShardedConfig {
        &self.config
    }

    /// The host pipeline's chunk (keys per rank) for a host-slice batch of `n` keys:
    /// [`ShardedConfig::pipeline_batch`] where set; otherwise [`ShardedConfig::chunk`]'s 2^24,
    /// with several ranks doubled while the keys a GPU's shards have in flight would start in more than half the
    /// L2 cache's worth of their tables and the batch still makes at least four chunks per rank.
    /// Each shard's share of a chunk is `chunk × ranks / shards` keys taken in the order of its
    /// table's stretches, so the keys in flight (a resident wave of an ordered insert, about
    /// `IN_FLIGHT_PER_SM` a multiprocessor) start within `in flight × table bytes / share`
    /// bytes of it; past the L2 cache each insert is a DRAM access again. On 2 H100s, 2^28 pinned
    /// pairs into 2 shards of 1.34 GB: 0.71 of the bus in chunks of 2^24 (their span ~54 MB),
    /// 0.80-0.88 in chunks of 2^25 (bench/NOTES.md, issue 15, session U).
    pub fn host_chunk(&self, n: usize) -> usize {
        let base = self.config.chunk();
        let Body::Device(d) = &self.body else {
            return base;
        };
        if self.config.pipeline_batch.is_some() || d.tables.is_empty() {
            return base;
        }
        let gpu = &d.ctx.ranks[0];
        let table_bytes = d.tables.iter().map(|t| t.memory_bytes()).max().unwrap_or(0);
        local_chunk(
            base,
            n,
            d.ctx.ranks.len(),
            d.tables.len(),
            table_bytes as u64,
            gpu.sm_count() as u64 * IN_FLIGHT_PER_SM,
            gpu.l2_bytes(),
        )
    }

    /// The partition function: which shard a key belongs to ([`PartFunction::part_of`]).
    pub fn partition(&self) -> &PartFunction {
        &self.part
    }

    /// The number of shards.
    pub fn shards(&self) -> usize {
        self.part.parts as usize
    }

    /// The rank handles (GPU streams) that take device batches: rank 0 for the
    /// [`DeviceHashTable`] calls. Empty for CPU shards.
    pub fn ranks(&self) -> &[Arc<Gpu>] {
        match &self.body {
            Body::Host(_) => &[],
            Body::Device(d) => &d.ctx.ranks,
        }
    }

    /// Inserts a batch held across the ranks, the paper's device-sided setting (WarpDrive
    /// §IV-B, Fig. 9): `keys[r]` and `values[r]` are in the memory of rank `r`'s GPU
    /// ([`ranks`](Self::ranks)`[r]`; an empty buffer where a rank has none). Every rank splits
    /// its own pairs on its GPU (the ranks side by side), the parts are exchanged (all-to-all)
    /// and each shard inserts what it received, as [`DeviceHashTable::insert_device_async`]
    /// does for a batch on rank 0. Duplicate keys update the value (which copy wins between
    /// ranks is unspecified). No statuses: keys that find no room are reported by
    /// [`DeviceHashTable::synchronize`] ([`Error::TableFull`]). Asynchronous but for the
    /// splits' part sizes. In a table over processes (`ShardedMap::join`), each process
    /// passes the ranks it holds, in [`ranks`](Self::ranks)' order.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for another number of batches than ranks, keys and values of
    /// different lengths, or a buffer on another GPU than its rank's; a CPU-shard table is
    /// [`Error::Unsupported`].
    pub fn insert_ranks_async(
        &mut self,
        keys: &[&DeviceBuffer<K>],
        values: &[&DeviceBuffer<V>],
    ) -> Result<()> {
        let held = self.ranks().to_vec();
        self.agree(check_rank_batches("insert", &held, keys, values))?;
        let total = keys.iter().map(|k| k.len()).sum();
        let part = self.part;
        let d = self.device_mut()?;
        let inputs: Vec<Option<Input<'_, K, V>>> = keys
            .iter()
            .zip(values)
            .map(|(k, v)| {
                Some(Input {
                    keys: k,
                    values: Some(v),
                    ops: None,
                })
            })
            .collect();
        let mut outputs: Vec<Option<Output<'_, V>>> = held.iter().map(|_| None).collect();
        let shape = Shape {
            order: shard_order(&d.tables, total),
            values: true,
            ops: false,
            status: false,
            out: false,
            found: false,
        };
        let Shards { ctx, tables, .. } = d;
        ctx.cascade(
            tables,
            &part,
            &inputs,
            &mut outputs,
            Kept::Nothing,
            shape,
            &mut |t, p, ios| insert_parts(&mut *t[p], ios, InsertMode::Assign),
            &ctx.lanes[0],
        )
    }

    /// Looks up a batch held across the ranks (see [`insert_ranks_async`](Self::insert_ranks_async)):
    /// `keys[r]` on rank `r`'s GPU, and its answers into `values[r]` and `found[r]` (1 where
    /// the key is in, its value then; a miss leaves its value as it was), on the same GPU, in
    /// `keys[r]`'s order. Asynchronous but for the splits' part sizes.
    ///
    /// # Errors
    /// As [`insert_ranks_async`](Self::insert_ranks_async), for `values` and `found` too.
    pub fn find_ranks_async(
        &self,
        keys: &[&DeviceBuffer<K>],
        values: &mut [&mut DeviceBuffer<V>],
        found: &mut [&mut DeviceBuffer<u8>],
    ) -> Result<()> {
        let held = self.ranks().to_vec();
        let values_ro: Vec<&DeviceBuffer<V>> = values.iter().map(|v| &**v).collect();
        let found_ro: Vec<&DeviceBuffer<u8>> = found.iter().map(|f| &**f).collect();
        self.agree(
            check_rank_batches("find (values)", &held, keys, &values_ro).and(check_rank_batches(
                "find (found)",
                &held,
                keys,
                &found_ro,
            )),
        )?;
        let total = keys.iter().map(|k| k.len()).sum();
        let d = self.device()?;
        let inputs: Vec<Option<Input<'_, K, V>>> = keys
            .iter()
            .map(|k| {
                Some(Input {
                    keys: k,
                    values: None,
                    ops: None,
                })
            })
            .collect();
        let mut outputs: Vec<Option<Output<'_, V>>> = values
            .iter_mut()
            .zip(found.iter_mut())
            .map(|(v, f)| {
                Some(Output {
                    status: None,
                    out: Some(&mut **v),
                    found: Some(&mut **f),
                })
            })
            .collect();
        let shape = Shape {
            order: shard_order(&d.tables, total),
            values: false,
            ops: false,
            status: false,
            out: true,
            found: true,
        };
        d.ctx.cascade(
            &mut &d.tables,
            &self.part,
            &inputs,
            &mut outputs,
            Kept::ValuesOfMisses,
            shape,
            &mut |t, p, ios| find_parts(&*t[p], ios, true),
            &d.ctx.lanes[0],
        )
    }

    /// The exchange's name ("peer": parts used in place, "copy", "nccl"), or "host" for CPU
    /// shards.
    pub fn exchange_name(&self) -> &'static str {
        match &self.body {
            Body::Host(_) => "host",
            Body::Device(d) if d.ctx.in_place => "peer",
            Body::Device(d) => d.ctx.exchange.name(),
        }
    }

    /// The number of keys in each shard.
    ///
    /// # Errors
    /// The shards' own (see [`HashTable::len`]).
    pub fn shard_lens(&self) -> Result<Vec<usize>> {
        self.each(|t| t.len()).into_iter().collect()
    }

    /// `f` of every shard, as a plain table.
    fn each<R>(&self, f: impl Fn(&dyn HashTable<K, V>) -> R) -> Vec<R> {
        match &self.body {
            Body::Host(v) => v.iter().map(|t| f(t.as_ref())).collect(),
            Body::Device(d) => d.tables.iter().map(|t| f(as_table(t.as_ref()))).collect(),
        }
    }

    /// `f` of every shard, as a plain table, mutably.
    fn each_mut<R>(&mut self, f: impl Fn(&mut dyn HashTable<K, V>) -> R) -> Vec<R> {
        match &mut self.body {
            Body::Host(v) => v.iter_mut().map(|t| f(t.as_mut())).collect(),
            Body::Device(d) => d
                .tables
                .iter_mut()
                .map(|t| f(as_table_mut(t.as_mut())))
                .collect(),
        }
    }

    /// An error of a shard's table, naming the shard.
    fn shard_error(&self, shard: usize, e: Error) -> Error {
        name_shard(shard, self.shards(), e)
    }
}

/// `e`, with the shard named where the error carries words (device and NCCL failures; a
/// `TableFull` keeps its shape, as callers match on it).
fn name_shard(shard: usize, shards: usize, e: Error) -> Error {
    let at = format!("shard {shard} of {shards}");
    match e {
        Error::Driver { context, message } => Error::Driver {
            context: format!("{at}: {context}"),
            message,
        },
        Error::Nccl { context, message } => Error::Nccl {
            context: format!("{at}: {context}"),
            message,
        },
        Error::KernelStatus { .. } | Error::TableFull { .. } => e,
        Error::Unsupported(m) => Error::Unsupported(format!("sharded ({at}): {m}")),
        Error::InvalidInput(m) => Error::InvalidInput(format!("sharded ({at}): {m}")),
        other => other,
    }
}

/// A device table as a plain one (trait upcasting).
fn as_table<K: Key, V: Value>(t: &dyn DeviceHashTable<K, V>) -> &dyn HashTable<K, V> {
    t
}

fn as_table_mut<K: Key, V: Value>(t: &mut dyn DeviceHashTable<K, V>) -> &mut dyn HashTable<K, V> {
    t
}

/// What a host-slice operation sends.
struct HostBatch<'a, K, V> {
    keys: &'a [K],
    values: Option<&'a [V]>,
    ops: Option<&'a [u8]>,
    kept: Kept,
}

/// Where a host-slice operation's results go, in the batch's order (each only where asked for).
struct HostOut<'a, V> {
    /// Statuses. `status_in`: they start from the caller's (uploaded: a mixed batch's entries
    /// of other operations come back unchanged); otherwise from 0.
    status: Option<&'a mut [u32]>,
    status_in: bool,
    /// Values. `out_in`: they start from the caller's (uploaded); otherwise a value comes back
    /// only where its key was found (a find: misses keep the caller's, with no upload).
    out: Option<&'a mut [V]>,
    out_in: bool,
    /// Found flags; with `found_of` (a mixed batch's operations) only for its finds and erases.
    found: Option<&'a mut [bool]>,
    found_of: Option<&'a [u8]>,
}

impl<V> HostOut<'_, V> {
    /// No results (an insert counted by the shards, an erase).
    fn nothing() -> Self {
        HostOut {
            status: None,
            status_in: false,
            out: None,
            out_in: false,
            found: None,
            found_of: None,
        }
    }

    /// Which results come back: status, values, found (values of a find need the found flags).
    fn want(&self) -> (bool, bool, bool) {
        let out = self.out.is_some();
        (
            self.status.is_some(),
            out,
            self.found.is_some() || (out && !self.out_in),
        )
    }
}

/// The length of the pieces the host copies in parallel.
const PIECE: usize = 1 << 16;

/// Copies `src` into the front of `dst` on every host thread.
fn par_copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    dst[..src.len()]
        .par_chunks_mut(PIECE)
        .zip(src.par_chunks(PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// `dst[i] = f(i, src[i])` where `f` answers `Some`, on every host thread.
fn par_write<D: Send, S: Sync>(
    dst: &mut [D],
    src: &[S],
    f: impl Fn(usize, &S) -> Option<D> + Sync,
) {
    dst[..src.len()]
        .par_chunks_mut(PIECE)
        .zip(src.par_chunks(PIECE))
        .enumerate()
        .for_each(|(c, (d, s))| {
            for (j, (d, s)) in d.iter_mut().zip(s).enumerate() {
                if let Some(v) = f(c * PIECE + j, s) {
                    *d = v;
                }
            }
        });
}

/// A pinned buffer of at least `len` elements in `slot` (grown to the next power of two).
fn pinned<'a, T: bytemuck::Pod>(
    gpu: &Gpu,
    slot: &'a mut Option<PinnedBuffer<T>>,
    len: usize,
) -> Result<&'a mut PinnedBuffer<T>> {
    if slot.as_ref().is_none_or(|p| p.len() < len) {
        *slot = None; // free the old one first
        *slot = Some(gpu.alloc_pinned::<T>(len.next_power_of_two())?);
    }
    Ok(slot.as_mut().expect("just made"))
}

/// A new device buffer of `copy`'s stream with `src` in it, on its way through pinned memory
/// that every host thread fills.
fn stage<T: bytemuck::Pod + Send + Sync>(
    copy: &Gpu,
    slot: &mut Option<PinnedBuffer<T>>,
    src: &[T],
) -> Result<DeviceBuffer<T>> {
    let p = pinned(copy, slot, src.len())?;
    par_copy(p.as_mut_slice()?, src);
    let mut d = copy.alloc::<T>(src.len())?;
    copy.copy_from_pinned(p, 0, &mut d, 0, src.len())?;
    Ok(d)
}

/// As [`stage`], but straight from `src` where it is page-locked (`direct`).
///
/// # Safety
/// With `direct`, `src` must outlive the copy: the caller synchronizes `copy` before its
/// borrow of `src` ends ([`Ctx::host_run`]'s [`Settle`]).
unsafe fn send<T: bytemuck::Pod + Send + Sync>(
    copy: &Gpu,
    slot: &mut Option<PinnedBuffer<T>>,
    src: &[T],
    direct: bool,
) -> Result<DeviceBuffer<T>> {
    if !direct {
        return stage(copy, slot, src);
    }
    let mut d = copy.alloc::<T>(src.len())?;
    // SAFETY: the caller keeps `src` until `copy` is synchronized (this function's contract).
    unsafe { copy.copy_to_device_async(src, &mut d, 0)? };
    Ok(d)
}

/// Synchronizes every stream of a context when dropped, also on the way out of an error: no
/// copy may read a caller's slice after its borrow ends.
struct Settle<'a>(&'a Ctx);

impl Drop for Settle<'_> {
    fn drop(&mut self) {
        for g in self.0.streams() {
            let _ = g.synchronize(); // an error here is the operation's, already returned
        }
    }
}

impl Ctx {
    /// Every stream of the ranks and lanes (not the shards').
    fn streams(&self) -> impl Iterator<Item = &Arc<Gpu>> {
        let lanes = self
            .lanes
            .iter()
            .flat_map(|l| l.gathers.iter().chain(&l.copies));
        self.ranks.iter().chain(lanes)
    }

    /// Waits for every stream of the ranks and lanes.
    fn synchronize(&self) -> Result<()> {
        self.streams().try_for_each(|g| g.synchronize())
    }
}

/// A clock of a host pipeline's phases ([`PhaseClock`]), on when `WARPMAP_TRACE_PIPELINE` is
/// set.
fn pipeline_clock() -> PhaseClock {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    PhaseClock::new(env_flag(&ON, "WARPMAP_TRACE_PIPELINE"))
}

/// The GPU side of a pipeline trace: per chunk, when rank 0's upload, its split (and
/// exchange), and the slowest shard's work of the chunk ended, in ms from the start (CUDA
/// events; recorded only while tracing).
struct Timeline {
    start: Option<Stamp>,
    /// Per chunk: upload end, split end, per-shard ends.
    chunks: Vec<(Option<Stamp>, Option<Stamp>, Vec<Stamp>)>,
}

impl Timeline {
    fn new(on: bool, gpu: &Gpu) -> Result<Timeline> {
        Ok(Timeline {
            start: on.then(|| gpu.stamp()).transpose()?,
            chunks: Vec::new(),
        })
    }
    fn chunk(&mut self, c: usize) -> Option<&mut (Option<Stamp>, Option<Stamp>, Vec<Stamp>)> {
        self.start.as_ref()?;
        if self.chunks.len() <= c {
            self.chunks.resize_with(c + 1, || (None, None, Vec::new()));
        }
        Some(&mut self.chunks[c])
    }
    fn uploaded(&mut self, c: usize, gpu: &Gpu) -> Result<()> {
        if let Some(t) = self.chunk(c) {
            t.0 = Some(gpu.stamp()?);
        }
        Ok(())
    }
    fn enqueued(&mut self, c: usize, rank: &Gpu, shards: &[Arc<Gpu>]) -> Result<()> {
        if let Some(t) = self.chunk(c) {
            t.1 = Some(rank.stamp()?);
            t.2 = shards.iter().map(|g| g.stamp()).collect::<Result<_>>()?;
        }
        Ok(())
    }
    /// Prints the timeline (after the streams are synchronized).
    fn report(&self) {
        let Some(start) = &self.start else { return };
        let ms = |s: Option<&Stamp>| {
            s.and_then(|s| s.ms_since(start).ok())
                .map_or("-".to_string(), |t| format!("{t:.2}"))
        };
        for (c, (up, split, shards)) in self.chunks.iter().enumerate() {
            let last = shards
                .iter()
                .filter_map(|s| s.ms_since(start).ok())
                .fold(None, |m: Option<f32>, t| Some(m.map_or(t, |m| m.max(t))));
            eprintln!(
                "warpmap pipeline: chunk {c}: upload done {} ms, split done {} ms, shards done {}",
                ms(up.as_ref()),
                ms(split.as_ref()),
                last.map_or("-".to_string(), |t| format!("{t:.2} ms"))
            );
        }
    }
}

/// Keys a multiprocessor has in flight in an ordered insert (five resident blocks of 256
/// threads, four keys each: WarpDrive's ordered insert on an H100), for [`ShardedMap::host_chunk`].
const IN_FLIGHT_PER_SM: u64 = 5 * 256 * 4;

/// [`ShardedMap::host_chunk`]'s rule: with several ranks, `base` doubled while `in_flight` keys
/// over a shard's share of a chunk (`chunk × ranks / shards` keys) span more than half of
/// `l2_bytes` of a table of `table_bytes`, and a batch of `n` keys still makes four chunks per
/// rank. With one rank, `base`: no part comes over a link, and the longer chunks' start and
/// tail cost more than their locality gives (one H100, 2^27 pinned pairs into one shard of
/// 1.34 GB: 0.80 of the bus in chunks of 2^24, 0.73 in chunks of 2^25, on two machines; 8 shards
/// of 168 MB: 0.89 against 0.85; bench/NOTES.md).
fn local_chunk(
    base: usize,
    n: usize,
    ranks: usize,
    shards: usize,
    table_bytes: u64,
    in_flight: u64,
    l2_bytes: u64,
) -> usize {
    if ranks <= 1 {
        return base.max(1);
    }
    let per_rank = n.div_ceil(ranks);
    let half_l2 = (l2_bytes / 2).max(1) as u128;
    let spread = in_flight as u128 * table_bytes as u128 * shards as u128;
    let mut chunk = base.max(1);
    while chunk.saturating_mul(8) <= per_rank && spread > half_l2 * chunk as u128 * ranks as u128 {
        chunk *= 2;
    }
    chunk
}

/// Slots of pinned staging per rank in the host pipeline: chunk `c` uses slot `c % SLOTS`, so
/// while the device works on chunk `c`, the host stages chunks up to `c + AHEAD` and copies out
/// the results of chunk `c + AHEAD - SLOTS` (two chunks before `c`: long done).
const SLOTS: usize = AHEAD + 2;

/// Chunks of a host pipeline whose uploads are enqueued beyond the one the host waits for.
/// The host waits for each chunk's split (its part sizes), which follows the upload of that
/// chunk and the shards' work of the chunk before; with one chunk ahead, the bus idled in the
/// small chunks at the end of a batch (2 H100s, 2^26 pinned pairs each: the last three uploads
/// done at 10.14, 10.76 and 11.72 ms where they needed 0.67, 0.34 and 0.34 ms of the bus). Two
/// ahead, in order: every upload follows the one before at the bus's pace, the last done at
/// 11.07 ms (bench/NOTES.md, session T).
const AHEAD: usize = 2;

/// [`AHEAD`], or `WARPMAP_PIPELINE_AHEAD` (1 to [`AHEAD`]; for measurements).
fn pipeline_ahead() -> usize {
    crate::table::engine::knob::<usize>("WARPMAP_PIPELINE_AHEAD")
        .filter(|a| (1..=AHEAD).contains(a))
        .unwrap_or(AHEAD)
}

impl Ctx {
    /// A host-slice operation on GPU shards, as a pipeline: each rank takes an even piece of
    /// the batch, in chunks of `chunk` keys (the last chunk's worth smaller: [`chunk_ranges`]).
    /// A chunk goes to the device on the rank's upload
    /// stream (straight from the caller's slices where they are page-locked, else through
    /// pinned staging filled on every host thread), through [`Ctx::cascade`], and its results
    /// back into pinned memory on the gather stream, from which the host copies them out when
    /// the slot comes round again, and at the end. The next [`AHEAD`] chunks are staged and on
    /// their way (one after another over the bus) before the host waits for this chunk's split
    /// (see [`SLOTS`]).
    #[allow(clippy::too_many_arguments)] // the pipeline's parts, each its own concern
    fn host_run<K: Key, V: Value, T>(
        &self,
        staging: &std::sync::Mutex<Vec<[Slot<K, V>; SLOTS]>>,
        tables: &mut T,
        part: &PartFunction,
        chunk: usize,
        b: HostBatch<'_, K, V>,
        out: &mut HostOut<'_, V>,
        order: Option<PartFunction>,
        op: &mut ShardOp<'_, T, K, V>,
    ) -> Result<()> {
        let mut clock = pipeline_clock();
        let mut timeline = Timeline::new(clock.on(), &self.ranks[0])?;
        let n = b.keys.len();
        let g = self.ranks.len();
        let chunk = chunk.max(1);
        let want = out.want();
        let shape = Shape {
            order,
            values: b.values.is_some(),
            ops: b.ops.is_some(),
            status: want.0,
            out: want.1,
            found: want.2,
        };
        let pieces: Vec<std::ops::Range<usize>> =
            (0..g).map(|r| n * r / g..n * (r + 1) / g).collect();
        let schedule: Vec<Vec<std::ops::Range<usize>>> = pieces
            .iter()
            .map(|p| chunk_ranges(p.clone(), chunk))
            .collect();
        let rounds = schedule.iter().map(Vec::len).max().unwrap_or(0);
        // In a group of processes every process runs as many rounds as the busiest one.
        let rounds = match self.joined {
            true => self
                .gather_world(vec![vec![rounds as u64]; g])?
                .iter()
                .map(|r| r[0] as usize)
                .max()
                .unwrap_or(0),
            false => rounds,
        };
        let mut staging = staging
            .lock()
            .map_err(|_| Error::invalid("the sharded table's staging was poisoned by a panic"))?;
        staging.resize_with(g, Default::default);
        // From here on, every copy is done before this call returns.
        let _settle = Settle(self);
        let locked = |s: &[u8]| self.ranks[0].is_page_locked(s);
        let direct = (
            locked(bytemuck::cast_slice(b.keys)),
            b.values.is_some_and(|v| locked(bytemuck::cast_slice(v))),
            b.ops.is_some_and(locked),
        );
        clock.mark("setup");

        // Copies a slot's waiting results out (waits for their download).
        fn drain<K: Key, V: Value>(slot: &mut Slot<K, V>, out: &mut HostOut<'_, V>) -> Result<()> {
            let Some(range) = slot.pending.take() else {
                return Ok(());
            };
            let len = range.len();
            if let (Some(all), Some(p)) = (out.status.as_deref_mut(), slot.status.as_ref()) {
                par_copy(&mut all[range.clone()], &p.as_slice()?[..len]);
            }
            let found = match slot.found.as_ref() {
                Some(p) if out.want().2 => Some(&p.as_slice()?[..len]),
                _ => None,
            };
            if let (Some(all), Some(p)) = (out.out.as_deref_mut(), slot.out.as_ref()) {
                let values = &p.as_slice()?[..len];
                match (out.out_in, found) {
                    (false, Some(f)) => par_write(&mut all[range.clone()], values, |i, &v| {
                        (f[i] != 0).then_some(v)
                    }),
                    _ => par_copy(&mut all[range.clone()], values),
                }
            }
            if let (Some(all), Some(f)) = (out.found.as_deref_mut(), found) {
                match out.found_of.map(|o| &o[range.clone()]) {
                    Some(ops) => par_write(&mut all[range.clone()], f, |i, &f| {
                        (ops[i] != MixedOp::Insert as u8).then_some(f != 0)
                    }),
                    None => par_write(&mut all[range.clone()], f, |_, &f| Some(f != 0)),
                }
            }
            Ok(())
        }

        // Stages chunk `c` of every rank into its slot and starts its upload: the rank's
        // range of the batch, or `None` past the end of its piece.
        let upload = |staging: &mut Vec<[Slot<K, V>; SLOTS]>,
                      out: &mut HostOut<'_, V>,
                      clock: &mut PhaseClock,
                      timeline: &mut Timeline,
                      c: usize|
         -> Result<Vec<Option<std::ops::Range<usize>>>> {
            let mut ranges = Vec::with_capacity(g);
            for r in 0..g {
                let slot = &mut staging[r][c % SLOTS];
                clock.mark("other");
                drain(slot, out)?;
                clock.mark("drain");
                slot.device = None; // chunk c - SLOTS's buffers: its work is long enqueued
                let Some(range) = schedule[r].get(c).cloned() else {
                    ranges.push(None); // past the end of its piece
                    continue;
                };
                let len = range.len();
                let lane = &self.lanes[c % SLOTS];
                let (copy, gather) = (&lane.copies[r], &lane.gathers[r]);
                // The rank's chunks go over the bus one after another: chunk c's copies start
                // when chunk c - 1's are done, rather than sharing the bus with them (which
                // would finish both late, and the split of c - 1 with them).
                if c > 0 {
                    copy.wait_for(&self.lanes[(c - 1) % SLOTS].copies[r])?;
                }
                // SAFETY (each `send`): `_settle` synchronizes the upload streams before this
                // call, and with it the borrow of the batch, ends.
                let input = unsafe {
                    (
                        send(copy, &mut slot.keys, &b.keys[range.clone()], direct.0)?,
                        b.values
                            .map(|v| send(copy, &mut slot.values, &v[range.clone()], direct.1))
                            .transpose()?,
                        b.ops
                            .map(|o| send(copy, &mut slot.ops, &o[range.clone()], direct.2))
                            .transpose()?,
                    )
                };
                // Results start from the caller's (staged: they are read back into the same
                // slices) or from zero.
                let status = match (&out.status, out.status_in) {
                    (None, _) => None,
                    (Some(st), true) => Some(stage(copy, &mut slot.status, &st[range.clone()])?),
                    (Some(_), false) => Some(gather.alloc_filled::<u32>(len, 0)?),
                };
                let values = match (&out.out, out.out_in) {
                    (None, _) => None,
                    (Some(o), true) => Some(stage(copy, &mut slot.out, &o[range.clone()])?),
                    (Some(_), false) => Some(gather.alloc_filled::<V>(len, 0)?),
                };
                let found = want
                    .2
                    .then(|| gather.alloc_filled::<u8>(len, 0))
                    .transpose()?;
                slot.device = Some((input, (status, values, found)));
                if r == 0 {
                    timeline.uploaded(c, copy)?; // (stamps of other GPUs do not compare)
                }
                ranges.push(Some(range));
                clock.mark("stage");
            }
            Ok(ranges)
        };

        // Chunks whose uploads are enqueued, in order, and the next chunk to upload.
        let ahead = pipeline_ahead();
        let mut uploaded = std::collections::VecDeque::with_capacity(ahead + 1);
        let mut next = 0;
        for c in 0..rounds {
            // `ahead` chunks beyond this one on their way before the host waits for this one's
            // split: the bus then has work queued while the host waits (see [`AHEAD`]).
            while next < rounds && next <= c + ahead {
                uploaded.push_back(upload(&mut staging, out, &mut clock, &mut timeline, next)?);
                next += 1;
            }
            let ranges = uploaded
                .pop_front()
                .ok_or_else(|| Error::invalid("the host pipeline lost a chunk (a bug)"))?;
            let s = c % SLOTS;
            {
                let mut inputs: Vec<Option<Input<'_, K, V>>> = Vec::with_capacity(g);
                let mut outputs: Vec<Option<Output<'_, V>>> = Vec::with_capacity(g);
                for pair in staging.iter_mut() {
                    match pair[s].device.as_mut() {
                        Some(((k, v, o), (st, res, f))) => {
                            inputs.push(Some(Input {
                                keys: k,
                                values: v.as_ref(),
                                ops: o.as_ref(),
                            }));
                            outputs.push((st.is_some() || res.is_some() || f.is_some()).then_some(
                                Output {
                                    status: st.as_mut(),
                                    out: res.as_mut(),
                                    found: f.as_mut(),
                                },
                            ));
                        }
                        None => {
                            inputs.push(None);
                            outputs.push(None);
                        }
                    }
                }
                self.cascade(
                    tables,
                    part,
                    &inputs,
                    &mut outputs,
                    b.kept,
                    shape,
                    op,
                    &self.lanes[s],
                )?;
            }
            timeline.enqueued(c, &self.ranks[0], &self.gpus)?;
            clock.mark("cascade");
            // The results go back to pinned memory on the gather stream.
            for (r, range) in ranges.into_iter().enumerate() {
                let Some(range) = range else { continue };
                let len = range.len();
                let gather = &self.lanes[s].gathers[r];
                let slot = &mut staging[r][s];
                let Some((_, (st, res, f))) = slot.device.as_ref() else {
                    continue;
                };
                if let Some(d) = st {
                    gather.copy_to_pinned(d, 0, pinned(gather, &mut slot.status, len)?, 0, len)?;
                }
                if let Some(d) = res {
                    gather.copy_to_pinned(d, 0, pinned(gather, &mut slot.out, len)?, 0, len)?;
                }
                if let Some(d) = f {
                    gather.copy_to_pinned(d, 0, pinned(gather, &mut slot.found, len)?, 0, len)?;
                }
                slot.pending = Some(range);
            }
            clock.mark("download");
        }
        for slots in staging.iter_mut() {
            for slot in slots.iter_mut() {
                drain(slot, out)?;
                slot.device = None;
            }
        }
        clock.mark("drain");
        self.synchronize()?;
        clock.mark("sync");
        timeline.report();
        let what = if direct.0 {
            "host_run (page-locked keys)"
        } else {
            "host_run"
        };
        clock.report(format_args!("pipeline: {what} of {n} keys"));
        Ok(())
    }
}

/// Which batch entries belong to each of `shards` shards, in batch order.
fn host_parts<K: Key>(part: &PartFunction, keys: &[K]) -> Vec<Vec<usize>> {
    let mut parts = vec![Vec::new(); part.parts as usize];
    for (i, k) in keys.iter().enumerate() {
        parts[part.part_of(k) as usize].push(i);
    }
    parts
}

fn gather<T: Copy>(src: &[T], idx: &[usize]) -> Vec<T> {
    idx.iter().map(|&i| src[i]).collect()
}

fn scatter<T: Copy>(dst: &mut [T], idx: &[usize], src: &[T]) {
    for (&i, &v) in idx.iter().zip(src) {
        dst[i] = v;
    }
}

impl<K: Key, V: Value> ShardedMap<K, V> {
    /// Whether this table's ranks span processes ([`ShardedMap::join`]).
    fn joined(&self) -> bool {
        matches!(&self.body, Body::Device(d) if d.ctx.joined)
    }

    /// The checks of an operation, agreed by every process of a group: each one's own error,
    /// or, where another process refused, [`refused_by`] (a collective call in a group; `mine`
    /// as it is otherwise). So that no process starts an exchange that another one will not
    /// join.
    /// [`Error::Unsupported`] for [`InsertMode::Apply`] where the shards' tables refuse it,
    /// before any shard inserts: each is asked with an empty insert, which checks the mode
    /// before it looks at the batch. The other modes pass.
    fn check_mode(&mut self, mode: InsertMode) -> Result<()> {
        if !matches!(mode, InsertMode::Apply(_)) {
            return Ok(());
        }
        let mine = match &mut self.body {
            Body::Host(tables) => tables
                .iter_mut()
                .try_for_each(|t| t.insert_with_mode(&[], &[], &mut [], mode).map(drop)),
            Body::Device(d) => d
                .tables
                .iter_mut()
                .try_for_each(|t| t.insert_with_mode(&[], &[], &mut [], mode).map(drop)),
        };
        self.agree(mine)
    }

    fn agree(&self, mine: Result<()>) -> Result<()> {
        let Body::Device(d) = &self.body else {
            return mine;
        };
        if !d.ctx.joined {
            return mine;
        }
        let all = d.ctx.gather_process(&[u64::from(mine.is_err())])?;
        mine?;
        match all.iter().position(|r| r[0] != 0) {
            Some(g) => Err(refused_by(g)),
            None => Ok(()),
        }
    }

    /// Waits for every shard and collects the failures of earlier asynchronous inserts
    /// ([`DeviceHashTable::synchronize`] of every shard, added up).
    ///
    /// In a group of processes the failures of every process's shards are added up, and every
    /// process gets the same answer (a collective call).
    fn synchronize_all(&self) -> Result<()> {
        let Body::Device(d) = &self.body else {
            return Ok(());
        };
        let mut failed = 0;
        let mut first_error = d.ctx.synchronize().err();
        for (s, t) in d.tables.iter().enumerate() {
            match t.synchronize() {
                Ok(()) => {}
                Err(Error::TableFull { failed: f, .. }) => failed += f,
                Err(e) => {
                    first_error.get_or_insert(self.shard_error(d.ctx.global_shard(s), e));
                }
            }
        }
        if d.ctx.joined {
            let all = d
                .ctx
                .gather_process(&[failed as u64, u64::from(first_error.is_some())])?;
            if let Some(e) = first_error {
                return Err(e);
            }
            if let Some(g) = all.iter().position(|r| r[1] != 0) {
                return Err(refused_by(g));
            }
            failed = all.iter().map(|r| r[0] as usize).sum();
        } else if let Some(e) = first_error {
            return Err(e);
        }
        if failed > 0 {
            return Err(Error::table_full_async(failed, self.capacity()));
        }
        Ok(())
    }

    /// An insert that wants no statuses (`insert`, `insert_if_absent`): on GPU shards no status
    /// is written or brought back; the shards count the keys they could not place, and the
    /// count comes back as [`Error::TableFull`] (of this batch: earlier asynchronous failures
    /// are collected first, as in every host-slice insert).
    fn insert_counted(&mut self, keys: &[K], values: &[V], mode: InsertMode) -> Result<()> {
        self.agree(crate::error::check_same_len(
            "insert (values)",
            keys.len(),
            values.len(),
        ))?;
        if matches!(self.body, Body::Host(_)) {
            let mut status = InsertStatus::zeroed_vec(keys.len());
            let failed = self.insert_with_mode(keys, values, &mut status, mode)?;
            if failed > 0 {
                return Err(Error::table_full(failed, keys.len(), self.capacity()));
            }
            return Ok(());
        }
        self.synchronize_all()?;
        if keys.is_empty() && !self.joined() {
            return Ok(());
        }
        let mut clock = pipeline_clock();
        self.pipeline_insert(keys, values, None, mode)?;
        clock.mark("host_run");
        let r = match self.synchronize_all() {
            Err(Error::TableFull { failed, .. }) => {
                Err(Error::table_full(failed, keys.len(), self.capacity()))
            }
            other => other,
        };
        clock.mark("synchronize_all");
        clock.report(format_args!(
            "pipeline: insert (no statuses) of {} keys",
            keys.len()
        ));
        r
    }

    /// A host-slice insert through the GPU shards' pipeline, statuses into `status` where
    /// given (nothing else: the callers collect failures).
    fn pipeline_insert(
        &mut self,
        keys: &[K],
        values: &[V],
        status: Option<&mut [u32]>,
        mode: InsertMode,
    ) -> Result<()> {
        let (part, chunk) = (self.part, self.host_chunk(keys.len()));
        let d = self.device_mut()?;
        // Statuses come back from the plain insert only.
        let order = match status {
            None => shard_order(&d.tables, chunk.min(keys.len())),
            Some(_) => None,
        };
        d.ctx.host_run(
            &d.staging,
            &mut d.tables,
            &part,
            chunk,
            HostBatch {
                keys,
                values: Some(values),
                ops: None,
                kept: Kept::Nothing,
            },
            &mut HostOut {
                status,
                ..HostOut::nothing()
            },
            order,
            &mut |t, p, ios| insert_parts(&mut *t[p], ios, mode),
        )
    }

    /// Waits for every shard after a batch whose failures its statuses report.
    fn settle(&self) -> Result<()> {
        match self.synchronize_all() {
            Err(Error::TableFull { .. }) | Ok(()) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The refusal of a mixed batch with erases by shards that cannot run one.
    fn check_mixed_erase(&self, ops: &[MixedOp]) -> Result<()> {
        let Body::Device(d) = &self.body else {
            return Ok(()); // the host shards decide themselves
        };
        if let (Some(reason), Some(i)) = (
            d.tables[0].mixed_erase_refusal(),
            ops.iter().position(|&o| o == MixedOp::Erase),
        ) {
            return Err(Error::Unsupported(format!(
                "sharded (over {}): mixed batches cannot erase (operation {i} is an erase): \
                 {reason}; call erase() between batches instead",
                d.tables[0].scheme()
            )));
        }
        Ok(())
    }
}

impl<K: Key, V: Value> HashTable<K, V> for ShardedMap<K, V> {
    fn scheme(&self) -> &'static str {
        match &self.body {
            Body::Host(_) => "sharded_cpu",
            Body::Device(_) => "sharded",
        }
    }

    fn backend(&self) -> Backend {
        match &self.body {
            Body::Host(_) => Backend::Cpu,
            Body::Device(_) => Backend::Gpu,
        }
    }

    fn insert(&mut self, keys: &[K], values: &[V]) -> Result<()> {
        self.insert_counted(keys, values, InsertMode::Assign)
    }

    fn insert_if_absent(&mut self, keys: &[K], values: &[V]) -> Result<()> {
        self.insert_counted(keys, values, InsertMode::IfAbsent)
    }

    fn insert_with_mode(
        &mut self,
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
        mode: InsertMode,
    ) -> Result<usize> {
        self.agree(
            crate::error::check_same_len("insert (values)", keys.len(), values.len()).and(
                crate::error::check_same_len("insert (status)", keys.len(), status.len()),
            ),
        )?;
        self.check_mode(mode)?;
        let part = self.part;
        match &mut self.body {
            Body::Host(tables) => {
                let parts = host_parts(&part, keys);
                let results = tables
                    .par_iter_mut()
                    .zip(&parts)
                    .map(|(t, idx)| {
                        let mut st = vec![InsertStatus::default(); idx.len()];
                        let failed = t.insert_with_mode(
                            &gather(keys, idx),
                            &gather(values, idx),
                            &mut st,
                            mode,
                        )?;
                        Ok((failed, st))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let mut failed = 0;
                for ((f, st), idx) in results.into_iter().zip(&parts) {
                    failed += f;
                    scatter(status, idx, &st);
                }
                Ok(failed)
            }
            Body::Device(_) => {
                let mut clock = pipeline_clock();
                self.synchronize_all()?;
                clock.mark("synchronize_all");
                if keys.is_empty() && !self.joined() {
                    return Ok(0);
                }
                let st = bytemuck::cast_slice_mut::<InsertStatus, u32>(status);
                self.pipeline_insert(keys, values, Some(st), mode)?;
                clock.mark("host_run");
                self.settle()?;
                clock.mark("settle");
                let failed = status.par_iter().filter(|s| s.is_failure()).count();
                clock.mark("count");
                clock.report(format_args!("pipeline: insert of {} keys", keys.len()));
                Ok(failed)
            }
        }
    }

    fn mixed_batch(
        &mut self,
        ops: &[MixedOp],
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
        out: &mut [V],
        found: &mut [bool],
    ) -> Result<usize> {
        self.agree(
            check_mixed_lens(
                keys.len(),
                ops.len(),
                values.len(),
                status.len(),
                out.len(),
                found.len(),
            )
            .and_then(|()| self.check_mixed_erase(ops)),
        )?;
        if keys.is_empty() && !self.joined() {
            return Ok(0);
        }
        let (part, chunk) = (self.part, self.host_chunk(keys.len()));
        match &mut self.body {
            Body::Host(tables) => {
                let parts = host_parts(&part, keys);
                let (status_in, out_in, found_in) = (&*status, &*out, &*found);
                let results = tables
                    .par_iter_mut()
                    .zip(&parts)
                    .map(|(t, idx)| {
                        let (mut st, mut o, mut f) = (
                            gather(status_in, idx),
                            gather(out_in, idx),
                            gather(found_in, idx),
                        );
                        let failed = t.mixed_batch(
                            &gather(ops, idx),
                            &gather(keys, idx),
                            &gather(values, idx),
                            &mut st,
                            &mut o,
                            &mut f,
                        )?;
                        Ok((failed, st, o, f))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let mut failed = 0;
                for ((n, st, o, f), idx) in results.into_iter().zip(&parts) {
                    failed += n;
                    scatter(status, idx, &st);
                    scatter(out, idx, &o);
                    scatter(found, idx, &f);
                }
                Ok(failed)
            }
            Body::Device(_) => {
                self.synchronize_all()?;
                let Body::Device(d) = &mut self.body else {
                    unreachable!()
                };
                let op_bytes = bytemuck::cast_slice::<MixedOp, u8>(ops);
                d.ctx.host_run(
                    &d.staging,
                    &mut d.tables,
                    &part,
                    chunk,
                    HostBatch {
                        keys,
                        values: Some(values),
                        ops: Some(op_bytes),
                        kept: Kept::ByOperation,
                    },
                    &mut HostOut {
                        status: Some(bytemuck::cast_slice_mut::<InsertStatus, u32>(status)),
                        status_in: true,
                        out: Some(out),
                        out_in: true,
                        found: Some(found),
                        found_of: Some(op_bytes),
                    },
                    None,
                    &mut |t, p, ios| mixed_parts(&mut *t[p], ios),
                )?;
                self.settle()?;
                Ok(status
                    .par_iter()
                    .zip(ops)
                    .filter(|(s, &o)| o == MixedOp::Insert && s.is_failure())
                    .count())
            }
        }
    }

    fn find_into(&self, keys: &[K], values: &mut [V], found: &mut [bool]) -> Result<usize> {
        self.agree(
            crate::error::check_same_len("find (values)", keys.len(), values.len()).and(
                crate::error::check_same_len("find (found)", keys.len(), found.len()),
            ),
        )?;
        match &self.body {
            Body::Host(tables) => {
                let parts = host_parts(&self.part, keys);
                let results = tables
                    .par_iter()
                    .zip(&parts)
                    .map(|(t, idx)| {
                        let mut v = gather(values, idx);
                        let mut f = vec![false; idx.len()];
                        t.find_into(&gather(keys, idx), &mut v, &mut f)?;
                        Ok((v, f))
                    })
                    .collect::<Result<Vec<_>>>()?;
                for ((v, f), idx) in results.into_iter().zip(&parts) {
                    scatter(values, idx, &v);
                    scatter(found, idx, &f);
                }
            }
            Body::Device(d) => {
                let chunk = self.host_chunk(keys.len());
                if keys.is_empty() && !d.ctx.joined {
                    return Ok(0);
                }
                d.ctx.host_run(
                    &d.staging,
                    &mut &d.tables,
                    &self.part,
                    chunk,
                    HostBatch {
                        keys,
                        values: None,
                        ops: None,
                        kept: Kept::ValuesOfMisses,
                    },
                    &mut HostOut {
                        status: None,
                        status_in: false,
                        out: Some(values),
                        out_in: false,
                        found: Some(&mut *found),
                        found_of: None,
                    },
                    shard_order(&d.tables, chunk.min(keys.len())),
                    &mut |t, p, ios| find_parts(&*t[p], ios, true),
                )?;
                self.settle()?;
            }
        }
        Ok(found.par_iter().filter(|&&f| f).count())
    }

    fn contains(&self, keys: &[K]) -> Result<Vec<bool>> {
        match &self.body {
            Body::Host(_) => {
                let mut values = vec![V::zeroed(); keys.len()];
                let mut found = vec![false; keys.len()];
                self.find_into(keys, &mut values, &mut found)?;
                Ok(found)
            }
            Body::Device(d) => {
                let chunk = self.host_chunk(keys.len());
                if keys.is_empty() && !d.ctx.joined {
                    return Ok(Vec::new());
                }
                let mut found = vec![false; keys.len()];
                d.ctx.host_run(
                    &d.staging,
                    &mut &d.tables,
                    &self.part,
                    chunk,
                    HostBatch::<K, V> {
                        keys,
                        values: None,
                        ops: None,
                        kept: Kept::Nothing,
                    },
                    &mut HostOut {
                        status: None,
                        status_in: false,
                        out: None,
                        out_in: false,
                        found: Some(&mut found),
                        found_of: None,
                    },
                    shard_order(&d.tables, chunk.min(keys.len())),
                    &mut |t, p, ios| find_parts(&*t[p], ios, false),
                )?;
                self.settle()?;
                Ok(found)
            }
        }
    }

    fn erase(&mut self, keys: &[K]) -> Result<usize> {
        let (part, chunk) = (self.part, self.host_chunk(keys.len()));
        match &mut self.body {
            Body::Host(tables) => {
                let parts = host_parts(&part, keys);
                let erased = tables
                    .par_iter_mut()
                    .zip(&parts)
                    .map(|(t, idx)| t.erase(&gather(keys, idx)))
                    .collect::<Result<Vec<_>>>()?;
                Ok(erased.into_iter().sum())
            }
            Body::Device(_) => {
                if keys.is_empty() && !self.joined() {
                    return Ok(0);
                }
                let before = self.len()?;
                let Body::Device(d) = &mut self.body else {
                    unreachable!()
                };
                d.ctx.host_run(
                    &d.staging,
                    &mut d.tables,
                    &part,
                    chunk,
                    HostBatch::<K, V> {
                        keys,
                        values: None,
                        ops: None,
                        kept: Kept::Nothing,
                    },
                    &mut HostOut::nothing(),
                    None,
                    &mut |t, p, ios| {
                        ios.into_iter()
                            .try_for_each(|io| t[p].erase_device_async(io.keys))
                    },
                )?;
                self.settle()?;
                Ok(before - self.len()?)
            }
        }
    }

    fn len(&self) -> Result<usize> {
        let here: usize = self.shard_lens()?.into_iter().sum();
        match &self.body {
            Body::Device(d) if d.ctx.joined => Ok(d
                .ctx
                .gather_process(&[here as u64])?
                .iter()
                .map(|r| r[0] as usize)
                .sum()),
            _ => Ok(here),
        }
    }

    fn capacity(&self) -> usize {
        let caps = self.each(|t| t.capacity());
        sharded_capacity(caps.iter().copied().min().unwrap_or(0), self.shards())
    }

    fn max_load_factor(&self) -> f64 {
        self.each(|t| t.max_load_factor())
            .into_iter()
            .fold(1.0, f64::min)
    }

    fn clear(&mut self) -> Result<()> {
        self.each_mut(|t| t.clear()).into_iter().collect()
    }

    fn rehash(&mut self, new_capacity: usize) -> Result<()> {
        self.synchronize_all()?;
        crate::table::check_rehash_capacity(new_capacity, self.len()?)?;
        let lens = self.shard_lens()?;
        let each = shard_capacity(new_capacity, self.shards());
        if let Some(s) = lens.iter().position(|&l| l > each) {
            return Err(Error::invalid(format!(
                "rehash to {new_capacity}: shard {s} holds {} keys, more than the {each} each \
                 shard gets",
                lens[s]
            )));
        }
        let results = self.each_mut(|t| t.rehash(each));
        for (s, r) in results.into_iter().enumerate() {
            r.map_err(|e| self.shard_error(s, e))?;
        }
        self.config.capacity = new_capacity;
        Ok(())
    }

    fn retrieve_all(&self) -> Result<(Vec<K>, Vec<V>)> {
        let (mut keys, mut values) = (Vec::new(), Vec::new());
        for r in self.each(|t| t.retrieve_all()) {
            let (k, v) = r?;
            keys.extend(k);
            values.extend(v);
        }
        Ok((keys, values))
    }

    fn memory_bytes(&self) -> usize {
        self.each(|t| t.memory_bytes()).into_iter().sum()
    }
}

/// The error of a process whose operation went on although another one (holding rank `g`)
/// refused it: nothing was done.
fn refused_by(g: usize) -> Error {
    Error::invalid(format!(
        "the process holding rank {g} of the sharded table's group refused this operation (its \
         error says why); no process ran it"
    ))
}

/// The checks of a device call: every buffer one entry per key.
fn check_lens(what: &str, keys: usize, others: &[usize]) -> Result<()> {
    for &n in others {
        crate::error::check_same_len(what, keys, n)?;
    }
    Ok(())
}

/// Refuses per-rank batches (`keys[r]`, `others[r]` on `ranks[r]`'s GPU) that do not match the
/// ranks: another count, other lengths, a buffer on another GPU.
fn check_rank_batches<K: Key, T: bytemuck::Pod>(
    what: &str,
    ranks: &[Arc<Gpu>],
    keys: &[&DeviceBuffer<K>],
    others: &[&DeviceBuffer<T>],
) -> Result<()> {
    if ranks.is_empty() {
        return Err(Error::Unsupported(
            "a sharded table of CPU tables has no device-buffer operations".into(),
        ));
    }
    if keys.len() != ranks.len() || others.len() != ranks.len() {
        return Err(Error::invalid(format!(
            "{what} per rank: {} key buffers and {} others for {} ranks",
            keys.len(),
            others.len(),
            ranks.len()
        )));
    }
    for (r, ((k, o), g)) in keys.iter().zip(others).zip(ranks).enumerate() {
        crate::error::check_same_len(what, k.len(), o.len())?;
        if !g.holds(k) || !g.holds(o) {
            return Err(Error::invalid(format!(
                "{what} per rank: rank {r}'s buffers must be in GPU {}'s memory",
                g.ordinal()
            )));
        }
    }
    Ok(())
}

impl<K: Key, V: Value> ShardedMap<K, V> {
    fn device(&self) -> Result<&Shards<K, V>> {
        match &self.body {
            Body::Device(d) => Ok(d),
            Body::Host(_) => Err(Error::Unsupported(
                "a sharded table of CPU tables has no device-buffer operations".into(),
            )),
        }
    }
    fn device_mut(&mut self) -> Result<&mut Shards<K, V>> {
        match &mut self.body {
            Body::Device(d) => Ok(d),
            Body::Host(_) => Err(Error::Unsupported(
                "a sharded table of CPU tables has no device-buffer operations".into(),
            )),
        }
    }
}

/// Only rank 0 takes a device batch (the [`DeviceHashTable`] calls).
/// The order every shard's table takes a batch of `n / shards` keys fastest
/// ([`DeviceHashTable::stretch_order`]), where they all name the same one (tables of one
/// configuration do).
fn shard_order<K: Key, V: Value>(
    tables: &[Box<dyn DeviceHashTable<K, V>>],
    n: usize,
) -> Option<PartFunction> {
    let each = n / tables.len().max(1);
    let first = tables.first()?.stretch_order(each)?;
    tables[1..]
        .iter()
        .all(|t| t.stretch_order(each) == Some(first))
        .then_some(first)
}

fn on_rank0<T>(ranks: usize, first: T) -> Vec<Option<T>> {
    let mut v = Vec::with_capacity(ranks);
    v.push(Some(first));
    v.resize_with(ranks, || None);
    v
}

impl<K: Key, V: Value> DeviceHashTable<K, V> for ShardedMap<K, V> {
    fn gpu(&self) -> &Arc<Gpu> {
        match &self.body {
            Body::Device(d) => &d.ctx.ranks[0],
            Body::Host(_) => unreachable!("a sharded table of CPU tables is not a device table"),
        }
    }

    fn insert_device_async_with_mode(
        &mut self,
        keys: &DeviceBuffer<K>,
        values: &DeviceBuffer<V>,
        status: Option<&mut DeviceBuffer<u32>>,
        mode: InsertMode,
    ) -> Result<()> {
        let n = keys.len();
        self.agree(check_lens("insert", n, &[values.len()]).and(match &status {
            Some(s) => check_lens("insert (status)", n, &[s.len()]),
            None => Ok(()),
        }))?;
        self.check_mode(mode)?;
        let part = self.part;
        let d = self.device_mut()?;
        // Statuses come back from the plain insert only.
        let order = status
            .is_none()
            .then(|| shard_order(&d.tables, n))
            .flatten();
        let output = status.map(|s| Output {
            status: Some(s),
            out: None,
            found: None,
        });
        d.ctx.device_run(
            &mut d.tables,
            &part,
            Input {
                keys,
                values: Some(values),
                ops: None,
            },
            output,
            Kept::Nothing,
            order,
            &mut |t, p, ios| insert_parts(&mut *t[p], ios, mode),
        )
    }

    fn find_device_async(
        &self,
        keys: &DeviceBuffer<K>,
        values: &mut DeviceBuffer<V>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()> {
        self.agree(check_lens("find", keys.len(), &[values.len(), found.len()]))?;
        let d = self.device()?;
        d.ctx.device_run(
            &mut &d.tables,
            &self.part,
            Input {
                keys,
                values: None,
                ops: None,
            },
            Some(Output {
                status: None,
                out: Some(values),
                found: Some(found),
            }),
            Kept::ValuesOfMisses,
            shard_order(&d.tables, keys.len()),
            &mut |t, p, ios| find_parts(&*t[p], ios, true),
        )
    }

    fn contains_device_async(
        &self,
        keys: &DeviceBuffer<K>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()> {
        self.agree(check_lens("contains", keys.len(), &[found.len()]))?;
        let d = self.device()?;
        d.ctx.device_run(
            &mut &d.tables,
            &self.part,
            Input {
                keys,
                values: None,
                ops: None,
            },
            Some(Output::<V> {
                status: None,
                out: None,
                found: Some(found),
            }),
            Kept::Nothing,
            shard_order(&d.tables, keys.len()),
            &mut |t, p, ios| find_parts(&*t[p], ios, false),
        )
    }

    fn erase_device_async(&mut self, keys: &DeviceBuffer<K>) -> Result<()> {
        let part = self.part;
        let d = self.device_mut()?;
        d.ctx.device_run(
            &mut d.tables,
            &part,
            Input {
                keys,
                values: None,
                ops: None,
            },
            None,
            Kept::Nothing,
            None,
            &mut |t: &mut Vec<Box<dyn DeviceHashTable<K, V>>>, p, ios: Vec<Io<'_, K, V>>| {
                ios.into_iter()
                    .try_for_each(|io| t[p].erase_device_async(io.keys))
            },
        )
    }

    fn mixed_device_async(
        &mut self,
        ops: &DeviceBuffer<u8>,
        keys: &DeviceBuffer<K>,
        values: &DeviceBuffer<V>,
        status: &mut DeviceBuffer<u32>,
        out: &mut DeviceBuffer<V>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()> {
        self.agree(check_lens(
            "mixed batch",
            keys.len(),
            &[
                ops.len(),
                values.len(),
                status.len(),
                out.len(),
                found.len(),
            ],
        ))?;
        let part = self.part;
        let d = self.device_mut()?;
        d.ctx.device_run(
            &mut d.tables,
            &part,
            Input {
                keys,
                values: Some(values),
                ops: Some(ops),
            },
            Some(Output {
                status: Some(status),
                out: Some(out),
                found: Some(found),
            }),
            Kept::ByOperation,
            None,
            &mut |t, p, ios| mixed_parts(&mut *t[p], ios),
        )
    }

    fn retrieve_device(&self) -> Result<(DeviceBuffer<K>, DeviceBuffer<V>)> {
        let d = self.device()?;
        let parts = d
            .tables
            .iter()
            .enumerate()
            .map(|(s, t)| t.retrieve_device().map_err(|e| self.shard_error(s, e)))
            .collect::<Result<Vec<_>>>()?;
        let total: usize = parts.iter().map(|(k, _)| k.len()).sum();
        let rank0 = &d.ctx.ranks[0];
        let mut keys = rank0.alloc::<K>(total)?;
        let mut values = rank0.alloc::<V>(total)?;
        let mut at = 0;
        for (k, v) in &parts {
            rank0.copy_range(k, 0, &mut keys, at, k.len())?;
            rank0.copy_range(v, 0, &mut values, at, v.len())?;
            at += k.len();
        }
        Ok((keys, values))
    }

    fn synchronize(&self) -> Result<()> {
        self.synchronize_all()
    }

    fn counters(&self) -> Result<Vec<(&'static str, u64)>> {
        let mut sum: Vec<(&'static str, u64)> = Vec::new();
        for t in &self.device()?.tables {
            for (name, v) in t.counters()? {
                match sum.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, s)) => *s += v,
                    None => sum.push((name, v)),
                }
            }
        }
        Ok(sum)
    }

    fn mixed_erase_refusal(&self) -> Option<&'static str> {
        self.device()
            .ok()
            .and_then(|d| d.tables[0].mixed_erase_refusal())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_chunks_grow_with_the_shards_tables() {
        // An H100: 132 multiprocessors, 50 MiB of L2.
        let (in_flight, l2) = (132 * IN_FLIGHT_PER_SM, 50u64 << 20);
        let c = 1 << 24;
        // 2 GPUs, 2^28 pairs into 2 shards of 1.34 GB (load 0.8): chunks of 2^25 (their span
        // ~27 MB, where 2^24 spanned ~54).
        assert_eq!(
            local_chunk(c, 1 << 28, 2, 2, 1_342_177_280, in_flight, l2),
            1 << 25
        );
        // The same shards and half the batch: four chunks per rank at least, so 2^24.
        assert_eq!(
            local_chunk(c, 1 << 27, 2, 2, 1_342_177_280, in_flight, l2),
            c
        );
        // Shards of 0.5 GB (load 0.5 for 2^26 pairs each): 2^24 spans ~20 MB already.
        assert_eq!(local_chunk(c, 1 << 28, 2, 2, 512 << 20, in_flight, l2), c);
        // Small tables, any batch: the base.
        assert_eq!(local_chunk(c, 1 << 32, 4, 4, 64 << 20, in_flight, l2), c);
        // Huge tables and batches: as long as four chunks per rank allow.
        assert_eq!(
            local_chunk(c, 1 << 31, 2, 2, 16 << 30, in_flight, l2),
            1 << 28
        );
        // One rank: the base, whatever the tables.
        assert_eq!(local_chunk(c, 1 << 30, 1, 1, 16 << 30, in_flight, l2), c);
        // Degenerate inputs stay usable.
        assert_eq!(local_chunk(0, 0, 0, 0, 0, 0, 0), 1);
    }

    #[test]
    fn chunk_ranges_cover_the_piece_and_taper_at_the_end() {
        let lens = |v: &[std::ops::Range<usize>]| v.iter().map(|r| r.len()).collect::<Vec<_>>();
        let c = 1 << 24;
        // 2^27 keys: seven whole chunks, then the last chunk's worth in halves to an eighth.
        let v = chunk_ranges(0..1 << 27, c);
        assert_eq!(
            lens(&v),
            [vec![c; 7], vec![c / 2, c / 4, c / 8, c / 8]].concat()
        );
        for (piece, chunk) in [
            (0..0, 16),
            (5..6, 16),
            (3..1000, 16),
            (0..31, 16),
            (7..7 + 4 * 16, 16),
            (0..100, 1),
            (10..12345, 1000),
            (0..3, 16),
        ] {
            let v = chunk_ranges(piece.clone(), chunk);
            // In order, contiguous, covering the piece, each at most a chunk and not empty.
            let mut at = piece.start;
            for r in &v {
                assert_eq!(r.start, at, "{piece:?} by {chunk}: {v:?}");
                assert!(
                    !r.is_empty() && r.len() <= chunk,
                    "{piece:?} by {chunk}: {v:?}"
                );
                at = r.end;
            }
            assert_eq!(at, piece.end, "{piece:?} by {chunk}: {v:?}");
            // The last is at most the smallest chunk's double.
            if let Some(last) = v.last() {
                assert!(
                    last.len() < 2 * (chunk / taper()).max(1),
                    "{piece:?}: {v:?}"
                );
            }
        }
        // A piece shorter than two of the smallest chunks is one chunk.
        assert_eq!(chunk_ranges(0..3, 16).len(), 1);
    }

    #[test]
    fn exchange_plan_moves_the_parts_that_leave_their_rank() {
        // 2 ranks of 2 shards: rank 0 holds shards 0 and 1, rank 1 shards 2 and 3.
        let counts = vec![vec![5, 0, 7, 2], vec![1, 3, 4, 6]];
        let (moves, received) = exchange_plan(&counts, 2);
        let m = |from, from_at, to, to_at, len| Move {
            from,
            from_at,
            to,
            to_at,
            len,
        };
        // Rank 0's parts for shards 2 and 3 start after its parts 0 and 1 (5 + 0 keys); rank
        // 1's parts for shards 0 and 1 at its split's front. Parts 0 and 1 of rank 0 and parts
        // 2 and 3 of rank 1 stay.
        assert_eq!(
            moves,
            vec![
                m(0, 5, 2, 0, 7),
                m(0, 12, 3, 0, 2),
                m(1, 0, 0, 0, 1),
                m(1, 1, 1, 0, 3),
            ]
        );
        assert_eq!(received, vec![1, 3, 7, 2]);
        // One rank: everything stays.
        let (moves, received) = exchange_plan(&[vec![3, 4, 5]], 3);
        assert!(moves.is_empty());
        assert_eq!(received, vec![0, 0, 0]);
        // A shard per rank, received after the parts of lower ranks.
        let (moves, received) = exchange_plan(&[vec![1, 2, 3], vec![4, 5, 6], vec![7, 8, 9]], 1);
        assert_eq!(received, vec![4 + 7, 2 + 8, 3 + 6]);
        assert_eq!(moves.len(), 6);
        assert_eq!(moves[0], m(0, 1, 1, 0, 2));
        assert_eq!(moves[2], m(1, 0, 0, 0, 4));
        assert_eq!(moves[3], m(1, 9, 2, 3, 6));
        assert_eq!(moves[4], m(2, 0, 0, 4, 7));
        assert_eq!(moves[5], m(2, 7, 1, 2, 8));
    }
}
