//! How the shards' parts travel between GPUs: one small interface ([`Exchange`]) with two
//! implementations driven by the same code in [`super`]: device-to-device copies
//! ([`CopyExchange`]: shards of one GPU, and peer copies between GPUs of one process) and NCCL
//! grouped send/receive (`NcclExchange`, cargo feature `nccl`: across GPUs, and through a
//! communicator made from an NCCL unique id, across processes and nodes).

use crate::device::{DeviceBuffer, Gpu, Move};
use crate::{Error, Result};
use std::sync::Arc;

/// Moves pieces of device buffers between ranks. Send buffer `i` is `send[i].0` on rank
/// `send[i].1`, receive buffer `j` is `recv[j].0` on rank `recv[j].1`; every [`Move`] copies its
/// piece. A buffer of a rank that another process holds is `None` here (NCCL only: that process
/// moves its half of the piece). Asynchronous: the pieces are ordered after earlier uses of the
/// buffers and before later ones (the device layer's ordering), nothing waits on the host.
pub trait Exchange {
    /// The implementation's name, as reports print it ("copy", "nccl").
    fn name(&self) -> &'static str;

    /// Enqueues every piece of `moves`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a rank or buffer index out of range, or a piece that leaves
    /// its buffer; the transport's own errors ([`Error::Driver`], [`Error::Nccl`]).
    fn transfer<T: bytemuck::Pod>(
        &self,
        send: &[(Option<&DeviceBuffer<T>>, usize)],
        recv: &mut [(Option<&mut DeviceBuffer<T>>, usize)],
        moves: &[Move],
    ) -> Result<()>;
}

/// Device-to-device copies (`cuMemcpyAsync`, peer copies between GPUs) on the receiving rank's
/// GPU: the pieces into one receive buffer each on a stream of their own (disjoint writable
/// views of the buffer), so that they run side by side. (One after another on the receiver's
/// stream, 4 H100s received an all-to-all's pieces at about 115 GB/s each, a third of their
/// NVLink: bench/NOTES.md, session O.)
pub struct CopyExchange {
    ranks: Vec<Arc<Gpu>>,
    /// Per rank, [`PIECE_STREAMS`] streams of its GPU (fewer where there are fewer ranks),
    /// taken in turn by the pieces into one buffer.
    streams: Vec<Vec<Arc<Gpu>>>,
}

/// Streams per rank for the pieces into one receive buffer (a buffer gets one piece from each
/// rank; more pieces than streams share them in turn).
const PIECE_STREAMS: usize = 4;

impl CopyExchange {
    /// Copies between the buffers of `ranks` (any handles, of one GPU or several).
    ///
    /// # Errors
    /// The driver's, making the streams.
    pub fn new(ranks: Vec<Arc<Gpu>>) -> Result<Self> {
        let streams = ranks
            .iter()
            .map(|r| {
                (0..ranks.len().min(PIECE_STREAMS))
                    .map(|_| r.with_new_stream())
                    .collect()
            })
            .collect::<Result<_>>()?;
        Ok(CopyExchange { ranks, streams })
    }
}

fn rank(ranks: &[Arc<Gpu>], r: usize) -> Result<&Arc<Gpu>> {
    ranks
        .get(r)
        .ok_or_else(|| Error::invalid(format!("exchange: rank {r} of {} ranks", ranks.len())))
}

