//! The device layer: the only module that uses cudarc.
//!
//! - [`Gpu`]: one CUDA device seen through one stream, discovered without panicking
//!   ([`Error::NoDevice`] when there is no driver or GPU, [`Error::DriverInit`] when the driver
//!   fails); [`Gpu::with_new_stream`] gives more handles on the same GPU, each with its own
//!   stream, and [`Event`] / [`Gpu::wait_for`] order work between them;
//! - [`nvrtc`](mod@nvrtc): NVRTC discovery and compilation to CUBIN for the device's own `sm_XY`;
//! - module cache: in memory per GPU (shared by its stream handles), and on disk ([`cache`]);
//! - [`DeviceBuffer`], [`PinnedBuffer`] and [`MappedBuffer`] (host memory mapped into the GPU,
//!   of either [`HostPages`] kind), and [`Kernel`] launches;
//! - `nccl` (cargo feature `nccl`): a communicator over several GPUs of this process, sum
//!   all-reduce and the all-to-all exchanges of the sharded table.
//!
//! # Streams and buffers
//!
//! Every operation of one handle is issued on its stream, in order. A buffer belongs to the
//! stream it was allocated on (its allocation and its free are ordered on that stream) and may
//! be used on any handle of the same GPU. cudarc's per-buffer event tracking is off (it costs
//! two events per buffer and an event record per use even on one stream, and it keeps one read
//! event per buffer, so a read on a second stream hides the first reader from the free).
//! Instead each buffer records, only when a foreign stream touches it, the last stream that
//! wrote it and the streams that read it since ([`stream`](self) module's `Uses`):
//! - a use on stream S first makes S wait for the buffer's allocation and last write (and, for
//!   a write, for every reader since): no stream reads what is not yet written, and no write
//!   overtakes a read;
//! - dropping the buffer makes its own stream wait for every foreign stream that used it before
//!   the free is enqueued there: memory is never freed under a kernel of another stream.
//!
//! Work on one stream costs nothing extra (a pointer comparison). Ordering between streams is
//! by events (`cuStreamWaitEvent`): it never blocks the host.
//!
//! Across GPUs, buffers move by copies ([`Gpu::copy_range`]) or, where
//! [`Gpu::enable_peer_access`] turned on peer access, are *viewed* in place ([`Gpu::view`],
//! [`Gpu::views_mut`]): the view belongs to a stream of the other GPU, whose kernels read or
//! write the buffer over the link, ordered by the same events (a stream may wait on any GPU's).

pub mod cache;
#[cfg(feature = "nccl")]
pub mod nccl;
pub mod nvrtc;
mod stream;

use crate::kernels::KernelSource;
use crate::{Error, Result};
use cudarc::driver::{
    result as drv_result, sys as drv_sys, CudaContext, CudaEvent, CudaFunction, CudaModule,
    CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DriverError, HostSlice, LaunchArgs,
    LaunchConfig, PinnedHostSlice, PushKernelArg,
};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;
use stream::{StreamSet, Uses};

pub use nvrtc::{compile_cubin, nvrtc, Nvrtc, NVRTC_REMEDY};
pub use stream::{Event, Stamp};

fn driver_err(context: &str, e: DriverError) -> Error {
    if e.0 == drv_sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
        return Error::OutOfMemory {
            requested_bytes: 0,
            free_bytes: 0,
        };
    }
    let message = driver_message(&e);
    Error::Driver {
        context: context.to_string(),
        message: format!("{:?}: {message}", e.0),
    }
}

/// How one kernel module was obtained, for logs and the bench JSON.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CompileRecord {
    /// Module and defines.
    pub module: String,
    /// `sm_XY`.
    pub arch: String,
    /// "nvrtc" (compiled now), "disk" (disk cache) or "memory" (already loaded).
    pub source: &'static str,
    /// Milliseconds spent (compile or cache read, plus module load).
    pub ms: f64,
}

fn compile_records() -> &'static Mutex<Vec<CompileRecord>> {
    static RECORDS: OnceLock<Mutex<Vec<CompileRecord>>> = OnceLock::new();
    RECORDS.get_or_init(|| Mutex::new(Vec::new()))
}

/// Every module compile or cache load of this process so far.
pub fn compile_log() -> Vec<CompileRecord> {
    compile_records()
        .lock()
        .map(|r| r.clone())
        .unwrap_or_default()
}

/// Whether a CUDA driver library can be loaded (cheap; does not touch a GPU).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the driver library by its usual names; no CUDA call is made.
    unsafe { drv_sys::is_culib_present() }
}

/// What every stream handle of one GPU shares: the context, the properties and the loaded
/// modules.
struct Device {
    ctx: Arc<CudaContext>,
    ordinal: usize,
    name: String,
    arch: (u32, u32),
    sm_count: u32,
    l2_bytes: u64,
    /// Shared memory one block may opt in to (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`).
    shared_per_block_optin: u32,
    total_memory: u64,
    modules: Mutex<HashMap<String, Arc<CudaModule>>>,
    /// The device's default memory pool (stream-ordered allocations), where the driver has
    /// them.
    pool: Option<MemPool>,
}

/// A CUDA memory pool handle (`CUmemoryPool`). The default pool of a device lives as long as
/// the driver; its handle is only passed to the driver.
struct MemPool(drv_sys::CUmemoryPool);

// SAFETY: a CUmemoryPool is an opaque driver handle; the driver's pool calls are thread-safe.
unsafe impl Send for MemPool {}
// SAFETY: as above.
unsafe impl Sync for MemPool {}

impl MemPool {
    /// The default pool of GPU `ordinal`, made to keep the memory its buffers free: with the
    /// driver's default release threshold (0) the pool gives freed memory back at every
    /// synchronisation, and a table that allocates temporaries per batch (the two-level
    /// table's split, DyCuckoo's resizes) had them mapped afresh every batch, milliseconds per
    /// GiB. `None` where the pool cannot be read or set (allocations work as before).
    fn keep_freed_memory(ordinal: usize) -> Option<MemPool> {
        let mut dev: drv_sys::CUdevice = 0;
        let mut pool: drv_sys::CUmemoryPool = std::ptr::null_mut();
        let mut keep: u64 = u64::MAX;
        // SAFETY: out-pointers to locals of the types the calls write; `ordinal` is below the
        // device count (checked by the caller) and the driver is initialised (a context exists).
        let ok = unsafe {
            drv_sys::cuDeviceGet(&mut dev, ordinal as i32)
                .result()
                .is_ok()
                && drv_sys::cuDeviceGetDefaultMemPool(&mut pool, dev)
                    .result()
                    .is_ok()
                && drv_sys::cuMemPoolSetAttribute(
                    pool,
                    drv_sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    (&mut keep as *mut u64).cast(),
                )
                .result()
                .is_ok()
        };
        ok.then_some(MemPool(pool))
    }

    /// One of the pool's 64-bit byte counts, or `None` where the driver does not say.
    fn attribute(&self, a: drv_sys::CUmemPool_attribute) -> Option<u64> {
        let mut v: u64 = 0;
        // SAFETY: the byte-count attributes asked for here are 64-bit values written to `v`.
        let r = unsafe { drv_sys::cuMemPoolGetAttribute(self.0, a, (&mut v as *mut u64).cast()) };
        r.result().ok().map(|()| v)
    }

    /// Bytes the pool holds but no buffer uses (free for the next allocation).
    fn unused(&self) -> u64 {
        use drv_sys::CUmemPool_attribute as A;
        let read = |a: A| self.attribute(a).unwrap_or(0);
        read(A::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
            .saturating_sub(read(A::CU_MEMPOOL_ATTR_USED_MEM_CURRENT))
    }

    /// The most bytes the pool's buffers used at once since the last [`reset_used_high`]
    /// (`CU_MEMPOOL_ATTR_USED_MEM_HIGH`), or `None` where the driver does not say.
    ///
    /// [`reset_used_high`]: MemPool::reset_used_high
    fn used_high(&self) -> Option<u64> {
        self.attribute(drv_sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH)
    }

    /// Bytes the pool's buffers use now (`CU_MEMPOOL_ATTR_USED_MEM_CURRENT`; 0 where the driver
    /// does not say).
    fn used(&self) -> u64 {
        self.attribute(drv_sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
            .unwrap_or(0)
    }

    /// Resets the high-water mark of [`used_high`](MemPool::used_high) to the bytes in use now
    /// (the driver takes only 0 for this attribute, meaning "reset").
    fn reset_used_high(&self) {
        let mut zero: u64 = 0;
        // SAFETY: USED_MEM_HIGH takes a 64-bit value, and 0 resets it.
        let _ = unsafe {
            drv_sys::cuMemPoolSetAttribute(
                self.0,
                drv_sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                (&mut zero as *mut u64).cast(),
            )
        };
    }

    /// Gives the pool's unused memory back to the driver.
    fn trim(&self) {
        // SAFETY: a valid pool handle; trimming releases only memory no allocation uses.
        let _ = unsafe { drv_sys::cuMemPoolTrimTo(self.0, 0) };
    }
}

/// One CUDA GPU seen through one stream: context, properties, loaded modules (shared by every
/// handle of the GPU) and the stream on which this handle issues all its work.
///
/// Every copy, fill and kernel launch made through a handle (and through any table made on it)
/// goes on the handle's stream, in order. [`Gpu::with_new_stream`] gives another handle on the
/// same GPU with a stream of its own, for work that should overlap; [`Gpu::wait_for`] and
/// [`Event`] order work between handles. Buffers may be used on any handle of their GPU: the
/// device layer orders such uses itself (see [`DeviceBuffer`]).
pub struct Gpu {
    dev: Arc<Device>,
    stream: Arc<CudaStream>,
    stream_id: u64,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("ordinal", &self.dev.ordinal)
            .field("name", &self.dev.name)
            .field("arch", &self.dev.arch)
            .field("stream", &self.stream_id)
            .finish()
    }
}

/// A process-wide unique number for each stream handle.
fn next_stream_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The error for a driver call that failed while starting a GPU: [`Error::NoDevice`] when the
/// driver says there is no GPU, else [`Error::DriverInit`] naming the driver's error.
fn init_err(context: &str, e: DriverError) -> Error {
    classify_init_error(context, e.0, &driver_message(&e))
}

/// The driver's error string for `e` (its code when the driver has none).
fn driver_message(e: &DriverError) -> String {
    e.error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0))
}

/// How a failure to start the GPU is reported: `CUDA_ERROR_NO_DEVICE` (the driver works and
/// sees no GPU), `CUDA_ERROR_INVALID_DEVICE` (no GPU of that ordinal) and
/// `CUDA_ERROR_STUB_LIBRARY` (the libcuda found is the toolkit's link stub, not a driver) are
/// [`Error::NoDevice`], where falling back to the CPU is right; every other code means a driver
/// that is present but broken ([`Error::DriverInit`]), which must not be hidden.
pub(crate) fn classify_init_error(context: &str, code: drv_sys::CUresult, message: &str) -> Error {
    use drv_sys::cudaError_enum as C;
    match code {
        C::CUDA_ERROR_NO_DEVICE | C::CUDA_ERROR_INVALID_DEVICE | C::CUDA_ERROR_STUB_LIBRARY => {
            Error::NoDevice {
                reason: format!("{context}: {code:?}: {message}"),
            }
        }
        _ => Error::DriverInit {
            context: context.to_string(),
            code: format!("{code:?}"),
            message: message.to_string(),
        },
    }
}

