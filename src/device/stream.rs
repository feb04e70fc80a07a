//! Several streams on one GPU: stream handles ([`Gpu::with_new_stream`]), events, and the
//! ordering of buffer uses across streams that replaces cudarc's event tracking.
//!
//! The rule (see the parent module's docs): a buffer belongs to the stream it was allocated on.
//! [`Uses`] remembers the other streams that touched it, only once one did; each use is ordered
//! after the work it depends on (`cuStreamWaitEvent`, host never blocks), and the free after
//! every foreign use.

use super::{driver_err, Gpu};
use crate::{Error, Result};
use cudarc::driver::{sys as drv_sys, CudaEvent, CudaStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Makes `waiter` wait (on the device) for all work enqueued on `on` so far. Works across
/// GPUs (the event belongs to `on`'s context; a stream may wait on any context's event).
pub(super) fn join(waiter: &CudaStream, on: &CudaStream) -> Result<()> {
    if waiter == on {
        return Ok(());
    }
    let ev = on
        .record_event(None)
        .map_err(|e| driver_err("recording an event", e))?;
    waiter
        .wait(&ev)
        .map_err(|e| driver_err("waiting for an event", e))
    // `ev` is destroyed here; the driver keeps it until the wait is resolved.
}

/// The foreign streams that used one buffer, as far as its ordering needs them.
#[derive(Default)]
struct UseState {
    /// The stream of the last write, when it is not the owner's.
    writer: Option<Arc<CudaStream>>,
    /// Streams (not the owner's, not the writer's) that read the buffer since that write.
    readers: Vec<Arc<CudaStream>>,
}

/// How a buffer was used across streams (see the module docs). Empty, and free of any cost,
/// while only the owner's stream uses it.
#[derive(Default)]
pub(super) struct Uses {
    /// Whether `state` holds anything (read without the lock on the fast path).
    foreign: AtomicBool,
    state: Mutex<UseState>,
}

impl Uses {
    /// Orders a read on `on` of a buffer owned by `owner`: `on` waits for the allocation and the
    /// last write; `on` is remembered so that the free and the next write wait for it.
    ///
    /// Sound with concurrent readers (`&` access): a reader is remembered before its work is
    /// enqueued, and the free (which needs ownership, so comes after every borrow) joins it then.
    pub fn before_read(&self, owner: &Arc<CudaStream>, on: &Arc<CudaStream>) -> Result<()> {
        if on == owner && !self.foreign.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut st = self
            .state
            .lock()
            .map_err(|_| Error::invalid("a buffer's stream record was poisoned by a panic"))?;
        join(on, st.writer.as_ref().unwrap_or(owner))?;
        let known = on == owner
            || st.writer.as_ref().is_some_and(|w| w == on)
            || st.readers.iter().any(|r| r == on);
        if !known {
            st.readers.push(on.clone());
            self.foreign.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Orders a write on `on` (exclusive access: `&mut`, so no use is being enqueued
    /// concurrently): `on` waits for the allocation, the last write and every read since; then
    /// `on` is the only stream the buffer's later uses and its free need to wait for.
    pub fn before_write(&mut self, owner: &Arc<CudaStream>, on: &Arc<CudaStream>) -> Result<()> {
        if on == owner && !*self.foreign.get_mut() {
            return Ok(());
        }
        let st = self
            .state
            .get_mut()
            .map_err(|_| Error::invalid("a buffer's stream record was poisoned by a panic"))?;
        join(on, st.writer.as_ref().unwrap_or(owner))?;
        for r in &st.readers {
            join(on, r)?;
        }
        st.readers.clear();
        st.writer = (on != owner).then(|| on.clone());
        *self.foreign.get_mut() = st.writer.is_some();
        Ok(())
    }

    /// Makes `owner` wait for every foreign use, before the buffer is freed on it. Errors are
    /// dropped (a drop cannot report them; the context records them, and a dead context has
    /// freed the memory anyway).
    pub fn before_free(&mut self, owner: &CudaStream) {
        if !*self.foreign.get_mut() {
            return;
        }
        if let Ok(st) = self.state.get_mut() {
            for s in st.writer.iter().chain(st.readers.iter()) {
                let _ = join(owner, s);
            }
        }
    }
}

/// Every stream that used a mapped host buffer (besides its owner), so that reading it on the
/// host and freeing it wait for all of them. Kernels get mapped memory by shared reference and
/// may write it, so each use is ordered after all earlier ones (as a write).
#[derive(Default)]
pub(super) struct StreamSet {
    streams: Mutex<Vec<Arc<CudaStream>>>,
}

impl StreamSet {
    /// Orders a use on `on` after every earlier use (on the owner and on the others), and
    /// remembers `on`.
    pub fn before_use(&self, owner: &Arc<CudaStream>, on: &Arc<CudaStream>) -> Result<()> {
        let mut v = self
            .streams
            .lock()
            .map_err(|_| Error::invalid("a buffer's stream record was poisoned by a panic"))?;
        if v.is_empty() && on == owner {
            return Ok(());
        }
        join(on, owner)?;
        for s in v.iter() {
            join(on, s)?;
        }
        if on != owner && !v.iter().any(|s| s == on) {
            v.push(on.clone());
        }
        Ok(())
    }

    /// Waits on the host for the owner and every stream that used the buffer.
    pub fn synchronize(&self, owner: &CudaStream) -> Result<()> {
        owner
            .synchronize()
            .map_err(|e| driver_err("synchronising the stream", e))?;
        let v = self
            .streams
            .lock()
            .map_err(|_| Error::invalid("a buffer's stream record was poisoned by a panic"))?;
        for s in v.iter() {
            s.synchronize()
                .map_err(|e| driver_err("synchronising the stream", e))?;
        }
        Ok(())
    }
}

/// A point in one stream's work: record it on a handle ([`Event::record`], [`Gpu::record`]),
/// then make other handles wait for it ([`Gpu::wait`]) or wait on the host
/// ([`Event::synchronize`]). Events of one GPU may be waited on by streams of another.
///
/// ```no_run
/// # fn main() -> warpmap::Result<()> {
/// use warpmap::Gpu;
/// let copy = Gpu::default_gpu()?;          // uploads on one stream ...
/// let compute = copy.with_new_stream()?;   // ... kernels on another
/// let keys = copy.upload(&[1u64, 2, 3])?;
/// let uploaded = copy.record()?;
/// compute.wait(&uploaded)?;                // compute's later work runs after the upload
/// # Ok(()) }
/// ```
pub struct Event {
    inner: CudaEvent,
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Event(complete: {})", self.is_complete())
    }
}

/// A point in a stream's work with the time the GPU reached it ([`Gpu::stamp`]).
pub struct Stamp {
    inner: CudaEvent,
}

impl Stamp {
    /// Milliseconds from `start` to this stamp (negative if this came first); waits for both.
    /// Stamps of one GPU only.
    pub fn ms_since(&self, start: &Stamp) -> Result<f32> {
        start
            .inner
            .elapsed_ms(&self.inner)
            .map_err(|e| driver_err("timing two events", e))
    }
}

impl Event {
    /// Records, into this event, all work enqueued so far on `gpu`'s stream (replacing what it
    /// held). `gpu` must be a handle of the GPU the event was made on.
    pub fn record(&self, gpu: &Gpu) -> Result<()> {
        self.inner
            .record(&gpu.stream)
            .map_err(|e| driver_err("recording an event", e))
    }
    /// Waits on the host until the recorded work is done; surfaces a kernel fault as an error.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize()
            .map_err(|e| driver_err("waiting for an event", e))
    }
    /// Whether the recorded work is done (`true` for an event never recorded).
    pub fn is_complete(&self) -> bool {
        self.inner.is_complete()
    }
}

impl Gpu {
    /// Another handle on this GPU with a new stream of its own, sharing the context, the
    /// properties and the module cache (so kernels compiled for one handle are not compiled
    /// again). Anything made on the new handle — buffers, tables — issues its work on the new
    /// stream, concurrently with this handle's. Order the two with [`Gpu::wait_for`] or
    /// [`Event`]s where one needs the other's results; buffers order themselves (see
    /// [`DeviceBuffer`](super::DeviceBuffer)).
    pub fn with_new_stream(&self) -> Result<Arc<Gpu>> {
        let stream = self
            .dev
            .ctx
            .new_stream()
            .map_err(|e| driver_err("creating a stream", e))?;
        Ok(Arc::new(Gpu {
            dev: self.dev.clone(),
            stream,
            stream_id: super::next_stream_id(),
        }))
    }

    /// A number that identifies this handle's stream in the process (handles made by
    /// [`Gpu::with_new_stream`] get new ones).
    pub fn stream_id(&self) -> u64 {
        self.stream_id
    }

    /// Whether `other` issues its work on the same stream as `self`.
    pub fn same_stream(&self, other: &Gpu) -> bool {
        self.stream == other.stream
    }

    /// Whether `other` is a handle of the same GPU (the same context and module cache).
    pub fn same_device(&self, other: &Gpu) -> bool {
        Arc::ptr_eq(&self.dev, &other.dev)
    }

    /// A new event, not yet recorded (see [`Event::record`]).
    pub fn new_event(&self) -> Result<Event> {
        let inner = self
            .dev
            .ctx
            .new_event(Some(drv_sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .map_err(|e| driver_err("creating an event", e))?;
        Ok(Event { inner })
    }

    /// A timing event recorded now on this handle's stream: when the GPU got there (for
    /// timelines of overlapped work; [`Stamp::ms_since`]).
    pub fn stamp(&self) -> Result<Stamp> {
        let inner = self
            .dev
            .ctx
            .new_event(Some(drv_sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| driver_err("creating an event", e))?;
        inner
            .record(&self.stream)
            .map_err(|e| driver_err("recording an event", e))?;
        Ok(Stamp { inner })
    }

    /// A new event holding all work enqueued so far on this handle's stream.
    pub fn record(&self) -> Result<Event> {
        let ev = self.new_event()?;
        ev.record(self)?;
        Ok(ev)
    }

    /// Makes this handle's later work wait (on the device; the host goes on) for the work
    /// `event` recorded. The event may come from another GPU.
    pub fn wait(&self, event: &Event) -> Result<()> {
        self.stream
            .wait(&event.inner)
            .map_err(|e| driver_err("waiting for an event", e))
    }

    /// Makes this handle's later work wait (on the device) for all work enqueued so far on
    /// `other`'s stream: `gpu_b.wait_for(&gpu_a)` is `gpu_b.wait(&gpu_a.record()?)`.
    pub fn wait_for(&self, other: &Gpu) -> Result<()> {
        join(&self.stream, &other.stream)
    }

    /// Waits on the host for every stream of this GPU (all handles), not only this one's.
    pub fn synchronize_device(&self) -> Result<()> {
        self.dev
            .ctx
            .synchronize()
            .map_err(|e| driver_err("synchronising the device", e))
    }
}

/// Checks that a buffer owned by `owner` (a stream of its GPU) may be used on `on`: kernels
/// and copies reach only their own GPU's memory here (no peer mappings); data moves between
/// GPUs through the host or NCCL.
pub(super) fn check_same_gpu(owner: &CudaStream, on: &CudaStream, what: &str) -> Result<()> {
    if owner.context() == on.context() {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "{what} of GPU {} used on GPU {}: move it through the host (or NCCL) first",
        owner.context().ordinal(),
        on.context().ordinal()
    )))
}

/// The ordered pairs of GPU ordinals `(from, to)` whose peer access [`Gpu::enable_peer_access`]
/// turned on in this process (kernels on `from` may read and write `to`'s memory).
fn peers() -> &'static Mutex<std::collections::HashSet<(usize, usize)>> {
    static PEERS: std::sync::OnceLock<Mutex<std::collections::HashSet<(usize, usize)>>> =
        std::sync::OnceLock::new();
    PEERS.get_or_init(Default::default)
}

/// Records that kernels on GPU `from` reach GPU `to`'s memory (peer access is on).
pub(super) fn note_peer_access(from: usize, to: usize) {
    if let Ok(mut p) = peers().lock() {
        p.insert((from, to));
    }
}

/// Whether kernels on GPU `from` reach GPU `to`'s memory: the same GPU, or peer access on.
pub(super) fn reaches(from: usize, to: usize) -> bool {
    from == to || peers().lock().is_ok_and(|p| p.contains(&(from, to)))
}

/// Checks that a buffer owned by `owner` may be viewed on `on`: the same GPU, or one whose
/// peer access to the buffer's GPU is on (its kernels then read and write the buffer in place,
/// over the link).
pub(super) fn check_reachable(owner: &CudaStream, on: &CudaStream, what: &str) -> Result<()> {
    let (to, from) = (owner.context().ordinal(), on.context().ordinal());
    if owner.context() == on.context() || reaches(from, to) {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "{what} of GPU {to} viewed on GPU {from}, which has no peer access to it \
         (Gpu::enable_peer_access): move it through the host (or NCCL) first"
    )))
}