impl Exchange for CopyExchange {
    fn name(&self) -> &'static str {
        "copy"
    }

    fn transfer<T: bytemuck::Pod>(
        &self,
        send: &[(Option<&DeviceBuffer<T>>, usize)],
        recv: &mut [(Option<&mut DeviceBuffer<T>>, usize)],
        moves: &[Move],
    ) -> Result<()> {
        let missing = |m: &Move| {
            Error::invalid(format!(
                "exchange by copies: {m:?} names a buffer that is not in this process"
            ))
        };
        // The moves into each receive buffer, together.
        let mut by_buffer: Vec<Vec<&Move>> = vec![Vec::new(); recv.len()];
        for m in moves {
            by_buffer.get_mut(m.to).ok_or_else(|| missing(m))?.push(m);
        }
        for (to, ms) in by_buffer.iter().enumerate() {
            let Some(&first) = ms.first() else { continue };
            let (Some(dst), to_rank) = &mut recv[to] else {
                return Err(missing(first));
            };
            let to_rank = *to_rank;
            rank(&self.ranks, to_rank)?;
            let streams = &self.streams[to_rank];
            let ranges: Vec<std::ops::Range<usize>> = ms
                .iter()
                .map(|m| m.to_at as usize..(m.to_at + m.len) as usize)
                .collect();
            let on: Vec<&Gpu> = (0..ms.len())
                .map(|i| streams[i % streams.len()].as_ref())
                .collect();
            let mut views = Gpu::views_mut(dst, &ranges, &on)?;
            for ((m, view), g) in ms.iter().zip(views.iter_mut()).zip(&on) {
                let Some(&(Some(src), _)) = send.get(m.from) else {
                    return Err(missing(m));
                };
                g.copy_range(src, m.from_at as usize, view, 0, m.len as usize)?;
            }
            // Dropping the views orders the buffer's own stream after every piece.
        }
        Ok(())
    }
}

/// NCCL grouped send/receive, one communicator rank per GPU (a rank sends to itself too, so a
/// one-GPU communicator runs every call). The ranks are the communicator's rank numbers; with
/// a communicator from a unique id, this process moves its halves of the pieces.
#[cfg(feature = "nccl")]
pub struct NcclExchange {
    /// Locked per call: a communicator takes one call at a time, and `find` runs through `&`.
    comm: std::sync::Mutex<crate::device::nccl::Communicator>,
}

#[cfg(feature = "nccl")]
impl NcclExchange {
    /// Over `comm`, whose rank `r` is the sharded table's rank `r`.
    pub fn new(comm: crate::device::nccl::Communicator) -> Self {
        NcclExchange {
            comm: std::sync::Mutex::new(comm),
        }
    }

    /// Runs `f` on the communicator (one call at a time).
    pub(crate) fn with<R>(
        &self,
        f: impl FnOnce(&crate::device::nccl::Communicator) -> Result<R>,
    ) -> Result<R> {
        f(&*self
            .comm
            .lock()
            .map_err(|_| Error::invalid("the NCCL communicator was poisoned by a panic"))?)
    }
}

#[cfg(feature = "nccl")]
impl Exchange for NcclExchange {
    fn name(&self) -> &'static str {
        "nccl"
    }

    fn transfer<T: bytemuck::Pod>(
        &self,
        send: &[(Option<&DeviceBuffer<T>>, usize)],
        recv: &mut [(Option<&mut DeviceBuffer<T>>, usize)],
        moves: &[Move],
    ) -> Result<()> {
        self.with(|c| c.transfer(send, recv, moves))
    }
}

/// The exchange a sharded table holds: one of the implementations above.
pub(crate) enum Transport {
    Copy(CopyExchange),
    #[cfg(feature = "nccl")]
    Nccl(NcclExchange),
}

impl Exchange for Transport {
    fn name(&self) -> &'static str {
        match self {
            Transport::Copy(x) => x.name(),
            #[cfg(feature = "nccl")]
            Transport::Nccl(x) => x.name(),
        }
    }

    fn transfer<T: bytemuck::Pod>(
        &self,
        send: &[(Option<&DeviceBuffer<T>>, usize)],
        recv: &mut [(Option<&mut DeviceBuffer<T>>, usize)],
        moves: &[Move],
    ) -> Result<()> {
        match self {
            Transport::Copy(x) => x.transfer(send, recv, moves),
            #[cfg(feature = "nccl")]
            Transport::Nccl(x) => x.transfer(send, recv, moves),
        }
    }
}