/// A failure of [`Gpu::new`], kept (cloneable) for [`Gpu::default_gpu`]'s later callers.
#[derive(Clone, Debug)]
enum InitFailure {
    NoDevice(String),
    DriverInit {
        context: String,
        code: String,
        message: String,
    },
}

impl From<Error> for InitFailure {
    fn from(e: Error) -> Self {
        match e {
            Error::NoDevice { reason } => InitFailure::NoDevice(reason),
            Error::DriverInit {
                context,
                code,
                message,
            } => InitFailure::DriverInit {
                context,
                code,
                message,
            },
            // Gpu::new reports nothing else; anything would still be a failed start.
            other => InitFailure::DriverInit {
                context: "opening GPU 0".into(),
                code: "other".into(),
                message: other.to_string(),
            },
        }
    }
}

impl InitFailure {
    fn to_error(&self) -> Error {
        match self.clone() {
            InitFailure::NoDevice(reason) => Error::NoDevice { reason },
            InitFailure::DriverInit {
                context,
                code,
                message,
            } => Error::DriverInit {
                context,
                code,
                message,
            },
        }
    }
}

impl Gpu {
    /// Opens GPU `ordinal`, with a stream of its own. Never panics:
    /// - [`Error::NoDevice`] when there is no driver library, no GPU, or no GPU `ordinal`;
    /// - [`Error::DriverInit`] when the driver is present but fails (`cuInit`, context
    ///   creation): a broken install, not a machine without a GPU.
    ///
    /// Each call makes a new handle with its own module cache; [`Gpu::default_gpu`] shares one,
    /// and [`Gpu::with_new_stream`] makes more handles that share this one's.
    pub fn new(ordinal: usize) -> Result<Arc<Gpu>> {
        if !driver_present() {
            return Err(Error::NoDevice {
                reason: "no CUDA driver library (libcuda.so) on this machine".into(),
            });
        }
        let count = Gpu::count()?;
        if count == 0 || ordinal >= count {
            return Err(Error::NoDevice {
                reason: format!("GPU {ordinal} asked for, {count} present"),
            });
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| init_err(&format!("creating the context of GPU {ordinal}"), e))?;
        // SAFETY: cudarc's per-buffer event tracking is replaced by the device layer's own
        // (see `stream::Uses`): every DeviceBuffer and MappedBuffer records which streams used
        // it and is ordered before those uses and its free; the only other users of a buffer's
        // memory, the tables, reach it through those types. Neither cudarc's tracking nor ours
        // is needed for work on one stream, which runs in order.
        unsafe { ctx.disable_event_tracking() };
        let attr = |a| {
            ctx.attribute(a)
                .map_err(|e| init_err("reading the GPU's attributes", e))
        };
        use drv_sys::CUdevice_attribute_enum as A;
        let major = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32;
        let minor = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32;
        let sm_count = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let l2_bytes = attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64;
        let shared_per_block_optin =
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as u32;
        let name = ctx.name().map_err(|e| init_err("reading the name", e))?;
        let total_memory = ctx
            .total_mem()
            .map_err(|e| init_err("reading memory size", e))? as u64;
        let stream = ctx
            .new_stream()
            .map_err(|e| init_err("creating a stream", e))?;
        // WARPMAP_POOL=return leaves the pool as the driver sets it (freed memory goes back at
        // every synchronisation): for processes that share the GPU, and for compute-sanitizer's
        // racecheck, which fails to track launches when the pool keeps memory.
        let keep = std::env::var("WARPMAP_POOL").map_or(true, |v| v.trim() != "return");
        let pool = if ctx.has_async_alloc() && keep {
            MemPool::keep_freed_memory(ordinal)
        } else {
            None
        };
        Ok(Arc::new(Gpu {
            dev: Arc::new(Device {
                ctx,
                ordinal,
                name,
                arch: (major, minor),
                sm_count,
                l2_bytes,
                shared_per_block_optin,
                total_memory,
                modules: Mutex::new(HashMap::new()),
                pool,
            }),
            stream,
            stream_id: next_stream_id(),
        }))
    }

    /// How many GPUs the driver sees. [`Error::NoDevice`] without a driver library,
    /// [`Error::DriverInit`] when `cuInit` fails for another reason than "no GPU".
    pub fn count() -> Result<usize> {
        if !driver_present() {
            return Err(Error::NoDevice {
                reason: "no CUDA driver library (libcuda.so) on this machine".into(),
            });
        }
        match CudaContext::device_count() {
            Ok(n) => Ok(n.max(0) as usize),
            // cuInit's "no device" is a count of 0, not a failure.
            Err(e) if e.0 == drv_sys::cudaError_enum::CUDA_ERROR_NO_DEVICE => Ok(0),
            Err(e) => Err(init_err("cuInit", e)),
        }
    }

    /// GPU 0, shared by every caller in the process (one handle, one stream, one module
    /// cache). The first call's outcome is kept: [`Error::NoDevice`] (no driver or no GPU:
    /// fall back to the CPU) or [`Error::DriverInit`] (a driver that is present but broken:
    /// report it), as for [`Gpu::new`].
    pub fn default_gpu() -> Result<Arc<Gpu>> {
        static DEFAULT: OnceLock<std::result::Result<Arc<Gpu>, InitFailure>> = OnceLock::new();
        match DEFAULT.get_or_init(|| Gpu::new(0).map_err(InitFailure::from)) {
            Ok(g) => Ok(g.clone()),
            Err(f) => Err(f.to_error()),
        }
    }

    /// The GPU's ordinal (its number in the driver's list).
    pub fn ordinal(&self) -> usize {
        self.dev.ordinal
    }

    /// Whether `buf` is in this GPU's memory (it may belong to any handle of the GPU).
    pub fn holds<T: bytemuck::Pod>(&self, buf: &DeviceBuffer<T>) -> bool {
        buf.bytes.stream().context() == self.stream.context()
    }

