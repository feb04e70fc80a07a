//! NCCL (cargo feature `nccl`): a communicator over several GPUs of this process, one rank per
//! [`Gpu`] handle, with a sum all-reduce and the all-to-all exchanges the sharded table needs
//! (fixed-size, and variable-size parts after an exchange of per-peer counts).
//!
//! # Loading
//!
//! NCCL is opened at run time, so building needs no NCCL. cudarc's own loader looks for
//! `libnccl.so` and `libnccl.so.<CUDA major>` by bare name, which misses NCCL's soname
//! (`libnccl.so.2`) and every pip install, and panics when nothing is found. So, like NVRTC
//! ([`nvrtc`](mod@super::nvrtc)), we look for `libnccl.so.2` in the usual places (see
//! [`search_dirs`]), then ask the system loader, and resolve the few entry points we call
//! ourselves; cudarc's `nccl::sys` gives the ABI types (communicator handle, stream, data type
//! and reduction codes). Without NCCL every entry point returns [`Error::NcclMissing`] with
//! the remedy ([`NCCL_REMEDY`]).
//!
//! # Streams
//!
//! Each rank's operations are enqueued on its handle's stream (use [`Gpu::with_new_stream`]
//! to give NCCL streams of its own), asynchronously: read results with the handle's copies,
//! or wait with [`Communicator::synchronize`]. Buffers are ordered for those streams like any
//! other use (see [`DeviceBuffer`]): a buffer of another stream of the same GPU is waited for,
//! and its free waits for the NCCL operation.

use super::{driver_err, DeviceBuffer, Gpu, Move};
use crate::{Error, Result};
use cudarc::driver::{DevicePtr, DevicePtrMut};
use cudarc::nccl::sys as nccl_sys;
use nccl_sys::{cudaStream_t, ncclComm_t, ncclDataType_t, ncclRedOp_t};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// What to install when NCCL is missing.
pub const NCCL_REMEDY: &str = "install NCCL 2 for CUDA 13: `apt install libnccl2` (from \
NVIDIA's CUDA repository) or `pip install nvidia-nccl-cu13`; or point WARPMAP_NCCL_DIR at the \
directory that holds libnccl.so.2";

/// `ncclResult_t` as the C `int` it is (read as an integer, so an unknown code is no UB).
type NcclResult = c_int;

/// The entry points we call.
struct Api {
    get_version: unsafe extern "C" fn(*mut c_int) -> NcclResult,
    get_error_string: unsafe extern "C" fn(NcclResult) -> *const c_char,
    /// NCCL ≥ 2.13.
    get_last_error: Option<unsafe extern "C" fn(ncclComm_t) -> *const c_char>,
    comm_init_all: unsafe extern "C" fn(*mut ncclComm_t, c_int, *const c_int) -> NcclResult,
    get_unique_id: unsafe extern "C" fn(*mut UniqueId) -> NcclResult,
    /// `ncclCommInitRank(comm, nranks, id, rank)`: the id travels by value (a 128-byte struct).
    comm_init_rank: unsafe extern "C" fn(*mut ncclComm_t, c_int, UniqueId, c_int) -> NcclResult,
    all_gather: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclComm_t,
        cudaStream_t,
    ) -> NcclResult,
    comm_destroy: unsafe extern "C" fn(ncclComm_t) -> NcclResult,
    #[allow(clippy::type_complexity)]
    all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclRedOp_t,
        ncclComm_t,
        cudaStream_t,
    ) -> NcclResult,
    send: unsafe extern "C" fn(
        *const c_void,
        usize,
        ncclDataType_t,
        c_int,
        ncclComm_t,
        cudaStream_t,
    ) -> NcclResult,
    recv: unsafe extern "C" fn(
        *mut c_void,
        usize,
        ncclDataType_t,
        c_int,
        ncclComm_t,
        cudaStream_t,
    ) -> NcclResult,
    group_start: unsafe extern "C" fn() -> NcclResult,
    group_end: unsafe extern "C" fn() -> NcclResult,
}

/// The loaded NCCL library.
pub struct Nccl {
    /// The file it was loaded from (a bare name when the system loader found it).
    pub path: PathBuf,
    /// `(major, minor, patch)` as NCCL reports it.
    pub version: (u32, u32, u32),
    api: Api,
    // Kept open for the life of the process (the function pointers above point into it).
    _lib: libloading::os::unix::Library,
}

impl std::fmt::Debug for Nccl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nccl")
            .field("path", &self.path)
            .field("version", &self.version)
            .finish()
    }
}

