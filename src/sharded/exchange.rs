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

/// Device-to-device copies (`cuMemcpyAsync`, peer copies between GPUs), each on the stream of
/// the receiving rank.
pub struct CopyExchange {
    ranks: Vec<Arc<Gpu>>,
}

impl CopyExchange {
    /// Copies between the buffers of `ranks` (any handles, of one GPU or several).
    pub fn new(ranks: Vec<Arc<Gpu>>) -> Self {
        CopyExchange { ranks }
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
        for m in moves {
            let Some(&(Some(src), _)) = send.get(m.from) else {
                return Err(missing(m));
            };
            let Some((Some(dst), to_rank)) = recv.get_mut(m.to) else {
                return Err(missing(m));
            };
            rank(&self.ranks, *to_rank)?.copy_range(
                src,
                m.from_at as usize,
                dst,
                m.to_at as usize,
                m.len as usize,
            )?;
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