    /// Lets this GPU and `peer` reach each other's memory directly (NVLink or PCIe peer to
    /// peer), both ways: peer access between the two contexts, and access of each device to
    /// the other's default memory pool (stream-ordered allocations, which every
    /// [`DeviceBuffer`] is, are outside the contexts' peer mappings). Without it a copy between
    /// two GPUs ([`Gpu::copy_range`]) is staged through host memory. Returns whether access is
    /// on: false for the same GPU, or where the driver says the two cannot reach each other
    /// (copies then still work, staged). Calling it again is harmless.
    ///
    /// # Errors
    /// [`Error::Driver`] if the driver refuses an access it said was possible.
    pub fn enable_peer_access(&self, peer: &Gpu) -> Result<bool> {
        use drv_sys::cudaError_enum as E;
        if self.dev.ordinal == peer.dev.ordinal {
            return Ok(false);
        }
        let (a, b) = (self.dev.ctx.cu_device(), peer.dev.ctx.cu_device());
        let (mut ab, mut ba) = (0i32, 0i32);
        // SAFETY: out-pointers to locals; both device handles come from live contexts.
        let asked = unsafe {
            drv_sys::cuDeviceCanAccessPeer(&mut ab, a, b)
                .result()
                .and_then(|()| drv_sys::cuDeviceCanAccessPeer(&mut ba, b, a).result())
        };
        if asked.is_err() || ab == 0 || ba == 0 {
            return Ok(false);
        }
        for (from, to) in [(self, peer), (peer, self)] {
            from.dev
                .ctx
                .bind_to_thread()
                .map_err(|e| driver_err("binding a context for peer access", e))?;
            // SAFETY: `to`'s context is alive (its Device holds it); the call maps it into the
            // context just bound to this thread.
            let r = unsafe { drv_sys::cuCtxEnablePeerAccess(to.dev.ctx.cu_ctx(), 0) };
            if r != E::CUDA_SUCCESS && r != E::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
                return Err(driver_err("enabling peer access", DriverError(r)));
            }
            let mut pool: drv_sys::CUmemoryPool = std::ptr::null_mut();
            let desc = drv_sys::CUmemAccessDesc {
                location: drv_sys::CUmemLocation {
                    type_: drv_sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                    id: from.dev.ordinal as i32,
                },
                flags: drv_sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            };
            // SAFETY: `pool` is an out-pointer to a local; the access descriptor is one valid
            // element, naming `from`'s device, for `to`'s default pool.
            unsafe {
                drv_sys::cuDeviceGetDefaultMemPool(&mut pool, to.dev.ctx.cu_device())
                    .result()
                    .and_then(|()| drv_sys::cuMemPoolSetAccess(pool, &desc, 1).result())
            }
            .map_err(|e| driver_err("granting a peer access to the memory pool", e))?;
            // Kernels on `from` may now read and write `to`'s buffers (views across GPUs).
            stream::note_peer_access(from.dev.ordinal, to.dev.ordinal);
        }
        Ok(true)
    }

    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub fn name(&self) -> &str {
        &self.dev.name
    }
    /// Compute capability `(major, minor)`.
    pub fn arch(&self) -> (u32, u32) {
        self.dev.arch
    }
    /// `10 * major + minor`, the `XY` of `sm_XY`.
    pub fn sm(&self) -> u32 {
        self.dev.arch.0 * 10 + self.dev.arch.1
    }
    /// Number of multiprocessors.
    pub fn sm_count(&self) -> u32 {
        self.dev.sm_count
    }
    /// L2 cache size in bytes.
    pub fn l2_bytes(&self) -> u64 {
        self.dev.l2_bytes
    }
    /// Shared memory one block may use at most, opting in beyond the default 48 KiB
    /// ([`Kernel::allow_shared`]): 227 KiB on an H100, 163 KiB on an A100.
    pub fn shared_per_block_optin(&self) -> u32 {
        self.dev.shared_per_block_optin
    }
    /// Device memory in bytes.
    pub fn total_memory(&self) -> u64 {
        self.dev.total_memory
    }
    /// Free device memory in bytes, now: the driver's free memory and what the default memory
    /// pool holds unused (freed buffers' memory, which the pool keeps for the next allocation).
    pub fn free_memory(&self) -> Result<u64> {
        let pooled = self.dev.pool.as_ref().map_or(0, MemPool::unused);
        self.dev
            .ctx
            .mem_get_info()
            .map(|(free, _)| free as u64 + pooled)
            .map_err(|e| driver_err("reading free memory", e))
    }

    /// The most bytes of device memory the buffers used at once since the last
    /// [`reset_pool_used_high`](Gpu::reset_pool_used_high) (the stream-ordered pool's
    /// `USED_MEM_HIGH`: every [`DeviceBuffer`] of this GPU, temporaries included), or `None`
    /// without a pool. A query's peak memory: reset, run, read.
    pub fn pool_used_high_since_reset(&self) -> Option<u64> {
        self.dev.pool.as_ref().and_then(MemPool::used_high)
    }

    /// Starts a new high-water mark of the device memory the buffers use
    /// ([`pool_used_high_since_reset`](Gpu::pool_used_high_since_reset)): the mark becomes the
    /// bytes in use now, which it returns (`None` without a pool).
    pub fn reset_pool_used_high(&self) -> Option<u64> {
        let pool = self.dev.pool.as_ref()?;
        pool.reset_used_high();
        Some(pool.used())
    }

    /// Gives the memory that the GPU's memory pool keeps from freed buffers back to the driver
    /// (waits for this handle's stream first, so that its frees are done). The pool keeps freed
    /// memory so that the next allocation maps nothing (about a millisecond per GB on an H100);
    /// trimming suits a process that shares the GPU, or that moves from large batches to small
    /// ones. Without a pool (`WARPMAP_POOL=return`, or no stream-ordered allocator), it only
    /// waits.
    ///
    /// # Errors
    /// The device's errors (from the wait).
    pub fn trim_pool(&self) -> Result<()> {
        self.synchronize()?;
        if let Some(pool) = &self.dev.pool {
            pool.trim();
        }
        Ok(())
    }

    /// Waits on the host for all work issued on this handle's stream; surfaces a kernel fault
    /// as an error. Other handles' streams ([`Gpu::with_new_stream`]) are not waited for
    /// ([`Gpu::synchronize_device`] waits for all).
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| driver_err("synchronising the stream", e))
    }

    /// Allocates `len` elements, uninitialised (filled with 0xff bytes in debug builds would
    /// cost a pass; callers that read before writing must fill). The allocation is ordered on
    /// this handle's stream, and the buffer belongs to it (it is freed there).
    pub fn alloc<T: bytemuck::Pod>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::invalid(format!("allocation of {len} elements overflows")))?;
        if bytes as u64 > self.dev.total_memory {
            return Err(Error::OutOfMemory {
                requested_bytes: bytes as u64,
                free_bytes: self.free_memory().unwrap_or(0),
            });
        }
        // SAFETY: the memory is uninitialised; DeviceBuffer<T: Pod> accepts any bit pattern,
        // and every reader in warpmap writes (or fills) before it reads.
        let mut slice = unsafe { self.stream.alloc::<u8>(bytes.max(1)) };
        if let (Err(_), Some(pool)) = (&slice, &self.dev.pool) {
            // The pool's free memory may be in pieces too small: give it back and try again.
            let _ = self.stream.synchronize();
            pool.trim();
            // SAFETY: as above.
            slice = unsafe { self.stream.alloc::<u8>(bytes.max(1)) };
        }
        let slice = slice.map_err(|e| match driver_err("allocating device memory", e) {
            Error::OutOfMemory { .. } => Error::OutOfMemory {
                requested_bytes: bytes as u64,
                free_bytes: self.free_memory().unwrap_or(0),
            },
            other => other,
        })?;
        Ok(DeviceBuffer {
            bytes: ManuallyDrop::new(slice),
            len,
            uses: Uses::default(),
            parent: None,
            view: false,
            _t: PhantomData,
        })
    }

    /// Allocates `len` elements with every byte set to `byte`.
    pub fn alloc_filled<T: bytemuck::Pod>(&self, len: usize, byte: u8) -> Result<DeviceBuffer<T>> {
        let mut b = self.alloc::<T>(len)?;
        self.fill_bytes(&mut b, byte)?;
        Ok(b)
    }

    /// Sets every byte of `buf` to `byte` (asynchronous).
    pub fn fill_bytes<T: bytemuck::Pod>(&self, buf: &mut DeviceBuffer<T>, byte: u8) -> Result<()> {
        let n = buf.len * std::mem::size_of::<T>();
        if n == 0 {
            return Ok(());
        }
        self.before_write(buf)?;
        let (ptr, _record) = buf.bytes.device_ptr_mut(&self.stream);
        // SAFETY: `ptr` addresses `n <= allocation size` bytes owned by `buf`. The memset is
        // ordered after the allocation and every earlier use (before_write), and the free
        // after the memset: on this stream if it is the buffer's, else through the stream
        // record that the buffer's drop waits for.
        unsafe { drv_result::memset_d8_async(ptr, byte, n, self.stream.cu_stream()) }
            .map_err(|e| driver_err("memset", e))
    }

    /// Sets `len` bytes of `buf` from byte `offset` to `byte` (asynchronous).
    pub fn fill_range<T: bytemuck::Pod>(
        &self,
        buf: &mut DeviceBuffer<T>,
        offset: usize,
        len: usize,
        byte: u8,
    ) -> Result<()> {
        let total = buf.len * std::mem::size_of::<T>();
        if offset.checked_add(len).is_none_or(|end| end > total) {
            return Err(Error::invalid(format!(
                "fill of bytes {offset}..+{len} of a device buffer of {total}"
            )));
        }
        if len == 0 {
            return Ok(());
        }
        self.before_write(buf)?;
        let (ptr, _record) = buf.bytes.device_ptr_mut(&self.stream);
        // SAFETY: `ptr + offset` addresses `len` bytes inside `buf`'s allocation (checked
        // above). Ordered as in `fill_bytes`: after the allocation and every earlier use, and
        // before the free.
        unsafe {
            drv_result::memset_d8_async(ptr + offset as u64, byte, len, self.stream.cu_stream())
        }
        .map_err(|e| driver_err("memset", e))
    }

    /// Copies a host slice into a new device buffer.
    pub fn upload<T: bytemuck::Pod>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let mut b = self.alloc::<T>(data.len())?;
        self.copy_to_device(data, &mut b)?;
        Ok(b)
    }

    /// Copies a host slice into the front of `dst` (lengths checked).
    pub fn copy_to_device<T: bytemuck::Pod>(
        &self,
        src: &[T],
        dst: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        self.copy_to_device_at(src, dst, 0)
    }

    /// Copies a host slice into `dst` from element `at` on (lengths checked) and waits for it.
    pub fn copy_to_device_at<T: bytemuck::Pod>(
        &self,
        src: &[T],
        dst: &mut DeviceBuffer<T>,
        at: usize,
    ) -> Result<()> {
        // SAFETY: the stream is synchronized before the borrow of `src` ends (below); a copy
        // that could not be enqueued reads nothing.
        unsafe { self.copy_to_device_async(src, dst, at)? };
        self.synchronize()
    }

    /// Copies the front of a device buffer into a host slice and waits for it.
    pub fn copy_to_host<T: bytemuck::Pod>(
        &self,
        src: &DeviceBuffer<T>,
        dst: &mut [T],
    ) -> Result<()> {
        if dst.len() > src.len {
            return Err(Error::invalid(format!(
                "copy of {} elements out of a device buffer of {}",
                dst.len(),
                src.len
            )));
        }
        if dst.is_empty() {
            return Ok(());
        }
        self.before_read(src)?;
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(dst);
        let view = src.bytes.slice(0..bytes.len());
        self.stream
            .memcpy_dtoh(&view, bytes)
            .map_err(|e| driver_err("copy to host", e))?;
        self.synchronize()
    }

    /// Copies a whole device buffer into a new vector.
    pub fn download<T: bytemuck::Pod>(&self, src: &DeviceBuffer<T>) -> Result<Vec<T>> {
        let mut v = vec![T::zeroed(); src.len];
        self.copy_to_host(src, &mut v)?;
        Ok(v)
    }

    /// Copies `src` into the front of `dst` on the device.
    pub fn copy_device<T: bytemuck::Pod>(
        &self,
        src: &DeviceBuffer<T>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        if src.len > dst.len {
            return Err(Error::invalid("device copy into a smaller buffer"));
        }
        if src.len == 0 {
            return Ok(());
        }
        self.before_read(src)?;
        self.before_write(dst)?;
        let n = src.len * std::mem::size_of::<T>();
        let mut view = dst.bytes.slice_mut(0..n);
        self.stream
            .memcpy_dtod(&src.bytes.slice(0..n), &mut view)
            .map_err(|e| driver_err("device copy", e))
    }

    /// Copies `len` elements of `src` from element `src_at` into `dst` from element `dst_at`,
    /// on this handle's stream. `dst` is on this handle's GPU; `src` may be on another GPU (a
    /// peer copy, `cuMemcpyPeerAsync`), which waits for the source's writes through an event.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if a range leaves its buffer or `dst` is on another GPU.
    pub fn copy_range<T: bytemuck::Pod>(
        &self,
        src: &DeviceBuffer<T>,
        src_at: usize,
        dst: &mut DeviceBuffer<T>,
        dst_at: usize,
        len: usize,
    ) -> Result<()> {
        let fits = |at: usize, total: usize| at.checked_add(len).is_some_and(|end| end <= total);
        if !fits(src_at, src.len) || !fits(dst_at, dst.len) {
            return Err(Error::invalid(format!(
                "copy of {len} elements from element {src_at} of a device buffer of {} to \
                 element {dst_at} of one of {}",
                src.len, dst.len
            )));
        }
        if len == 0 {
            return Ok(());
        }
        self.before_write(dst)?;
        let size = std::mem::size_of::<T>();
        let src_owner = src.bytes.stream();
        // A source on another GPU is ordered by an event of its stream (`Uses` works across
        // GPUs); only the same-GPU check of `before_read` is skipped for it.
        src.uses.before_read(src_owner, &self.stream)?;
        let (from, _r) = src.bytes.device_ptr(&self.stream);
        let (to, _w) = dst.bytes.device_ptr_mut(&self.stream);
        let (from, to) = (from + (src_at * size) as u64, to + (dst_at * size) as u64);
        let bytes = len * size;
        let same = src_owner.context() == self.stream.context();
        // SAFETY: [from, from + bytes) lies in `src`'s allocation and [to, to + bytes) in
        // `dst`'s (ranges checked above); the copy is ordered after the allocation and earlier
        // writes of both (before_read/before_write) and before their frees (both record this
        // stream as a user when it is not their own); the contexts are the buffers' own.
        unsafe {
            if same {
                drv_result::memcpy_dtod_async(to, from, bytes, self.stream.cu_stream())
            } else {
                drv_sys::cuMemcpyPeerAsync(
                    to,
                    self.stream.context().cu_ctx(),
                    from,
                    src_owner.context().cu_ctx(),
                    bytes,
                    self.stream.cu_stream(),
                )
                .result()
            }
        }
        .map_err(|e| driver_err("device copy", e))
    }

    /// Copies `len` elements of pinned host memory from element `src_at` into `dst` from
    /// element `dst_at`, asynchronously on this handle's stream (the host is not blocked; the
    /// pinned buffer's [`as_mut_slice`](PinnedBuffer::as_mut_slice) waits for the copy).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if a range leaves its buffer.
    pub fn copy_from_pinned<T: bytemuck::Pod>(
        &self,
        src: &PinnedBuffer<T>,
        src_at: usize,
        dst: &mut DeviceBuffer<T>,
        dst_at: usize,
        len: usize,
    ) -> Result<()> {
        let fits = |at: usize, total: usize| at.checked_add(len).is_some_and(|end| end <= total);
        if !fits(src_at, src.len) || !fits(dst_at, dst.len) {
            return Err(Error::invalid(format!(
                "copy of {len} pinned elements from {src_at} of {} to {dst_at} of {}",
                src.len, dst.len
            )));
        }
        if len == 0 {
            return Ok(());
        }
        self.before_write(dst)?;
        let size = std::mem::size_of::<T>();
        // SAFETY: the slice is used only by this stream's copy below, ordered after the buffer's
        // last copy (`pinned_before`) and recorded as its last (`pinned_after`), which the host
        // accessors and the drop wait for (cudarc's `_record` is inert with tracking off).
        let pending = pinned_before(&src.pending, &self.stream)?;
        let (host, _record) = unsafe { src.bytes.stream_synced_slice(&self.stream) };
        let from = &host[src_at * size..(src_at + len) * size];
        let (to, _w) = dst.bytes.device_ptr_mut(&self.stream);
        // SAFETY: `from` is pinned host memory of `len` elements that stays allocated and
        // unwritten until the copy is done (the event above; the buffer's drop waits for
        // it); [to + dst_at, + len) lies in `dst`, ordered for this stream.
        unsafe {
            drv_result::memcpy_htod_async(
                to + (dst_at * size) as u64,
                from,
                self.stream.cu_stream(),
            )
        }
        .map_err(|e| driver_err("copy from pinned memory", e))?;
        pinned_after(pending, &self.stream)
    }

    /// Copies `len` elements of `src` from element `src_at` into pinned host memory from
    /// element `dst_at`, asynchronously on this handle's stream (read them with
    /// [`PinnedBuffer::as_slice`], which waits for the copy).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if a range leaves its buffer.
    pub fn copy_to_pinned<T: bytemuck::Pod>(
        &self,
        src: &DeviceBuffer<T>,
        src_at: usize,
        dst: &mut PinnedBuffer<T>,
        dst_at: usize,
        len: usize,
    ) -> Result<()> {
        let fits = |at: usize, total: usize| at.checked_add(len).is_some_and(|end| end <= total);
        if !fits(src_at, src.len) || !fits(dst_at, dst.len) {
            return Err(Error::invalid(format!(
                "copy of {len} device elements from {src_at} of {} to pinned {dst_at} of {}",
                src.len, dst.len
            )));
        }
        if len == 0 {
            return Ok(());
        }
        self.before_read(src)?;
        let size = std::mem::size_of::<T>();
        let (from, _r) = src.bytes.device_ptr(&self.stream);
        // SAFETY: as in `copy_from_pinned`: the slice is written only by this stream's copy,
        // and the pinned buffer's accessors and drop wait for the recorded event.
        let pending = pinned_before(&dst.pending, &self.stream)?;
        let (host, _record) = unsafe { dst.bytes.stream_synced_mut_slice(&self.stream) };
        let to = &mut host[dst_at * size..(dst_at + len) * size];
        // SAFETY: [from + src_at, + len) lies in `src`, ordered for this stream; `to` is
        // pinned memory of that many bytes that nothing else touches until the copy is done.
        unsafe {
            drv_result::memcpy_dtoh_async(
                to,
                from + (src_at * size) as u64,
                self.stream.cu_stream(),
            )
        }
        .map_err(|e| driver_err("copy to pinned memory", e))?;
        pinned_after(pending, &self.stream)
    }

    /// Whether all of `data` lies in one allocation of page-locked host memory that the driver
    /// knows: memory from `cuMemHostAlloc` (a [`PinnedBuffer`]'s, or a `cudaHostAlloc` of
    /// another library in this process) or registered with `cuMemHostRegister`. The copy engines
    /// read and write such memory directly, at the bus's speed, while the host goes on; other
    /// host memory goes through a staging buffer (see [`Gpu::copy_to_device_async`]).
    pub fn is_page_locked<T>(&self, data: &[T]) -> bool {
        if data.is_empty() || self.dev.ctx.bind_to_thread().is_err() {
            return false;
        }
        let start = data.as_ptr() as drv_sys::CUdeviceptr;
        let mut kind: u32 = 0;
        let mut base: drv_sys::CUdeviceptr = 0;
        let mut size: usize = 0;
        use drv_sys::CUpointer_attribute as A;
        let mut what = [
            A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            A::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
            A::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        ];
        let mut out: [*mut std::ffi::c_void; 3] = [
            (&mut kind as *mut u32).cast(),
            (&mut base as *mut u64).cast(),
            (&mut size as *mut usize).cast(),
        ];
        // SAFETY: three attributes and three pointers to locals of their types (CUmemorytype:
        // a 32-bit enum; range start: a CUdeviceptr; range size: a size_t); the context is
        // current (bound above). Unlike cuPointerGetAttribute, the plural form answers memory
        // the driver does not know (pageable) with zeros, not an error that sanitizers report.
        let r = unsafe {
            drv_sys::cuPointerGetAttributes(3, what.as_mut_ptr(), out.as_mut_ptr(), start)
        };
        r == drv_sys::cudaError_enum::CUDA_SUCCESS
            && kind == drv_sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32
            && start + std::mem::size_of_val(data) as u64 <= base + size as u64
    }

    /// Enqueues a copy of the host slice `src` into `dst` from element `at` on this handle's
    /// stream and returns without waiting for it. From page-locked memory
    /// ([`Gpu::is_page_locked`]) the copy engine reads `src` while the host goes on; from other
    /// memory the driver stages it before returning.
    ///
    /// # Safety
    /// `src` must stay allocated and unchanged until the copy is done: synchronize this stream
    /// (or a stream that waited for it) before the borrow of `src` ends, on every path out.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if `src` does not fit in `dst` from `at`.
    pub unsafe fn copy_to_device_async<T: bytemuck::Pod>(
        &self,
        src: &[T],
        dst: &mut DeviceBuffer<T>,
        at: usize,
    ) -> Result<()> {
        if at.checked_add(src.len()).is_none_or(|end| end > dst.len) {
            return Err(Error::invalid(format!(
                "copy of {} elements to element {at} of a device buffer of {}",
                src.len(),
                dst.len
            )));
        }
        if src.is_empty() {
            return Ok(());
        }
        self.before_write(dst)?;
        let size = std::mem::size_of::<T>();
        let (to, _w) = dst.bytes.device_ptr_mut(&self.stream);
        // SAFETY: [to + at, + src.len()) lies in `dst`, ordered for this stream; `src` stays
        // allocated and unchanged until the copy is done (this function's contract).
        unsafe {
            drv_result::memcpy_htod_async(to + (at * size) as u64, src, self.stream.cu_stream())
        }
        .map_err(|e| driver_err("copy to device", e))
    }

    /// A read-only view of elements `range` of `buf`, belonging to this handle's stream: pass it
    /// wherever a `&DeviceBuffer` is read (`&*view`), with no copy. This stream first waits for
    /// `buf`'s last write; `buf`'s next write and its free wait for this stream (and, through
    /// it, for every stream that used the view).
    ///
    /// `buf` may be on another GPU that this one reaches through peer access
    /// ([`Gpu::enable_peer_access`]): kernels launched here then read it in place, over the
    /// link (what a sharded table's shards do with the parts other GPUs split for them).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if `range` leaves `buf`, or `buf` is on a GPU this one does not
    /// reach.
    pub fn view<'a, T: bytemuck::Pod>(
        &self,
        buf: &'a DeviceBuffer<T>,
        range: std::ops::Range<usize>,
    ) -> Result<BufferView<'a, T>> {
        check_view_range(&range, buf.len)?;
        let owner = buf.bytes.stream();
        stream::check_reachable(owner, &self.stream, "a device buffer")?;
        buf.uses.before_read(owner, &self.stream)?;
        Ok(BufferView {
            buf: self.view_of(buf, range, None),
            _parent: PhantomData,
        })
    }

    /// Writable views of disjoint `ranges` of `buf`, view `i` belonging to the stream of
    /// `on[i]`: several streams write their parts of one buffer at once, with no copy. Each
    /// view's stream first waits for every earlier use of `buf`; dropping a view makes `buf`'s
    /// own stream wait for the view's stream, so `buf`'s later uses and its free come after
    /// everything done through the views. A handle may be of another GPU that reaches `buf`'s
    /// through peer access (as for [`Gpu::view`]): its kernels write the view over the link.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if the ranges overlap or leave `buf`, `on` differs in length
    /// from `ranges`, or a handle is of a GPU that does not reach `buf`'s.
    pub fn views_mut<'a, T: bytemuck::Pod>(
        buf: &'a mut DeviceBuffer<T>,
        ranges: &[std::ops::Range<usize>],
        on: &[&Gpu],
    ) -> Result<Vec<BufferViewMut<'a, T>>> {
        if ranges.len() != on.len() {
            return Err(Error::invalid(format!(
                "{} views on {} stream handles",
                ranges.len(),
                on.len()
            )));
        }
        let mut sorted: Vec<&std::ops::Range<usize>> = ranges.iter().collect();
        sorted.sort_by_key(|r| r.start);
        for r in &sorted {
            check_view_range(r, buf.len)?;
        }
        if sorted.windows(2).any(|w| w[0].end > w[1].start) {
            return Err(Error::invalid("writable views of overlapping ranges"));
        }
        let owner = buf.bytes.stream().clone();
        for g in on {
            stream::check_reachable(&owner, &g.stream, "a device buffer")?;
        }
        // The owner's stream waits for every foreign use so far; each view's stream then
        // waits for the owner's, and the owner's for each view's when it is dropped.
        buf.uses.before_write(&owner, &owner)?;
        let mut views = Vec::with_capacity(ranges.len());
        for (r, g) in ranges.iter().zip(on) {
            stream::join(&g.stream, &owner)?;
            views.push(BufferViewMut {
                buf: g.view_of(buf, r.clone(), Some(owner.clone())),
                _parent: PhantomData,
            });
        }
        Ok(views)
    }

    /// The view's buffer: elements `range` of `buf`, on this handle's stream (not freed).
    fn view_of<T: bytemuck::Pod>(
        &self,
        buf: &DeviceBuffer<T>,
        range: std::ops::Range<usize>,
        parent: Option<Arc<CudaStream>>,
    ) -> DeviceBuffer<T> {
        let size = std::mem::size_of::<T>();
        let (base, _sync) = buf.bytes.device_ptr(&self.stream);
        let len = range.end - range.start;
        // SAFETY: the address range lies inside `buf`'s allocation (checked by the callers),
        // which outlives the view (the view borrows `buf`); the slice is never freed (the
        // view's drop lets it go with `leak`), and event tracking is off, so making it creates
        // no events.
        let slice = unsafe {
            self.stream
                .upgrade_device_ptr::<u8>(base + (range.start * size) as u64, (len * size).max(1))
        };
        DeviceBuffer {
            bytes: ManuallyDrop::new(slice),
            len,
            uses: Uses::default(),
            parent,
            view: true,
            _t: PhantomData,
        }
    }

    /// Orders a read of `buf` on this handle's stream (see the module docs).
    fn before_read<T>(&self, buf: &DeviceBuffer<T>) -> Result<()> {
        let owner = buf.bytes.stream();
        stream::check_same_gpu(owner, &self.stream, "a device buffer")?;
        buf.uses.before_read(owner, &self.stream)
    }

    /// Orders a write of `buf` on this handle's stream (see the module docs).
    fn before_write<T>(&self, buf: &mut DeviceBuffer<T>) -> Result<()> {
        let owner = buf.bytes.stream();
        stream::check_same_gpu(owner, &self.stream, "a device buffer")?;
        buf.uses.before_write(owner, &self.stream)
    }

    /// Allocates `len` elements of page-locked host memory (for fast and asynchronous copies).
    pub fn alloc_pinned<T: bytemuck::Pod>(&self, len: usize) -> Result<PinnedBuffer<T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::invalid("pinned allocation overflows"))?;
        // SAFETY: plain (not write-combined) page-locked memory, zeroed below before any read.
        let mut slice = unsafe { self.dev.ctx.alloc_pinned_with_flags::<u8>(bytes.max(1), 0) }
            .map_err(|e| driver_err("allocating pinned host memory", e))?;
        slice
            .as_mut_slice()
            .map_err(|e| driver_err("pinned memory", e))?
            .fill(0);
        Ok(PinnedBuffer {
            bytes: slice,
            len,
            pending: Mutex::new(None),
            _t: PhantomData,
        })
    }

    /// Allocates `len` elements of page-locked host memory mapped into the GPU's address space
    /// (`cuMemHostAlloc` with `DEVICEMAP | PORTABLE`), zeroed. Kernels read and write it over
    /// the bus, at its [`MappedBuffer::device_address`]: for tables larger than device memory.
    /// The same as [`alloc_mapped_with`](Self::alloc_mapped_with)`(len, HostPages::Pinned)`.
    pub fn alloc_mapped<T: bytemuck::Pod>(&self, len: usize) -> Result<MappedBuffer<T>> {
        self.alloc_mapped_with(len, HostPages::Pinned)
    }

    /// Allocates `len` elements of zeroed host memory mapped into the GPU's address space, of
    /// the given page kind ([`HostPages`]): `cuMemHostAlloc` for [`HostPages::Pinned`]; for
    /// [`HostPages::Huge`], an anonymous `mmap` aligned to 2 MiB, `madvise(MADV_HUGEPAGE)`,
    /// every page touched, then `cuMemHostRegister` (`DEVICEMAP | PORTABLE`). Errors, never
    /// panics: [`Error::InvalidInput`] for a size that overflows, [`Error::Unsupported`] when
    /// the kernel refuses the huge-page advice, [`Error::OutOfMemory`] / [`Error::Driver`] when
    /// the memory cannot be had or pinned.
    pub fn alloc_mapped_with<T: bytemuck::Pod>(
        &self,
        len: usize,
        pages: HostPages,
    ) -> Result<MappedBuffer<T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .filter(|&b| b < isize::MAX as usize / 2)
            .ok_or_else(|| {
                Error::invalid(format!("mapped allocation of {len} elements overflows"))
            })?;
        let (backing, host) = match pages {
            HostPages::Pinned => {
                let flags = drv_sys::CU_MEMHOSTALLOC_DEVICEMAP | drv_sys::CU_MEMHOSTALLOC_PORTABLE;
                // SAFETY: the memory is uninitialised until the fill below, and nothing reads it
                // before.
                let mut slice = unsafe {
                    self.dev
                        .ctx
                        .alloc_pinned_with_flags::<u8>(bytes.max(1), flags)
                }
                .map_err(|e| host_oom(driver_err("allocating mapped host memory", e), bytes))?;
                parallel_zero(
                    slice
                        .as_mut_slice()
                        .map_err(|e| driver_err("mapped host memory", e))?,
                );
                let host = slice
                    .as_mut_ptr()
                    .map_err(|e| driver_err("mapped host memory", e))?;
                (Backing::Pinned(slice), host)
            }
            HostPages::Huge => {
                let region = huge::Region::new(bytes.max(1))?;
                self.dev
                    .ctx
                    .bind_to_thread()
                    .map_err(|e| driver_err("binding the context", e))?;
                let flags =
                    drv_sys::CU_MEMHOSTREGISTER_DEVICEMAP | drv_sys::CU_MEMHOSTREGISTER_PORTABLE;
                // SAFETY: the region is a live, page-aligned mapping of `region.len` bytes owned
                // by `region`, which is unregistered (Registered's drop) before it is unmapped;
                // the context is current on this thread (bound above).
                unsafe { drv_sys::cuMemHostRegister_v2(region.ptr().cast(), region.len(), flags) }
                    .result()
                    .map_err(|e| {
                        host_oom(driver_err("registering host memory with CUDA", e), bytes)
                    })?;
                let host = region.ptr();
                (
                    Backing::Registered(Registered {
                        region,
                        ctx: self.dev.ctx.clone(),
                    }),
                    host,
                )
            }
        };
        let mut device_ptr: drv_sys::CUdeviceptr = 0;
        // SAFETY: `host` is the start of a live allocation made with CU_MEMHOSTALLOC_DEVICEMAP
        // (or registered with CU_MEMHOSTREGISTER_DEVICEMAP) in this context, which the calls
        // above bound to this thread; flags must be 0.
        unsafe { drv_sys::cuMemHostGetDevicePointer_v2(&mut device_ptr, host.cast(), 0) }
            .result()
            .map_err(|e| driver_err("mapping host memory into the GPU", e))?;
        Ok(MappedBuffer {
            backing,
            host: host as usize,
            device_ptr,
            len,
            pages,
            stream: self.stream.clone(),
            users: StreamSet::default(),
            _t: PhantomData,
        })
    }

    /// How many blocks of `block_size` threads (and no dynamic shared memory) of `kernel` one
    /// multiprocessor runs at once: a grid that fits the GPU in one wave is this times
    /// [`Gpu::sm_count`].
    pub fn max_active_blocks_per_sm(&self, kernel: &Kernel, block_size: u32) -> Result<u32> {
        self.max_active_blocks_per_sm_with(kernel, block_size, 0)
    }

    /// The same for blocks that take `shared_bytes` of dynamic shared memory each.
    pub fn max_active_blocks_per_sm_with(
        &self,
        kernel: &Kernel,
        block_size: u32,
        shared_bytes: u32,
    ) -> Result<u32> {
        // The driver call needs this context current on the calling thread.
        self.dev
            .ctx
            .bind_to_thread()
            .map_err(|e| driver_err("binding the context", e))?;
        kernel
            .func
            .occupancy_max_active_blocks_per_multiprocessor(block_size, shared_bytes as usize, None)
            .map_err(|e| driver_err(&format!("occupancy of {}", kernel.name), e))
    }

    /// Loads (compiling or reading the caches as needed) a kernel module specialisation.
    pub fn module(&self, source: &KernelSource) -> Result<Module> {
        let start = Instant::now();
        let label = source.label();
        // The kernel text is fixed for the process, so a module once loaded is found again by
        // its file and defines, without building and hashing its ~70 KB of text first (~0.13 ms
        // a lookup: on the critical path of each split, whose kernels the GPU waits for at a
        // batch's start). Under WARPMAP_KERNEL_DIR too, keyed by the directory: its files are
        // read once a process (edit them between runs, not during one), so that variants and
        // the embedded kernels pay the same host cost in an A/B (without the memo the variants
        // ran 3-4 % slower at 2^27 u64 pairs on an H200: bench/NOTES.md, session AI).
        let memo = match std::env::var_os("WARPMAP_KERNEL_DIR") {
            None => format!("embedded {} {label}", source.file.path),
            Some(dir) => format!("dir {} {} {label}", dir.to_string_lossy(), source.file.path),
        };
        if let Some(m) = self
            .dev
            .modules
            .lock()
            .ok()
            .and_then(|m| m.get(&memo).cloned())
        {
            return Ok(Module {
                inner: m,
                stream: self.stream.clone(),
                label,
            });
        }
        let text = source.text();
        let options = source.options();
        let nv = nvrtc()?;
        let key = cache::key(&text, &options, self.sm(), nv.version);
        let arch = format!("sm_{}", self.sm());
        if let Some(m) = self.dev.modules.lock().ok().and_then(|mut m| {
            let inner = m.get(&key).cloned()?;
            m.insert(memo.clone(), inner.clone());
            Some(inner)
        }) {
            return Ok(Module {
                inner: m,
                stream: self.stream.clone(),
                label,
            });
        }
        let (cubin, from) = match cache::load(&key) {
            Some(c) => (c, "disk"),
            None => {
                let c = compile_cubin(&text, source.module, self.sm(), &options)?;
                cache::store(&key, &c);
                (c, "nvrtc")
            }
        };
        let inner = self
            .dev
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .map_err(|e| driver_err(&format!("loading module {label}"), e))?;
        if let Ok(mut m) = self.dev.modules.lock() {
            m.insert(key, inner.clone());
            m.insert(memo, inner.clone());
        }
        let ms = start.elapsed().as_secs_f64() * 1e3;
        if std::env::var_os("WARPMAP_LOG").is_some() {
            eprintln!("warpmap: module {label} for {arch} from {from} in {ms:.1} ms");
        }
        if let Ok(mut r) = compile_records().lock() {
            r.push(CompileRecord {
                module: label.clone(),
                arch,
                source: from,
                ms,
            });
        }
        Ok(Module {
            inner,
            stream: self.stream.clone(),
            label,
        })
    }

    /// A pair of timing events on this GPU's stream.
    pub fn timer(&self) -> Result<Timer> {
        let ev = || {
            self.dev
                .ctx
                .new_event(Some(drv_sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| driver_err("creating an event", e))
        };
        Ok(Timer {
            start: ev()?,
            stop: ev()?,
            stream: self.stream.clone(),
        })
    }
}