/// The directories searched for `libnccl.so.2`, in order: `$WARPMAP_NCCL_DIR`,
/// `$NCCL_HOME/lib`, `$NCCL_ROOT/lib`, the CUDA roots (`$CUDA_HOME`, `$CUDA_PATH`,
/// `/usr/local/cuda`), pip's `nvidia/nccl/lib` under every site-packages we can see, and the
/// distribution's library directories. After them, the system loader (ldconfig,
/// `LD_LIBRARY_PATH`) by name.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(v) = std::env::var_os("WARPMAP_NCCL_DIR") {
        dirs.push(PathBuf::from(v));
    }
    for var in ["NCCL_HOME", "NCCL_ROOT"] {
        if let Some(v) = std::env::var_os(var) {
            dirs.push(PathBuf::from(&v).join("lib"));
            dirs.push(PathBuf::from(&v).join("lib64"));
        }
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(v) = std::env::var_os(var) {
            dirs.push(PathBuf::from(v).join("lib64"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    for sp in super::nvrtc::python_site_packages() {
        dirs.push(sp.join("nvidia/nccl/lib"));
    }
    for d in [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/local/lib",
        "/usr/lib",
    ] {
        dirs.push(PathBuf::from(d));
    }
    dirs
}

fn open(path: &Path) -> std::result::Result<libloading::os::unix::Library, String> {
    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    // SAFETY: opening NVIDIA's NCCL runs its initialisers, which have no preconditions; the
    // handle stays open for the life of the process (it is kept in a static).
    unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) }.map_err(|e| e.to_string())
}

/// Resolves the entry points of an opened NCCL.
fn resolve(lib: &libloading::os::unix::Library) -> std::result::Result<Api, String> {
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol is NCCL's C function of that name; the pointer type given by
            // the field it is stored in is its C signature (nccl.h, 2.x), and the library
            // stays loaded while the pointer is used (see `Nccl::_lib`).
            unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map(|s: libloading::os::unix::Symbol<_>| *s)
                .map_err(|e| {
                    format!(
                        "{} lacks {}: {e} (NCCL 2.7 or later needed)",
                        "libnccl", $name
                    )
                })?
        };
    }
    Ok(Api {
        get_version: sym!("ncclGetVersion"),
        get_error_string: sym!("ncclGetErrorString"),
        // SAFETY: as in `sym!` (ncclGetLastError: const char* (ncclComm_t)).
        get_last_error: unsafe { lib.get(b"ncclGetLastError\0") }
            .ok()
            .map(|s: libloading::os::unix::Symbol<_>| *s),
        comm_init_all: sym!("ncclCommInitAll"),
        get_unique_id: sym!("ncclGetUniqueId"),
        comm_init_rank: sym!("ncclCommInitRank"),
        all_gather: sym!("ncclAllGather"),
        comm_destroy: sym!("ncclCommDestroy"),
        all_reduce: sym!("ncclAllReduce"),
        send: sym!("ncclSend"),
        recv: sym!("ncclRecv"),
        group_start: sym!("ncclGroupStart"),
        group_end: sym!("ncclGroupEnd"),
    })
}

/// `NCCL_VERSION_CODE` as `(major, minor, patch)`: `X*10000 + Y*100 + Z` since 2.9,
/// `X*1000 + Y*100 + Z` before.
pub fn decode_version(code: u32) -> (u32, u32, u32) {
    if code >= 10000 {
        (code / 10000, code % 10000 / 100, code % 100)
    } else {
        (code / 1000, code % 1000 / 100, code % 100)
    }
}