/// A loaded kernel module.
pub struct Module {
    inner: Arc<CudaModule>,
    stream: Arc<CudaStream>,
    label: String,
}

impl Module {
    /// The `extern "C"` kernel `name` of this module.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let func = self
            .inner
            .load_function(name)
            .map_err(|e| driver_err(&format!("finding kernel {name} in {}", self.label), e))?;
        Ok(Kernel {
            func,
            stream: self.stream.clone(),
            name: name.to_string(),
        })
    }
}

/// One kernel, bound to its GPU's stream.
#[derive(Clone)]
pub struct Kernel {
    func: CudaFunction,
    stream: Arc<CudaStream>,
    name: String,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({})", self.name)
    }
}

impl Kernel {
    /// Starts a launch; push the arguments in the kernel's parameter order, then [`Launch::run`].
    pub fn launch(&self) -> Launch<'_> {
        Launch {
            args: self.stream.launch_builder(&self.func),
            stream: &self.stream,
            name: &self.name,
            error: None,
        }
    }
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Lets launches of this kernel take up to `bytes` of dynamic shared memory per block
    /// (beyond the default 48 KiB; at most [`Gpu::shared_per_block_optin`]).
    pub fn allow_shared(&self, bytes: u32) -> Result<()> {
        self.stream
            .context()
            .bind_to_thread()
            .map_err(|e| driver_err("binding the context", e))?;
        self.func
            .set_attribute(
                drv_sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
            .map_err(|e| {
                driver_err(
                    &format!("allowing {bytes} bytes of shared memory to {}", self.name),
                    e,
                )
            })
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A scalar kernel argument type.
pub trait Scalar: cudarc::driver::DeviceRepr + sealed::Sealed {}
macro_rules! scalars { ($($t:ty),*) => {$( impl sealed::Sealed for $t {} impl Scalar for $t {} )*}; }
scalars!(u8, u32, i32, u64, i64, f32, f64);

/// A `#[repr(C)]` struct that a kernel takes by value (a table's device view, a batch's
/// arguments): its bytes are copied into the kernel's parameter space at launch.
///
/// # Safety
/// The type must be `#[repr(C)]` (or `#[repr(transparent)]`) over plain data (integers, device
/// addresses as `u64`), with the exact layout of the kernel parameter it is passed as. The
/// engine checks the size at compile time of the kernel (`WM_VIEW_BYTES`, `WM_BULK_BYTES`).
pub unsafe trait KernelArg: Copy + Send + Sync + 'static {}

/// A [`KernelArg`] as cudarc sees it.
#[repr(transparent)]
struct ByValue<T>(T);

// SAFETY: a KernelArg is plain `#[repr(C)]` data laid out as the kernel's parameter (the
// KernelArg contract); `ByValue` is transparent over it, so its address is the parameter's bytes.
unsafe impl<T: KernelArg> cudarc::driver::DeviceRepr for ByValue<T> {}

/// The arguments of one kernel launch.
///
/// Buffers pushed here are ordered for the launch's stream as they are pushed (a buffer of
/// another stream of the same GPU: the launch waits for its allocation and earlier uses, and its
/// free waits for the launch; see the [module docs](self)). A buffer that cannot be used here (of
/// another GPU) makes [`Launch::run`] fail without launching.
pub struct Launch<'a> {
    args: LaunchArgs<'a>,
    stream: &'a Arc<CudaStream>,
    name: &'a str,
    /// The first ordering failure of a pushed buffer, reported by `run`.
    error: Option<Error>,
}

/// Whether each kernel launch prints the host time of the driver's launch call
/// (`WARPMAP_TRACE_LAUNCH`, for measurements: what a launch costs the host beyond it).
fn trace_launches() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("WARPMAP_TRACE_LAUNCH").is_ok_and(|v| !v.is_empty() && v != "0")
    })
}

/// The device address a kernel sees for a missing optional array ([`Launch::opt_buf`]).
static NULL_ADDRESS: u64 = 0;

impl<'a> Launch<'a> {
    fn keep(&mut self, r: Result<()>) {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }
    /// Pushes a device buffer (the kernel sees a pointer to its first element).
    pub fn buf<T: bytemuck::Pod>(&mut self, b: &'a DeviceBuffer<T>) -> &mut Self {
        self.reads(b);
        self.args.arg(&*b.bytes);
        self
    }
    /// Pushes a device buffer, or a null pointer where there is none (a kernel's optional
    /// array, which it does not touch when null).
    pub fn opt_buf<T: bytemuck::Pod>(&mut self, b: Option<&'a DeviceBuffer<T>>) -> &mut Self {
        match b {
            Some(b) => self.buf(b),
            None => self.arg(&NULL_ADDRESS),
        }
    }
    /// Pushes a device buffer the kernel writes, or a null pointer where there is none.
    pub fn opt_buf_mut<T: bytemuck::Pod>(
        &mut self,
        b: Option<&'a mut DeviceBuffer<T>>,
    ) -> &mut Self {
        match b {
            Some(b) => self.buf_mut(b),
            None => self.arg(&NULL_ADDRESS),
        }
    }
    /// Pushes a device buffer the kernel writes.
    pub fn buf_mut<T: bytemuck::Pod>(&mut self, b: &'a mut DeviceBuffer<T>) -> &mut Self {
        let DeviceBuffer { bytes, uses, .. } = b;
        let owner = bytes.stream();
        let r = stream::check_same_gpu(owner, self.stream, "a device buffer")
            .and_then(|_| uses.before_write(owner, self.stream));
        self.keep(r);
        self.args.arg(&**bytes);
        self
    }
    /// Pushes mapped host memory (the kernel sees a pointer to its first element; the kernel
    /// may read and write it, like a [`buf_mut`](Self::buf_mut)).
    pub fn mapped<T: bytemuck::Pod>(&mut self, b: &'a MappedBuffer<T>) -> &mut Self {
        let r = stream::check_same_gpu(&b.stream, self.stream, "mapped host memory")
            .and_then(|_| b.users.before_use(&b.stream, self.stream));
        self.keep(r);
        self.args.arg(&b.device_ptr);
        self
    }
    /// Orders for this launch a buffer that the kernel reads through an address inside a
    /// struct argument ([`value`](Self::value)), as [`buf`](Self::buf) does for a pushed one.
    pub fn reads<T: bytemuck::Pod>(&mut self, b: &'a DeviceBuffer<T>) -> &mut Self {
        let owner = b.bytes.stream();
        let r = stream::check_same_gpu(owner, self.stream, "a device buffer")
            .and_then(|_| b.uses.before_read(owner, self.stream));
        self.keep(r);
        self
    }
    /// Orders for this launch a buffer that the kernel writes through an address inside a
    /// struct argument, as [`buf_mut`](Self::buf_mut) does for a pushed one.
    pub fn writes<T: bytemuck::Pod>(&mut self, b: &'a mut DeviceBuffer<T>) -> &mut Self {
        let DeviceBuffer { bytes, uses, .. } = b;
        let owner = bytes.stream();
        let r = stream::check_same_gpu(owner, self.stream, "a device buffer")
            .and_then(|_| uses.before_write(owner, self.stream));
        self.keep(r);
        self
    }
    /// Pushes a scalar by value.
    pub fn arg<T: Scalar>(&mut self, v: &'a T) -> &mut Self {
        self.args.arg(v);
        self
    }
    /// Pushes a struct by value (a table's device view, a batch's arguments).
    pub fn value<T: KernelArg>(&mut self, v: &'a T) -> &mut Self {
        // SAFETY: ByValue<T> is #[repr(transparent)] over T, so the cast keeps address, size and
        // alignment, and the reference keeps v's lifetime.
        let v: &'a ByValue<T> = unsafe { &*(v as *const T as *const ByValue<T>) };
        self.args.arg(v);
        self
    }
    /// Launches `grid × block` threads (asynchronous).
    ///
    /// # Safety
    /// The pushed arguments must match the kernel's parameters in number, order and type, and
    /// the kernel must stay within the buffers it is given. (Ordering against other streams
    /// is not the caller's concern: the pushed buffers arranged it.)
    pub unsafe fn run(&mut self, grid: u32, block: u32, shared_bytes: u32) -> Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if grid == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: shared_bytes,
        };
        let traced = trace_launches().then(std::time::Instant::now);
        // SAFETY: argument types and bounds are forwarded to the caller (see # Safety). The
        // memory stays valid and ordered for the kernel: each buffer pushed was ordered for
        // this stream when pushed (its allocation and earlier uses on other streams come
        // first; a use on a stream not its own is recorded, so its free, whichever stream the
        // buffer belongs to, waits for this launch), and the borrows in `args` keep the
        // buffers alive until the launch is enqueued.
        let r = unsafe { self.args.launch(cfg) }
            .map(|_| ())
            .map_err(|e| driver_err(&format!("launching {}", self.name), e));
        if let Some(t) = traced {
            eprintln!(
                "warpmap launch {}: {:.1} us in the driver's launch",
                self.name,
                t.elapsed().as_secs_f64() * 1e6
            );
        }
        r
    }
}