/// Loads NCCL from the first of `dirs` holding `libnccl.so.2`, else (when `system_fallback`)
/// by name through the system loader. [`Error::NcclMissing`] lists what was tried.
pub fn load_from(dirs: &[PathBuf], system_fallback: bool) -> Result<Nccl> {
    let mut tried = Vec::new();
    let mut candidates: Vec<PathBuf> = dirs
        .iter()
        .map(|d| d.join("libnccl.so.2"))
        .filter(|p| p.is_file())
        .collect();
    if system_fallback {
        candidates.push(PathBuf::from("libnccl.so.2"));
        candidates.push(PathBuf::from("libnccl.so"));
    }
    for path in candidates {
        let lib = match open(&path) {
            Ok(l) => l,
            Err(e) => {
                tried.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        let api = match resolve(&lib) {
            Ok(a) => a,
            Err(e) => {
                tried.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        let mut code: c_int = 0;
        // SAFETY: ncclGetVersion writes one int through the pointer, which is valid.
        let r = unsafe { (api.get_version)(&mut code) };
        if r != 0 {
            tried.push(format!("{}: ncclGetVersion failed ({r})", path.display()));
            continue;
        }
        let version = decode_version(code.max(0) as u32);
        if version.0 < 2 || (version.0 == 2 && version.1 < 7) {
            tried.push(format!(
                "{}: NCCL {}.{}.{} is too old (2.7 or later needed)",
                path.display(),
                version.0,
                version.1,
                version.2
            ));
            continue;
        }
        return Ok(Nccl {
            path,
            version,
            api,
            _lib: lib,
        });
    }
    let mut searched = format!(
        "no libnccl.so.2 in {}",
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if system_fallback {
        searched.push_str(" nor through the system loader");
    }
    if !tried.is_empty() {
        searched.push_str(&format!(" (tried: {})", tried.join("; ")));
    }
    Err(Error::NcclMissing {
        searched,
        remedy: NCCL_REMEDY.into(),
    })
}

/// NCCL, loaded once per process ([`load_from`] over [`search_dirs`], then the system loader).
pub fn nccl() -> Result<&'static Nccl> {
    static LIB: OnceLock<std::result::Result<Nccl, String>> = OnceLock::new();
    match LIB.get_or_init(|| {
        load_from(&search_dirs(), true).map_err(|e| match e {
            Error::NcclMissing { searched, .. } => searched,
            other => other.to_string(),
        })
    }) {
        Ok(n) => Ok(n),
        Err(searched) => Err(Error::NcclMissing {
            searched: searched.clone(),
            remedy: NCCL_REMEDY.into(),
        }),
    }
}

impl Nccl {
    /// An [`Error::Nccl`] for result `code` of `what`, with NCCL's words (and, where NCCL has
    /// it, the last error message of `comm`).
    fn error(&self, what: &str, code: NcclResult, comm: Option<ncclComm_t>) -> Error {
        // SAFETY: ncclGetErrorString takes any code and returns a static C string (or null).
        let words = unsafe { (self.api.get_error_string)(code) };
        let mut message = format!("result {code}");
        if !words.is_null() {
            // SAFETY: a non-null result is a NUL-terminated static string.
            let w = unsafe { CStr::from_ptr(words) }.to_string_lossy();
            message.push_str(&format!(": {w}"));
        }
        if let (Some(last), Some(comm)) = (self.api.get_last_error, comm) {
            // SAFETY: `comm` is a live communicator (or null, which NCCL accepts: the last
            // error of the thread); the result is NCCL's own NUL-terminated string or null.
            let p = unsafe { last(comm) };
            if !p.is_null() {
                // SAFETY: as above.
                let l = unsafe { CStr::from_ptr(p) }.to_string_lossy();
                if !l.is_empty() {
                    message.push_str(&format!(" ({l})"));
                }
            }
        }
        Error::Nccl {
            context: what.to_string(),
            message,
        }
    }

    fn check(&self, what: &str, code: NcclResult, comm: Option<ncclComm_t>) -> Result<()> {
        // ncclSuccess (0); ncclInProgress (7) only for non-blocking communicators, which we do
        // not make.
        if code == 0 {
            Ok(())
        } else {
            Err(self.error(what, code, comm))
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// An element type NCCL can reduce.
pub trait NcclNumber: bytemuck::Pod + sealed::Sealed {
    /// Its NCCL data type.
    const TYPE: ncclDataType_t;
}
macro_rules! numbers {
    ($($t:ty => $v:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl NcclNumber for $t { const TYPE: ncclDataType_t = ncclDataType_t::$v; }
    )*};
}
numbers!(u8 => ncclUint8, i32 => ncclInt32, u32 => ncclUint32, i64 => ncclInt64,
         u64 => ncclUint64, f32 => ncclFloat32, f64 => ncclFloat64);

/// Where the parts of a variable-size all-to-all go: `send_offsets[r]` (n + 1 entries) splits
/// rank `r`'s send buffer into its parts for ranks `0..n`; `recv_offsets[p]` (n + 1 entries)
/// says where rank `p` receives the part from each rank, in rank order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExchangePlan {
    /// Per rank: where its part for each peer starts (and, last, the total it sends).
    pub send_offsets: Vec<Vec<u64>>,
    /// Per rank: where the part from each peer starts (and, last, the total it receives).
    pub recv_offsets: Vec<Vec<u64>>,
}

impl ExchangePlan {
    /// The plan of a count matrix: `counts[r][p]` elements go from rank `r` to rank `p`.
    /// [`Error::InvalidInput`] unless the matrix is square and non-empty.
    ///
    /// ```
    /// use warpmap::device::nccl::ExchangePlan;
    /// let plan = ExchangePlan::from_counts(&[vec![1, 2], vec![3, 4]]).unwrap();
    /// assert_eq!(plan.send_offsets, vec![vec![0, 1, 3], vec![0, 3, 7]]);
    /// // Rank 1 receives 2 from rank 0, then 4 from itself.
    /// assert_eq!(plan.recv_offsets, vec![vec![0, 1, 4], vec![0, 2, 6]]);
    /// ```
    pub fn from_counts(counts: &[Vec<u64>]) -> Result<ExchangePlan> {
        let n = counts.len();
        if n == 0 || counts.iter().any(|row| row.len() != n) {
            return Err(Error::invalid(format!(
                "all-to-all counts must be a square matrix of the ranks ({n} rows, lengths {:?})",
                counts.iter().map(|r| r.len()).collect::<Vec<_>>()
            )));
        }
        let prefix = |it: &mut dyn Iterator<Item = u64>| -> Result<Vec<u64>> {
            let mut v = vec![0u64];
            for c in it {
                let next = v[v.len() - 1]
                    .checked_add(c)
                    .ok_or_else(|| Error::invalid("all-to-all counts overflow"))?;
                v.push(next);
            }
            Ok(v)
        };
        let send_offsets = (0..n)
            .map(|r| prefix(&mut counts[r].iter().copied()))
            .collect::<Result<Vec<_>>>()?;
        let recv_offsets = (0..n)
            .map(|p| prefix(&mut (0..n).map(|r| counts[r][p])))
            .collect::<Result<Vec<_>>>()?;
        Ok(ExchangePlan {
            send_offsets,
            recv_offsets,
        })
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.send_offsets.len()
    }
    /// Elements rank `r` sends to rank `p`.
    pub fn count(&self, r: usize, p: usize) -> u64 {
        self.send_offsets[r][p + 1] - self.send_offsets[r][p]
    }
}

/// What [`Communicator::exchange`] delivers to the ranks.
#[derive(Debug)]
pub struct Exchanged<T> {
    /// Per rank: the parts received from ranks `0..n`, in rank order (on its GPU).
    pub recv: Vec<DeviceBuffer<T>>,
    /// Per rank: `n + 1` offsets, the part from rank `r` at `offsets[r]..offsets[r + 1]`.
    pub offsets: Vec<Vec<u64>>,
}

/// The bytes of `NCCL_UNIQUE_ID_BYTES`.
pub const UNIQUE_ID_BYTES: usize = 128;

/// An NCCL unique id (`ncclUniqueId`): what the ranks of one communicator that span processes
/// or nodes share. One process makes it ([`UniqueId::new`]) and hands it to the others by any
/// means (a file, an environment variable, a key-value store, MPI's broadcast: as text with
/// [`UniqueId::to_hex`] and [`UniqueId::from_hex`], or as bytes); then every process joins
/// with the ranks it holds ([`Communicator::from_unique_id`]).
///
/// The id carries the address of the first process's bootstrap socket: every process must be
/// able to reach it (`NCCL_SOCKET_IFNAME` picks the interface).
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct UniqueId {
    internal: [u8; UNIQUE_ID_BYTES],
}

impl std::fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UniqueId({}…)", &self.to_hex()[..16])
    }
}

impl UniqueId {
    /// A new id (`ncclGetUniqueId`; it opens the bootstrap's listening socket in this
    /// process, which must stay alive until every rank has joined).
    pub fn new() -> Result<UniqueId> {
        let lib = nccl()?;
        let mut id = UniqueId {
            internal: [0; UNIQUE_ID_BYTES],
        };
        // SAFETY: ncclGetUniqueId writes one ncclUniqueId (128 bytes, our repr(C) twin) through
        // the pointer, which is valid for that.
        let r = unsafe { (lib.api.get_unique_id)(&mut id) };
        lib.check("ncclGetUniqueId", r, None)?;
        Ok(id)
    }
    /// The id's bytes.
    pub fn as_bytes(&self) -> &[u8; UNIQUE_ID_BYTES] {
        &self.internal
    }
    /// The id of `bytes` ([`UNIQUE_ID_BYTES`] of them, else [`Error::InvalidInput`]).
    pub fn from_bytes(bytes: &[u8]) -> Result<UniqueId> {
        let internal = bytes.try_into().map_err(|_| {
            Error::invalid(format!(
                "an NCCL unique id is {UNIQUE_ID_BYTES} bytes, not {}",
                bytes.len()
            ))
        })?;
        Ok(UniqueId { internal })
    }
    /// The id as 256 lower-case hexadecimal digits.
    pub fn to_hex(&self) -> String {
        self.internal.iter().map(|b| format!("{b:02x}")).collect()
    }
    /// The id of 256 hexadecimal digits (surrounding white space ignored), else
    /// [`Error::InvalidInput`].
    pub fn from_hex(text: &str) -> Result<UniqueId> {
        let t = text.trim();
        let bad = || Error::invalid(format!("not an NCCL unique id in hex: {t:.40}"));
        if t.len() != 2 * UNIQUE_ID_BYTES || !t.is_ascii() {
            return Err(bad());
        }
        let bytes = (0..UNIQUE_ID_BYTES)
            .map(|i| u8::from_str_radix(&t[2 * i..2 * i + 2], 16).map_err(|_| bad()))
            .collect::<Result<Vec<u8>>>()?;
        UniqueId::from_bytes(&bytes)
    }
}

/// A group of NCCL ranks, of which this process holds some or all, one per GPU handle. Made
/// over the GPUs of this process ([`Communicator::from_devices`], `ncclCommInitAll`: it holds
/// every rank), or by every process of a group with the ranks it holds, from one
/// [`UniqueId`] ([`Communicator::from_unique_id`], `ncclCommInitRank`: across processes and
/// nodes). NCCL allows one rank per GPU: two ranks on one GPU are refused by NCCL ("duplicate
/// GPU"), unless their processes claim different hosts (`NCCL_HOSTID`).
///
/// Buffers are given per rank **held** here, in the order of [`Communicator::held`]; with
/// [`from_devices`](Communicator::from_devices) that is rank order. Operations are enqueued on
/// each held rank's handle stream and return before they finish.
pub struct Communicator {
    lib: &'static Nccl,
    comms: Vec<ncclComm_t>,
    gpus: Vec<Arc<Gpu>>,
    /// The rank number of `comms[i]` in the group.
    held: Vec<usize>,
    /// Ranks in the group.
    world: usize,
    /// Made from a unique id (its ranks may span processes).
    joined: bool,
}

// SAFETY: an NCCL communicator may be used from any thread, one call at a time. Moving the
// group to another thread keeps that; it is not Sync (raw handles), so no two threads can
// call it at once.
unsafe impl Send for Communicator {}

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Communicator")
            .field("ranks", &self.gpus)
            .finish()
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        for (comm, gpu) in self.comms.iter().zip(&self.gpus) {
            // Let the rank's enqueued operations finish before its resources go (errors:
            // the context is gone, and the communicator's work with it).
            let _ = gpu.stream.synchronize();
            // SAFETY: `comm` came from ncclCommInitAll, is destroyed once (here), and no
            // operation of it is pending (its stream is idle).
            let _ = unsafe { (self.lib.api.comm_destroy)(*comm) };
        }
    }
}

impl Communicator {
    /// One rank per handle, rank `i` on `gpus[i]`. [`Error::NcclMissing`] without NCCL,
    /// [`Error::Nccl`] when NCCL refuses (e.g. two handles of one GPU).
    pub fn from_devices(gpus: &[Arc<Gpu>]) -> Result<Communicator> {
        if gpus.is_empty() {
            return Err(Error::invalid("a communicator needs at least one GPU"));
        }
        let lib = nccl()?;
        let n = c_int::try_from(gpus.len()).map_err(|_| Error::invalid("too many ranks"))?;
        let ordinals: Vec<c_int> = gpus.iter().map(|g| g.ordinal() as c_int).collect();
        let mut comms: Vec<ncclComm_t> = vec![std::ptr::null_mut(); gpus.len()];
        // NCCL uses each device's primary context, the one every Gpu handle works in.
        gpus[0]
            .dev
            .ctx
            .bind_to_thread()
            .map_err(|e| driver_err("binding the context", e))?;
        // SAFETY: `comms` has room for `n` handles and `ordinals` holds `n` device numbers;
        // NCCL writes the handles (all or, on failure, none that we keep).
        let r = unsafe { (lib.api.comm_init_all)(comms.as_mut_ptr(), n, ordinals.as_ptr()) };
        lib.check(&format!("ncclCommInitAll over GPUs {ordinals:?}"), r, None)?;
        Ok(Communicator {
            lib,
            comms,
            gpus: gpus.to_vec(),
            held: (0..gpus.len()).collect(),
            world: gpus.len(),
            joined: false,
        })
    }

    /// This process's ranks of a group of `world` ranks that share `id` (`ncclCommInitRank`,
    /// in one NCCL group when there are several): `ranks` pairs each rank number held here with
    /// its GPU handle. Every process of the group calls this with its own ranks (each rank
    /// number once in the group); it returns when every rank has joined, so the processes must
    /// call it at about the same time (NCCL's bootstrap waits for the missing ones, and fails
    /// after its timeout).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for no ranks, a rank number at or above `world` or held twice;
    /// [`Error::NcclMissing`] without NCCL; [`Error::Nccl`] when NCCL refuses (two ranks on one
    /// GPU, a bootstrap that cannot reach the id's process, ...).
    ///
    /// # Examples
    ///
    /// Two processes, one GPU each (the id goes from the first to the second as text):
    /// ```no_run
    /// use warpmap::device::nccl::{Communicator, UniqueId};
    /// use warpmap::Gpu;
    /// # fn send_to_other_process(_: &str) {}
    /// # fn receive_from_first_process() -> String { String::new() }
    /// # fn main() -> warpmap::Result<()> {
    /// let rank: usize = std::env::var("RANK").unwrap().parse().unwrap();
    /// let id = if rank == 0 {
    ///     let id = UniqueId::new()?;
    ///     send_to_other_process(&id.to_hex());
    ///     id
    /// } else {
    ///     UniqueId::from_hex(&receive_from_first_process())?
    /// };
    /// let comm = Communicator::from_unique_id(&id, 2, &[(rank, Gpu::default_gpu()?)])?;
    /// assert_eq!((comm.world(), comm.held()), (2, &[rank][..]));
    /// # Ok(()) }
    /// ```
    pub fn from_unique_id(
        id: &UniqueId,
        world: usize,
        ranks: &[(usize, Arc<Gpu>)],
    ) -> Result<Communicator> {
        if ranks.is_empty() {
            return Err(Error::invalid(
                "a communicator needs at least one rank here",
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for &(r, _) in ranks {
            if r >= world {
                return Err(Error::invalid(format!(
                    "rank {r} of a communicator of {world} ranks"
                )));
            }
            if !seen.insert(r) {
                return Err(Error::invalid(format!("rank {r} is held twice")));
            }
        }
        let lib = nccl()?;
        let n = c_int::try_from(world).map_err(|_| Error::invalid("too many ranks"))?;
        let mut comms: Vec<ncclComm_t> = vec![std::ptr::null_mut(); ranks.len()];
        let what = format!(
            "ncclCommInitRank (ranks {:?} of {world})",
            ranks.iter().map(|(r, _)| *r).collect::<Vec<_>>()
        );
        // SAFETY: no arguments; balanced by the group end below.
        lib.check(&what, unsafe { (lib.api.group_start)() }, None)?;
        let mut r = Ok(());
        for ((rank, gpu), comm) in ranks.iter().zip(comms.iter_mut()) {
            // NCCL takes the device of the calling thread's current context.
            if let Err(e) = gpu.dev.ctx.bind_to_thread() {
                r = Err(driver_err("binding the context", e));
                break;
            }
            // SAFETY: `comm` is a valid place for one handle; `id` is a 128-byte ncclUniqueId
            // passed by value; `rank < world` (checked above). Inside a group the call only
            // registers the rank; NCCL initialises every registered rank at the group's end.
            let code = unsafe { (lib.api.comm_init_rank)(comm, n, *id, *rank as c_int) };
            if let Err(e) = lib.check(&what, code, None) {
                r = Err(e);
                break;
            }
        }
        // SAFETY: ends the group started above.
        let end = lib.check(&what, unsafe { (lib.api.group_end)() }, None);
        if r.is_err() || end.is_err() {
            for c in comms.into_iter().filter(|c| !c.is_null()) {
                // SAFETY: a handle NCCL wrote (its initialisation failed or was abandoned
                // with the group); destroyed once, nothing enqueued on it.
                let _ = unsafe { (lib.api.comm_destroy)(c) };
            }
            return Err(r.and(end).expect_err("one of them failed"));
        }
        Ok(Communicator {
            lib,
            comms,
            gpus: ranks.iter().map(|(_, g)| g.clone()).collect(),
            held: ranks.iter().map(|(r, _)| *r).collect(),
            world,
            joined: true,
        })
    }

    /// The number of ranks held here (buffers are given for these).
    pub fn size(&self) -> usize {
        self.gpus.len()
    }
    /// The number of ranks in the group (all processes).
    pub fn world(&self) -> usize {
        self.world
    }
    /// The rank numbers held here, in the order buffers are given.
    pub fn held(&self) -> &[usize] {
        &self.held
    }
    /// Whether this process holds every rank of the group.
    pub fn holds_all(&self) -> bool {
        self.held.len() == self.world
    }
    /// Whether the communicator was made from a unique id (its ranks may span processes).
    pub fn is_joined(&self) -> bool {
        self.joined
    }
    /// The handle of the `i`-th rank held here.
    pub fn gpu(&self, i: usize) -> &Arc<Gpu> {
        &self.gpus[i]
    }
    /// Where rank `rank` is among those held here, if it is.
    fn local(&self, rank: usize) -> Option<usize> {
        self.held.iter().position(|&r| r == rank)
    }
    /// The loaded NCCL.
    pub fn nccl(&self) -> &'static Nccl {
        self.lib
    }

    /// Waits on the host for every rank's stream.
    pub fn synchronize(&self) -> Result<()> {
        self.gpus.iter().try_for_each(|g| g.synchronize())
    }

    fn check_whole(&self, what: &str) -> Result<()> {
        if self.holds_all() {
            return Ok(());
        }
        Err(Error::invalid(format!(
            "{what} needs every rank in this process (this one holds {:?} of {}); use transfer",
            self.held, self.world
        )))
    }

    fn check_ranks(&self, what: &str, n: usize) -> Result<()> {
        if n != self.size() {
            return Err(Error::invalid(format!(
                "{what}: {n} buffers for {} ranks",
                self.size()
            )));
        }
        Ok(())
    }

    /// Runs `f` between ncclGroupStart and ncclGroupEnd (always ended, also when `f` fails).
    fn grouped(&self, what: &str, f: impl FnOnce() -> Result<()>) -> Result<()> {
        // SAFETY: no arguments; balanced by the group end below.
        self.lib
            .check(what, unsafe { (self.lib.api.group_start)() }, None)?;
        let r = f();
        // SAFETY: ends the group started above.
        let end = self
            .lib
            .check(what, unsafe { (self.lib.api.group_end)() }, None);
        r.and(end)
    }

    fn stream(&self, r: usize) -> cudaStream_t {
        self.gpus[r].stream.cu_stream() as cudaStream_t
    }

    /// Orders each rank's (already checked) send and receive buffers for its stream (see
    /// [`DeviceBuffer`]), and returns their device addresses.
    fn ordered_bases<T: bytemuck::Pod>(
        &self,
        send: &[&DeviceBuffer<T>],
        recv: &mut [&mut DeviceBuffer<T>],
    ) -> Result<Vec<(u64, u64)>> {
        let mut bases = Vec::with_capacity(self.size());
        for (r, (s, d)) in send.iter().zip(recv.iter_mut()).enumerate() {
            let gpu = &self.gpus[r];
            gpu.before_read(s)?;
            gpu.before_write(d)?;
            bases.push((
                s.bytes.device_ptr(&gpu.stream).0,
                d.bytes.device_ptr_mut(&gpu.stream).0,
            ));
        }
        Ok(bases)
    }

    /// Sum all-reduce: afterwards every `recv[r]` holds, element by element, the sum of all
    /// `send` buffers. Every `send[r]` has the same length and `recv[r]` at least that; the
    /// buffers of rank `r` are on its GPU. Asynchronous (on each rank's stream).
    pub fn all_reduce_sum<T: NcclNumber>(
        &self,
        send: &[&DeviceBuffer<T>],
        recv: &mut [&mut DeviceBuffer<T>],
    ) -> Result<()> {
        self.check_ranks("all_reduce_sum send", send.len())?;
        self.check_ranks("all_reduce_sum recv", recv.len())?;
        let count = send[0].len();
        for r in 0..self.size() {
            if send[r].len() != count || recv[r].len() < count {
                return Err(Error::invalid(format!(
                    "all_reduce_sum: rank {r} sends {} and receives into {} elements; every \
                     rank must send {count} and receive into at least that",
                    send[r].len(),
                    recv[r].len()
                )));
            }
        }
        if count == 0 {
            return Ok(());
        }
        let bases = self.ordered_bases(send, recv)?;
        let lib = self.lib;
        self.grouped("ncclAllReduce", || {
            for (r, &(s, d)) in bases.iter().enumerate() {
                // SAFETY: `s` and `d` address at least `count` elements of T on rank r's GPU
                // (lengths checked above), ordered for rank r's stream (before_read/write, and
                // the free of either buffer waits for this stream); `T::TYPE` is T's NCCL type;
                // the communicator and stream are rank r's, alive while `self` is.
                let code = unsafe {
                    (lib.api.all_reduce)(
                        s as *const c_void,
                        d as *mut c_void,
                        count,
                        T::TYPE,
                        ncclRedOp_t::ncclSum,
                        self.comms[r],
                        self.stream(r),
                    )
                };
                lib.check("ncclAllReduce", code, Some(self.comms[r]))?;
            }
            Ok(())
        })
    }

    /// Enqueues the sends and receives of `plan` (grouped send/recv, as bytes): rank `r` sends
    /// `send[r][send_offsets[r][p]..send_offsets[r][p+1]]` to rank `p`, which receives it at
    /// `recv[p][recv_offsets[p][r]..]`. Parts of 0 elements are skipped on both sides.
    pub fn all_to_all_v<T: bytemuck::Pod>(
        &self,
        send: &[&DeviceBuffer<T>],
        recv: &mut [&mut DeviceBuffer<T>],
        plan: &ExchangePlan,
    ) -> Result<()> {
        let n = self.size();
        self.check_whole("all_to_all_v")?;
        self.check_ranks("all_to_all send", send.len())?;
        self.check_ranks("all_to_all recv", recv.len())?;
        self.check_ranks("all_to_all plan", plan.ranks())?;
        for r in 0..n {
            if plan.send_offsets[r].len() != n + 1 || plan.recv_offsets[r].len() != n + 1 {
                return Err(Error::invalid(
                    "all_to_all: a plan row is not ranks + 1 offsets",
                ));
            }
            if plan.send_offsets[r][n] > send[r].len() as u64 {
                return Err(Error::invalid(format!(
                    "all_to_all: rank {r} sends {} elements from a buffer of {}",
                    plan.send_offsets[r][n],
                    send[r].len()
                )));
            }
            if plan.recv_offsets[r][n] > recv[r].len() as u64 {
                return Err(Error::invalid(format!(
                    "all_to_all: rank {r} receives {} elements into a buffer of {}",
                    plan.recv_offsets[r][n],
                    recv[r].len()
                )));
            }
        }
        // The plan's parts as pieces of one transfer.
        let mut moves = Vec::with_capacity(n * n);
        for r in 0..n {
            for p in 0..n {
                moves.push(Move {
                    from: r,
                    from_at: plan.send_offsets[r][p],
                    to: p,
                    to_at: plan.recv_offsets[p][r],
                    len: plan.count(r, p),
                });
            }
        }
        let send: Vec<_> = send
            .iter()
            .enumerate()
            .map(|(r, b)| (Some(*b), r))
            .collect();
        let mut recv: Vec<_> = recv
            .iter_mut()
            .enumerate()
            .map(|(p, b)| (Some(&mut **b), p))
            .collect();
        self.transfer(&send, &mut recv, &moves)
    }

    /// Enqueues this process's halves of the pieces `moves` (grouped send/recv, as bytes).
    /// Send buffer `i` is `send[i].0` of rank `send[i].1`, receive buffer `j` is `recv[j].0` of
    /// rank `recv[j].1` (rank numbers of the group); a buffer of a rank held by another process
    /// is `None` there, and that process moves its half of each piece (the same `moves` in
    /// every process). Each [`Move`] goes from rank to rank (to itself too: a one-rank
    /// communicator sends to itself); several pieces between one pair of ranks are matched in
    /// order. Pieces of 0 elements are skipped. Asynchronous (on each held rank's stream).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a rank out of range, a buffer of a rank not held here, a
    /// buffer index out of range, or a piece that leaves its buffer; NCCL's errors as
    /// [`Error::Nccl`].
    pub fn transfer<T: bytemuck::Pod>(
        &self,
        send: &[(Option<&DeviceBuffer<T>>, usize)],
        recv: &mut [(Option<&mut DeviceBuffer<T>>, usize)],
        moves: &[Move],
    ) -> Result<()> {
        let held = |r: usize, here: bool| -> Result<Option<usize>> {
            if r >= self.world {
                return Err(Error::invalid(format!(
                    "transfer: rank {r} of a communicator of {}",
                    self.world
                )));
            }
            match (self.local(r), here) {
                (_, false) => Ok(None),
                (Some(i), true) => Ok(Some(i)),
                (None, true) => Err(Error::invalid(format!(
                    "transfer: a buffer of rank {r}, which this process does not hold ({:?})",
                    self.held
                ))),
            }
        };
        // Per buffer: the held rank's index and the buffer's device address.
        let size = std::mem::size_of::<T>() as u64;
        let mut from: Vec<Option<(usize, u64, usize)>> = Vec::with_capacity(send.len());
        for (b, r) in send {
            from.push(match held(*r, b.is_some())? {
                Some(i) => {
                    let b = b.expect("held only with a buffer");
                    let gpu = &self.gpus[i];
                    gpu.before_read(b)?;
                    Some((i, b.bytes.device_ptr(&gpu.stream).0, b.len()))
                }
                None => None,
            });
        }
        let mut to: Vec<Option<(usize, u64, usize)>> = Vec::with_capacity(recv.len());
        for (b, r) in recv.iter_mut() {
            let here = b.is_some();
            to.push(match held(*r, here)? {
                Some(i) => {
                    let b = b.as_deref_mut().expect("held only with a buffer");
                    let gpu = &self.gpus[i];
                    gpu.before_write(b)?;
                    let len = b.len();
                    Some((i, b.bytes.device_ptr_mut(&gpu.stream).0, len))
                }
                None => None,
            });
        }
        for m in moves {
            let (Some(_), Some(_)) = (send.get(m.from), recv.get(m.to)) else {
                return Err(Error::invalid(format!(
                    "transfer: {m:?} names a missing buffer"
                )));
            };
            let fits = |at: u64, len: usize| at.checked_add(m.len).is_some_and(|e| e <= len as u64);
            if from[m.from].is_some_and(|(_, _, len)| !fits(m.from_at, len))
                || to[m.to].is_some_and(|(_, _, len)| !fits(m.to_at, len))
            {
                return Err(Error::invalid(format!(
                    "transfer: {m:?} leaves its buffers"
                )));
            }
        }
        let lib = self.lib;
        self.grouped("transfer (ncclSend/ncclRecv)", || {
            for m in moves.iter().filter(|m| m.len > 0) {
                let (a, b) = (send[m.from].1, recv[m.to].1);
                let bytes = (m.len * size) as usize;
                if let Some((i, base, _)) = from[m.from] {
                    // SAFETY: [base + from_at, + bytes) lies in send buffer m.from of held rank
                    // a (checked above), ordered for its stream, whose free waits for it; the
                    // matching receive is enqueued by the process that holds rank b, with the
                    // same piece (the same `moves` everywhere).
                    let code = unsafe {
                        (lib.api.send)(
                            (base + m.from_at * size) as *const c_void,
                            bytes,
                            ncclDataType_t::ncclUint8,
                            b as c_int,
                            self.comms[i],
                            self.stream(i),
                        )
                    };
                    lib.check("ncclSend", code, Some(self.comms[i]))?;
                }
                if let Some((i, base, _)) = to[m.to] {
                    // SAFETY: as above, for receive buffer m.to of held rank b.
                    let code = unsafe {
                        (lib.api.recv)(
                            (base + m.to_at * size) as *mut c_void,
                            bytes,
                            ncclDataType_t::ncclUint8,
                            a as c_int,
                            self.comms[i],
                            self.stream(i),
                        )
                    };
                    lib.check("ncclRecv", code, Some(self.comms[i]))?;
                }
            }
            Ok(())
        })
    }

    /// All-gather: `recv[i]` (of held rank `i`) receives the `send` buffers of every rank of
    /// the group, rank after rank (`world × len` elements); every `send[i]` has the same length
    /// `len` in every process. Asynchronous (on each held rank's stream).
    pub fn all_gather<T: bytemuck::Pod>(
        &self,
        send: &[&DeviceBuffer<T>],
        recv: &mut [&mut DeviceBuffer<T>],
    ) -> Result<()> {
        self.check_ranks("all_gather send", send.len())?;
        self.check_ranks("all_gather recv", recv.len())?;
        let count = send[0].len();
        for i in 0..self.size() {
            if send[i].len() != count || recv[i].len() < count * self.world {
                return Err(Error::invalid(format!(
                    "all_gather: held rank {i} sends {} and receives into {} elements; every \
                     rank must send {count} and receive into {} at least",
                    send[i].len(),
                    recv[i].len(),
                    count * self.world
                )));
            }
        }
        if count == 0 {
            return Ok(());
        }
        let bytes = count * std::mem::size_of::<T>();
        let bases = self.ordered_bases(send, recv)?;
        let lib = self.lib;
        self.grouped("ncclAllGather", || {
            for (i, &(s, d)) in bases.iter().enumerate() {
                // SAFETY: `s` addresses `count` elements (`bytes` bytes) and `d` at least
                // `world × count` on held rank i's GPU (checked above), both ordered for its
                // stream (before_read/write; their frees wait for it); communicator and stream
                // are held rank i's, alive while `self` is.
                let code = unsafe {
                    (lib.api.all_gather)(
                        s as *const c_void,
                        d as *mut c_void,
                        bytes,
                        ncclDataType_t::ncclUint8,
                        self.comms[i],
                        self.stream(i),
                    )
                };
                lib.check("ncclAllGather", code, Some(self.comms[i]))?;
            }
            Ok(())
        })
    }

    /// The all-to-all of the sharded table: rank `r` holds `send[r]`, split by
    /// `send_offsets[r]` (n + 1 offsets, e.g. a multisplit's into n parts) into its parts for
    /// ranks `0..n`. First the per-peer counts are exchanged (an all-to-all of one `u64` per
    /// pair, through NCCL, then read back), then the parts: each rank gets a new buffer (on its
    /// GPU, its stream) with the parts from ranks `0..n` in rank order, and the offsets where
    /// each starts (n + 1) ([`Exchanged`]). Synchronous for the counts, asynchronous for the
    /// parts.
    pub fn exchange<T: bytemuck::Pod>(
        &self,
        send: &[&DeviceBuffer<T>],
        send_offsets: &[Vec<u64>],
    ) -> Result<Exchanged<T>> {
        let n = self.size();
        self.check_whole("exchange")?;
        self.check_ranks("exchange send", send.len())?;
        self.check_ranks("exchange offsets", send_offsets.len())?;
        // Counts: rank r's row, on its GPU.
        let mut counts_out = Vec::with_capacity(n);
        for (r, offs) in send_offsets.iter().enumerate() {
            if offs.len() != n + 1 || offs.windows(2).any(|w| w[1] < w[0]) {
                return Err(Error::invalid(format!(
                    "exchange: rank {r}'s offsets must be {} non-decreasing numbers",
                    n + 1
                )));
            }
            let row: Vec<u64> = offs.windows(2).map(|w| w[1] - w[0]).collect();
            counts_out.push(self.gpus[r].upload(&row)?);
        }
        let mut counts_in: Vec<DeviceBuffer<u64>> = (0..n)
            .map(|r| self.gpus[r].alloc::<u64>(n))
            .collect::<Result<_>>()?;
        let ones = ExchangePlan::from_counts(&vec![vec![1u64; n]; n])?;
        {
            let s: Vec<&DeviceBuffer<u64>> = counts_out.iter().collect();
            let mut d: Vec<&mut DeviceBuffer<u64>> = counts_in.iter_mut().collect();
            self.all_to_all_v(&s, &mut d, &ones)?;
        }
        // received[p][r] = what p gets from r; the plan wants counts[r][p].
        let mut counts = vec![vec![0u64; n]; n];
        for (p, buf) in counts_in.iter().enumerate() {
            let got = self.gpus[p].download(buf)?;
            for (r, c) in got.into_iter().enumerate() {
                counts[r][p] = c;
            }
        }
        for (r, offs) in send_offsets.iter().enumerate() {
            for p in 0..n {
                if counts[r][p] != offs[p + 1] - offs[p] {
                    return Err(Error::Nccl {
                        context: "exchange of counts".into(),
                        message: format!(
                            "rank {p} received count {} from rank {r}, which sends {}",
                            counts[r][p],
                            offs[p + 1] - offs[p]
                        ),
                    });
                }
            }
        }
        let plan = ExchangePlan::from_counts(&counts)?;
        let mut recv: Vec<DeviceBuffer<T>> = (0..n)
            .map(|p| self.gpus[p].alloc::<T>(plan.recv_offsets[p][n] as usize))
            .collect::<Result<_>>()?;
        {
            let mut d: Vec<&mut DeviceBuffer<T>> = recv.iter_mut().collect();
            self.all_to_all_v(send, &mut d, &plan)?;
        }
        Ok(Exchanged {
            recv,
            offsets: plan.recv_offsets,
        })
    }
}