/// A typed buffer in device memory (bytes underneath, so any `Pod` type fits).
///
/// It belongs to the stream of the [`Gpu`] handle that allocated it: allocated and freed
/// (stream-ordered) there. It may be used on any other handle of the same GPU ([`Launch::buf`],
/// the copy methods): such a use waits for the allocation and earlier writes (and a write for
/// earlier reads) on other streams, and dropping the buffer waits, on its own stream, for every
/// other stream that used it. Nothing of this costs anything while only its own stream uses it.
pub struct DeviceBuffer<T> {
    /// Taken out (freed, or for a view let go) only in `drop`.
    bytes: ManuallyDrop<CudaSlice<u8>>,
    len: usize,
    /// Uses on streams other than the owner's (see `stream::Uses`).
    uses: Uses,
    /// For a view ([`BufferViewMut`]): the stream of the buffer it is part of, which waits
    /// for this view's stream when the view is dropped (and nothing is freed).
    parent: Option<Arc<CudaStream>>,
    /// Whether this is a view (its memory belongs to another buffer).
    view: bool,
    _t: PhantomData<T>,
}

impl<T> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        // The free (cudarc's drop of `bytes`, below) is enqueued on the owner's stream; make
        // that stream wait for every other stream that used the buffer first.
        self.uses.before_free(self.bytes.stream());
        // SAFETY: `bytes` is taken once, here, and not touched again.
        let bytes = unsafe { ManuallyDrop::take(&mut self.bytes) };
        if !self.view {
            return drop(bytes);
        }
        if let Some(parent) = &self.parent {
            // The parent's later uses and its free are ordered after its own stream, which
            // now waits for everything this view's stream did (errors: see `before_free`).
            let _ = stream::join(parent, bytes.stream());
        }
        // A view's memory is its parent's: let the slice go without freeing it.
        let _ = bytes.leak();
    }
}

/// A read-only view of a range of a [`DeviceBuffer`], made by [`Gpu::view`]: it is a
/// `DeviceBuffer` (through `Deref`) that belongs to the stream of the handle that made it, so
/// a table or a kernel can read part of a buffer without a copy.
pub struct BufferView<'a, T> {
    buf: DeviceBuffer<T>,
    _parent: PhantomData<&'a DeviceBuffer<T>>,
}

/// A writable view of a range of a [`DeviceBuffer`], made by [`Gpu::views_mut`] (several
/// disjoint ranges of one buffer at once, each on its own stream).
pub struct BufferViewMut<'a, T> {
    buf: DeviceBuffer<T>,
    _parent: PhantomData<&'a mut DeviceBuffer<T>>,
}

impl<T> std::ops::Deref for BufferView<'_, T> {
    type Target = DeviceBuffer<T>;
    fn deref(&self) -> &DeviceBuffer<T> {
        &self.buf
    }
}
impl<T> std::ops::Deref for BufferViewMut<'_, T> {
    type Target = DeviceBuffer<T>;
    fn deref(&self) -> &DeviceBuffer<T> {
        &self.buf
    }
}
impl<T> std::ops::DerefMut for BufferViewMut<'_, T> {
    fn deref_mut(&mut self) -> &mut DeviceBuffer<T> {
        &mut self.buf
    }
}

impl<T> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceBuffer<{}>[{}]",
            std::any::type_name::<T>(),
            self.len
        )
    }
}

impl<T: bytemuck::Pod> DeviceBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Size in bytes.
    pub fn num_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }
    /// The device address (for diagnostics).
    pub fn device_address(&self) -> u64 {
        let (p, _sync) = self.bytes.device_ptr(self.bytes.stream());
        p
    }
}

/// One piece of an exchange between buffers of several GPUs: `len` elements from element
/// `from_at` of send buffer `from` to element `to_at` of receive buffer `to` (indices into the
/// buffer lists of the call that carries it: `nccl::Communicator::transfer` (feature `nccl`), or a copy per
/// piece with [`Gpu::copy_range`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    /// The send buffer.
    pub from: usize,
    /// Its first element sent.
    pub from_at: u64,
    /// The receive buffer.
    pub to: usize,
    /// Where the piece lands in it.
    pub to_at: u64,
    /// Elements moved.
    pub len: u64,
}

fn check_view_range(range: &std::ops::Range<usize>, len: usize) -> Result<()> {
    if range.start > range.end || range.end > len {
        return Err(Error::invalid(format!(
            "view of elements {range:?} of a device buffer of {len}"
        )));
    }
    Ok(())
}

/// Page-locked host memory.
pub struct PinnedBuffer<T> {
    bytes: PinnedHostSlice<u8>,
    len: usize,
    /// The last asynchronous copy into or out of it ([`Gpu::copy_from_pinned`],
    /// [`Gpu::copy_to_pinned`]): the host accessors, the next copy and the drop wait for it.
    /// (cudarc's own event of the slice is recorded only with its event tracking, which the
    /// device layer turns off.)
    pending: Mutex<Option<CudaEvent>>,
    _t: PhantomData<T>,
}

type Pending<'a> = std::sync::MutexGuard<'a, Option<CudaEvent>>;

/// Locks a pinned buffer's copy record and makes `stream` wait for its last copy.
fn pinned_before<'a>(
    pending: &'a Mutex<Option<CudaEvent>>,
    stream: &CudaStream,
) -> Result<Pending<'a>> {
    let p = pending
        .lock()
        .map_err(|_| Error::invalid("a pinned buffer's copy record was poisoned by a panic"))?;
    if let Some(e) = p.as_ref() {
        stream
            .wait(e)
            .map_err(|e| driver_err("waiting for an event", e))?;
    }
    Ok(p)
}

/// Records the copy just enqueued on `stream` as the buffer's last.
fn pinned_after(mut p: Pending<'_>, stream: &CudaStream) -> Result<()> {
    *p = Some(
        stream
            .record_event(None)
            .map_err(|e| driver_err("recording an event", e))?,
    );
    Ok(())
}

impl<T> PinnedBuffer<T> {
    /// Waits on the host for the last copy.
    fn settle(&self) -> Result<()> {
        let mut p = self
            .pending
            .lock()
            .map_err(|_| Error::invalid("a pinned buffer's copy record was poisoned by a panic"))?;
        if let Some(e) = p.take() {
            e.synchronize()
                .map_err(|e| driver_err("waiting for a copy of pinned memory", e))?;
        }
        Ok(())
    }
}

impl<T> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        // The memory is freed after this: no copy may still use it (errors: see DeviceBuffer).
        let _ = self.settle();
    }
}

impl<T: bytemuck::Pod> PinnedBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The contents (waits for pending copies into it).
    pub fn as_slice(&self) -> Result<&[T]> {
        self.settle()?;
        let b = self
            .bytes
            .as_slice()
            .map_err(|e| driver_err("pinned memory", e))?;
        Ok(bytemuck::cast_slice(
            &b[..self.len * std::mem::size_of::<T>()],
        ))
    }
    /// The contents, writable (waits for pending copies).
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.settle()?;
        let n = self.len * std::mem::size_of::<T>();
        let b = self
            .bytes
            .as_mut_slice()
            .map_err(|e| driver_err("pinned memory", e))?;
        Ok(bytemuck::cast_slice_mut(&mut b[..n]))
    }
}

/// How [`Gpu::alloc_mapped_with`] gets host memory mapped into the GPU.
///
/// Random accesses from a kernel to mapped host memory slow down as the buffer grows (measured on
/// an H200: 0.45 G/s of 8-byte accesses on 64 MiB, 0.04 G/s on 16 GiB), which points at address
/// translation rather than bus bandwidth; 2 MiB pages need 512 times fewer translations than
/// 4 KiB pages. Whether they help is measured by `warpmap hostbound --pages pinned,huge`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum HostPages {
    /// `cuMemHostAlloc(DEVICEMAP | PORTABLE)`: the driver's pinned memory, in the pages the
    /// driver chooses (normally 4 KiB). The default ([`DEFAULT_HOST_PAGES`]).
    #[default]
    Pinned,
    /// An anonymous `mmap` aligned to 2 MiB with `madvise(MADV_HUGEPAGE)` (transparent huge
    /// pages), touched, then pinned and mapped with `cuMemHostRegister(DEVICEMAP | PORTABLE)`.
    /// Whether the kernel grants huge pages depends on its THP setting
    /// ([`transparent_huge_pages`]); [`MappedBuffer::huge_page_bytes`] says what was granted.
    Huge,
}

/// The default [`HostPages`] of out-of-core tables: the driver's pinned pages. Measured on the
/// H100 machine (`warpmap hostbound --pages pinned,huge`, bench/results/2026-11-22-h100-611bb81-
/// hostbound-pinned-vs-huge.json and ...-3b5305d-hostbound-mid-sizes.json): random record writes
/// and reads from a kernel ran 4-20 % slower on huge pages at 0.125-0.5 GiB (0.49 vs 0.59 G/s
/// writes at 0.3125 GiB), within 4 % of pinned pages at 64 MiB and 1-16 GiB, while making the
/// buffer was 12x faster (0.62 s instead of 7.61 s at 16 GiB; a 90 GiB table in 23.6 s instead
/// of 45.7 s). Rates matter more than a one-time allocation, so huge pages are an option
/// ([`HostPages::Huge`]) for very large tables, not the default.
pub const DEFAULT_HOST_PAGES: HostPages = HostPages::Pinned;

impl HostPages {
    /// Both kinds.
    pub const ALL: [HostPages; 2] = [HostPages::Pinned, HostPages::Huge];

    /// "pinned" or "huge".
    pub fn name(self) -> &'static str {
        match self {
            HostPages::Pinned => "pinned",
            HostPages::Huge => "huge",
        }
    }
}

impl std::fmt::Display for HostPages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for HostPages {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "pinned" | "pin" | "4k" => Ok(HostPages::Pinned),
            "huge" | "thp" | "2m" => Ok(HostPages::Huge),
            other => Err(format!("unknown host page kind '{other}' (pinned or huge)")),
        }
    }
}

/// The kernel's transparent huge page mode: the bracketed word of
/// `/sys/kernel/mm/transparent_hugepage/enabled` (`always`, `madvise` or `never`), or `None`
/// when the file is missing (a kernel without THP) or unreadable.
pub fn transparent_huge_pages() -> Option<String> {
    let text = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    parse_thp_mode(&text)
}

/// The bracketed (selected) word of a THP setting file such as `always [madvise] never`.
pub fn parse_thp_mode(text: &str) -> Option<String> {
    let start = text.find('[')? + 1;
    let end = start + text[start..].find(']')?;
    Some(text[start..end].to_string())
}

/// Bytes of `AnonHugePages` that `/proc/self/smaps` reports for the mappings overlapping
/// `[addr, addr + len)`; `None` when smaps cannot be read.
pub fn anon_huge_page_bytes(addr: usize, len: usize) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/smaps").ok()?;
    Some(parse_smaps_huge(&text, addr, len))
}

/// [`anon_huge_page_bytes`] over the text of an smaps file.
pub fn parse_smaps_huge(smaps: &str, addr: usize, len: usize) -> u64 {
    let (lo, hi) = (addr as u64, addr as u64 + len as u64);
    let mut inside = false;
    let mut total = 0u64;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-') {
            if let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) {
                inside = a < hi && b > lo;
                continue;
            }
        }
        if inside {
            if let Some(rest) = line.strip_prefix("AnonHugePages:") {
                let kb = rest
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
                total += kb * 1024;
            }
        }
    }
    total
}

/// An out-of-memory error from a host allocation of `bytes`, named as such (the driver's
/// CUDA_ERROR_OUT_OF_MEMORY maps to [`Error::OutOfMemory`], which speaks of device memory).
fn host_oom(e: Error, bytes: usize) -> Error {
    match e {
        Error::OutOfMemory { .. } => Error::Driver {
            context: format!("pinning {bytes} bytes of host memory"),
            message: "CUDA_ERROR_OUT_OF_MEMORY: the host cannot pin that much memory".into(),
        },
        other => other,
    }
}

/// Zeroes `b` on all host threads (a 90 GiB table on one thread takes tens of seconds).
fn parallel_zero(b: &mut [u8]) {
    use rayon::prelude::*;
    b.par_chunks_mut(1 << 24).for_each(|c| c.fill(0));
}

/// The host memory behind a [`MappedBuffer`].
enum Backing {
    /// `cuMemHostAlloc`: freed by cudarc.
    Pinned(PinnedHostSlice<u8>),
    /// `mmap` + `cuMemHostRegister`.
    Registered(Registered),
}

/// A registered huge-page region: unregistered, then unmapped, on drop.
struct Registered {
    region: huge::Region,
    ctx: Arc<CudaContext>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        // An error means the context is gone, and the registration with it; the region is
        // unmapped either way (by its own drop, after this).
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: the region was registered with cuMemHostRegister in this context (now
            // current) and no kernel uses it any more (MappedBuffer's drop waited for every
            // stream that used it before this runs).
            let _ = unsafe { drv_sys::cuMemHostUnregister(self.region.ptr().cast()) };
        }
    }
}

mod huge {
    //! An anonymous mapping aligned to 2 MiB with transparent huge pages advised.
    use crate::{Error, Result};

    /// The transparent huge page size on x86-64 and most arm64 kernels.
    pub const HUGE_PAGE: usize = 2 << 20;

    /// A private anonymous read-write mapping, unmapped on drop. The address is kept as an
    /// integer so that the buffer is Send and Sync (the memory is plain bytes).
    pub struct Region {
        addr: usize,
        len: usize,
    }

    fn os_err(what: &str) -> Error {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENOMEM) {
            return Error::Driver {
                context: what.to_string(),
                message: format!("{e}: the host has not that much memory free"),
            };
        }
        Error::Driver {
            context: what.to_string(),
            message: e.to_string(),
        }
    }

    impl Region {
        /// Maps `bytes` (rounded up to 2 MiB) at a 2 MiB boundary, advises huge pages, and
        /// touches every 4 KiB page (in parallel) so that the memory is faulted in, zeroed by
        /// the kernel, before it is pinned.
        pub fn new(bytes: usize) -> Result<Region> {
            let len = bytes
                .checked_next_multiple_of(HUGE_PAGE)
                .filter(|l| *l <= isize::MAX as usize - HUGE_PAGE)
                .ok_or_else(|| Error::invalid(format!("huge-page region of {bytes} bytes")))?;
            let span = len + HUGE_PAGE;
            // SAFETY: a fresh anonymous private mapping (no file, no fixed address) touches no
            // existing memory; the result is checked against MAP_FAILED.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    span,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(os_err(&format!("mmap of {span} bytes")));
            }
            let base = p as usize;
            let addr = base.next_multiple_of(HUGE_PAGE);
            let (head, tail) = (addr - base, span - (addr - base) - len);
            // SAFETY: [base, addr) and [addr + len, base + span) lie inside the mapping just
            // made and outside the part kept; unmapping them leaves [addr, addr + len) mapped.
            unsafe {
                if head > 0 {
                    libc::munmap(base as *mut libc::c_void, head);
                }
                if tail > 0 {
                    libc::munmap((addr + len) as *mut libc::c_void, tail);
                }
            }
            let region = Region { addr, len };
            // SAFETY: [addr, addr + len) is our mapping; madvise changes only its paging policy.
            if unsafe { libc::madvise(addr as *mut libc::c_void, len, libc::MADV_HUGEPAGE) } != 0 {
                let e = std::io::Error::last_os_error();
                return Err(Error::Unsupported(format!(
                    "madvise(MADV_HUGEPAGE) refused ({e}): this kernel has no transparent huge \
                     pages (THP setting: {}); use host pages 'pinned'",
                    super::transparent_huge_pages().unwrap_or_else(|| "absent".into())
                )));
            }
            region.touch();
            Ok(region)
        }

        /// Writes a zero into every 4 KiB page, on all host threads.
        fn touch(&self) {
            use rayon::prelude::*;
            let pages = self.len / HUGE_PAGE;
            let addr = self.addr;
            (0..pages).into_par_iter().for_each(|i| {
                for off in (0..HUGE_PAGE).step_by(4096) {
                    // SAFETY: i * HUGE_PAGE + off < len, inside our read-write mapping; a
                    // volatile write so the page is faulted in even though it stores the zero
                    // already there; no other reference to the memory exists yet.
                    unsafe { std::ptr::write_volatile((addr + i * HUGE_PAGE + off) as *mut u8, 0) };
                }
            });
        }

        /// The start of the region.
        pub fn ptr(&self) -> *mut u8 {
            self.addr as *mut u8
        }
        /// Its length in bytes (a multiple of 2 MiB).
        pub fn len(&self) -> usize {
            self.len
        }
    }

    impl Drop for Region {
        fn drop(&mut self) {
            // SAFETY: [addr, addr + len) is the mapping this Region owns; nothing refers to it
            // after the drop (the CUDA registration is removed before, by Registered's drop).
            unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
        }
    }
}

/// Host memory mapped into the GPU's address space ([`Gpu::alloc_mapped`],
/// [`Gpu::alloc_mapped_with`]): kernels access it directly over the bus, without copies.
/// Dropping it first waits for every stream whose kernels used it, so no kernel still uses it
/// when it is freed.
pub struct MappedBuffer<T> {
    backing: Backing,
    /// The host address of the first element.
    host: usize,
    device_ptr: u64,
    len: usize,
    pages: HostPages,
    /// The stream of the handle that allocated it.
    stream: Arc<CudaStream>,
    /// Other streams whose kernels used it.
    users: StreamSet,
    _t: PhantomData<T>,
}

impl<T: bytemuck::Pod> MappedBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Size in bytes.
    pub fn num_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }
    /// The address kernels use for it.
    pub fn device_address(&self) -> u64 {
        self.device_ptr
    }
    /// The kind of pages it was allocated with.
    pub fn pages(&self) -> HostPages {
        self.pages
    }
    /// Bytes of it that the kernel backs with transparent huge pages now (`AnonHugePages` of
    /// `/proc/self/smaps` over its address range); `None` when smaps cannot be read. Memory
    /// from `cuMemHostAlloc` ([`HostPages::Pinned`]) is usually not anonymous memory and
    /// reports 0.
    pub fn huge_page_bytes(&self) -> Option<u64> {
        anon_huge_page_bytes(self.host, self.num_bytes())
    }
    /// The contents, after waiting for every stream whose kernels used it (they may be writing
    /// it).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.users.synchronize(&self.stream)?;
        let n = self.num_bytes();
        let mut v = vec![T::zeroed(); self.len];
        let dst = bytemuck::cast_slice_mut::<T, u8>(&mut v);
        match &self.backing {
            Backing::Pinned(b) => {
                let b = b
                    .as_slice()
                    .map_err(|e| driver_err("mapped host memory", e))?;
                dst.copy_from_slice(&b[..n]);
            }
            Backing::Registered(r) => {
                // SAFETY: the region holds at least n bytes (it was mapped for them), stays
                // mapped while `self` lives, and no kernel writes it now (every stream that
                // used it is idle).
                let src = unsafe { std::slice::from_raw_parts(r.region.ptr(), n) };
                dst.copy_from_slice(src);
            }
        }
        Ok(v)
    }
}

impl<T> Drop for MappedBuffer<T> {
    fn drop(&mut self) {
        // Kernels enqueued on the streams that used it may still access the memory: wait for
        // them all before it is freed (an error here means the context is gone, and the memory
        // with it). The backing is freed after this (field drop): unregistered and unmapped,
        // or cuMemFreeHost.
        let _ = self.users.synchronize(&self.stream);
    }
}

/// Two CUDA events for timing work on a stream.
pub struct Timer {
    start: CudaEvent,
    stop: CudaEvent,
    stream: Arc<CudaStream>,
}

impl Timer {
    /// Records the start.
    pub fn start(&self) -> Result<()> {
        self.start
            .record(&self.stream)
            .map_err(|e| driver_err("recording an event", e))
    }
    /// Records the stop, waits for it, and returns the milliseconds between the two.
    pub fn stop_ms(&self) -> Result<f64> {
        self.stop
            .record(&self.stream)
            .map_err(|e| driver_err("recording an event", e))?;
        self.stop
            .synchronize()
            .map_err(|e| driver_err("waiting for an event", e))?;
        self.start
            .elapsed_ms(&self.stop)
            .map(|ms| ms as f64)
            .map_err(|e| driver_err("reading an event", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a driver, or with an ordinal past the last GPU, opening a GPU is an error, not a
    /// panic (this runs on every machine).
    #[test]
    fn missing_gpu_is_no_device() {
        match Gpu::new(4096) {
            Err(Error::NoDevice { reason }) => assert!(!reason.is_empty()),
            other => panic!("expected NoDevice, got {other:?}"),
        }
    }

    /// The classification of failures to start a GPU (no GPU needed): only "no GPU" codes
    /// are NoDevice (where the README falls back to the CPU); a present but failing driver is
    /// DriverInit, naming the driver's code and words.
    #[test]
    fn driver_failures_are_not_no_device() {
        use drv_sys::cudaError_enum as C;
        for code in [
            C::CUDA_ERROR_NO_DEVICE,
            C::CUDA_ERROR_INVALID_DEVICE,
            C::CUDA_ERROR_STUB_LIBRARY,
        ] {
            match classify_init_error("cuInit", code, "no CUDA-capable device is detected") {
                Error::NoDevice { reason } => {
                    assert!(reason.contains("cuInit") && reason.contains(&format!("{code:?}")))
                }
                other => panic!("{code:?}: expected NoDevice, got {other:?}"),
            }
        }
        for code in [
            C::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
            C::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
            C::CUDA_ERROR_NOT_INITIALIZED,
            C::CUDA_ERROR_OPERATING_SYSTEM,
            C::CUDA_ERROR_UNKNOWN,
            C::CUDA_ERROR_OUT_OF_MEMORY,
        ] {
            let e = classify_init_error("creating the context of GPU 0", code, "the words");
            match &e {
                Error::DriverInit {
                    context,
                    code: c,
                    message,
                } => {
                    assert_eq!(context, "creating the context of GPU 0");
                    assert_eq!(c, &format!("{code:?}"));
                    assert_eq!(message, "the words");
                }
                other => panic!("{code:?}: expected DriverInit, got {other:?}"),
            }
            let shown = e.to_string();
            assert!(shown.contains(&format!("{code:?}")), "{shown}");
            assert!(shown.contains("present but failed"), "{shown}");
        }
    }

    /// default_gpu keeps the first outcome and gives every caller the same kind of error.
    #[test]
    fn init_failures_keep_their_kind() {
        let nd = InitFailure::from(Error::NoDevice { reason: "r".into() });
        assert!(matches!(nd.to_error(), Error::NoDevice { reason } if reason == "r"));
        let di = InitFailure::from(classify_init_error(
            "cuInit",
            drv_sys::cudaError_enum::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
            "mismatch",
        ));
        assert!(
            matches!(di.to_error(), Error::DriverInit { message, .. } if message == "mismatch")
        );
        // On this machine: whatever default_gpu says, a second call says the same kind.
        let a = Gpu::default_gpu()
            .map(|_| ())
            .map_err(|e| std::mem::discriminant(&e));
        let b = Gpu::default_gpu()
            .map(|_| ())
            .map_err(|e| std::mem::discriminant(&e));
        assert_eq!(a, b);
    }

    #[test]
    fn thp_mode_is_the_bracketed_word() {
        assert_eq!(
            parse_thp_mode("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        assert_eq!(parse_thp_mode("[never]").as_deref(), Some("never"));
        assert_eq!(parse_thp_mode("garbage"), None);
    }

    #[test]
    fn smaps_huge_pages_of_a_range() {
        let smaps = "\
00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/x
Size:                328 kB
AnonHugePages:         0 kB
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Size:               4096 kB
AnonHugePages:      4096 kB
Swap:                  0 kB
7f0000400000-7f0000600000 rw-p 00000000 00:00 0
AnonHugePages:      2048 kB
7f0000600000-7f0000800000 rw-p 00000000 00:00 0
AnonHugePages:      2048 kB
";
        let mib = 1usize << 20;
        let base = 0x7f00_0000_0000usize;
        assert_eq!(parse_smaps_huge(smaps, base, 6 * mib), 6 * mib as u64);
        assert_eq!(
            parse_smaps_huge(smaps, base + 4 * mib, 4 * mib),
            4 * mib as u64
        );
        assert_eq!(parse_smaps_huge(smaps, 0x1000, 4096), 0);
    }

    #[test]
    fn host_pages_parse_and_name() {
        for p in HostPages::ALL {
            assert_eq!(p.name().parse::<HostPages>(), Ok(p));
        }
        assert_eq!("THP".parse::<HostPages>(), Ok(HostPages::Huge));
        assert!("small".parse::<HostPages>().is_err());
        assert_eq!(HostPages::default(), DEFAULT_HOST_PAGES);
    }

    /// The huge-page region on its own (no GPU): aligned, zeroed, writable, unmapped on drop.
    #[test]
    fn huge_region_is_aligned_and_zeroed() {
        match huge::Region::new(3 << 20) {
            Ok(r) => {
                assert_eq!(r.ptr() as usize % huge::HUGE_PAGE, 0);
                assert_eq!(r.len(), 4 << 20);
                // SAFETY: the region is a live read-write mapping of r.len() bytes, ours alone.
                let b = unsafe { std::slice::from_raw_parts_mut(r.ptr(), r.len()) };
                assert!(b.iter().all(|&x| x == 0));
                b[r.len() - 1] = 7;
            }
            // A kernel without THP refuses the advice: an error, not a panic.
            Err(e) => assert!(matches!(e, Error::Unsupported(_)), "{e}"),
        }
    }
}
