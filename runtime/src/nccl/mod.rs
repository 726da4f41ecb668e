//! NCCL: collectives between GPUs (the engine of CuPy's `cupy.cuda.nccl` and
//! `cupyx.distributed`, and of every GPU framework's data parallelism).
//!
//! A [`Comm`] is one rank of a communicator, bound to one device: made by [`Comm::init_all`]
//! (one process driving several GPUs: a communicator per device, each used by its own thread
//! or inside a [`group`]) or by [`Comm::init_rank`] (one process per GPU; every rank passes the
//! same [`UniqueId`], which rank 0 makes and sends to the others out of band). Its operations
//! take device buffers of its device and the stream to run on, and are queued there like
//! kernels (a collective returns when queued; its results are ordered on the stream): the
//! caller orders the buffers' writers before it. Element counts come from the buffers' lengths
//! and the [`DataType`].
//!
//! The library is loaded at run time ([`library`]: `libnccl.so.2` is found where cudarc's
//! loader does not look). Without it every call returns [`RuntimeError::NcclUnavailable`].
//! Set `NCCL_NVLS_ENABLE=0` where NVLink SHARP must stay off (the device tool's machines).
//!
//! | CuPy (`cupy.cuda.nccl`) | kiln-runtime |
//! |---|---|
//! | `get_unique_id()` | [`UniqueId::new`] |
//! | `NcclCommunicator(n, id, rank)`, `.initAll(devices)` | [`Comm::init_rank`], [`Comm::init_all`] |
//! | `allReduce`, `reduce`, `broadcast`, `allGather`, `reduceScatter`, `send`, `recv` | [`Comm::all_reduce`], [`Comm::reduce`], [`Comm::broadcast`], [`Comm::all_gather`], [`Comm::reduce_scatter`], [`Comm::send`], [`Comm::recv`] |
//! | `groupStart()`/`groupEnd()` | [`group`] |
//! | `get_version()` | [`version`] |

mod library;

use std::ffi::{c_int, c_void, CStr};

use cudarc::nccl::sys::{ncclComm_t, ncclDataType_t, ncclRedOp_t, ncclUniqueId};

use crate::{error::Result, Device, DeviceBuffer, RuntimeError, Stream};
use library::{nccl, Nccl};

/// The bytes of a [`UniqueId`] (`NCCL_UNIQUE_ID_BYTES`).
pub const UNIQUE_ID_BYTES: usize = 128;

/// A communicator's identity: made once (by rank 0) and given to every rank
/// (`ncclGetUniqueId`; CuPy's `nccl.get_unique_id()`). It holds the address rank 0's NCCL
/// listens on, so it is sent to the other ranks as bytes ([`UniqueId::as_bytes`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct UniqueId([u8; UNIQUE_ID_BYTES]);

impl std::fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UniqueId(..)")
    }
}

impl UniqueId {
    /// A new identity (`ncclGetUniqueId`). Errors: NCCL missing, or its failure.
    pub fn new() -> Result<UniqueId> {
        let lib = loaded()?;
        let mut id = ncclUniqueId { internal: [0; UNIQUE_ID_BYTES] };
        // SAFETY: an out-pointer to a local of the C struct's layout.
        check(lib, "ncclGetUniqueId", unsafe { (lib.get_unique_id)(&mut id) }, None)?;
        Ok(UniqueId(id.internal.map(|c| c as u8)))
    }

    /// Its bytes, to send to the other ranks.
    pub fn as_bytes(&self) -> &[u8; UNIQUE_ID_BYTES] {
        &self.0
    }

    /// The identity of these bytes (as rank 0 sent them).
    pub fn from_bytes(bytes: [u8; UNIQUE_ID_BYTES]) -> UniqueId {
        UniqueId(bytes)
    }

    fn raw(&self) -> ncclUniqueId {
        ncclUniqueId { internal: self.0.map(|b| b as _) }
    }
}

/// How a reduction combines the ranks' elements (`ncclRedOp_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// `ncclSum`.
    Sum,
    /// `ncclProd`.
    Prod,
    /// `ncclMax`.
    Max,
    /// `ncclMin`.
    Min,
    /// `ncclAvg`: the sum divided by the number of ranks (NCCL 2.10 and later).
    Avg,
}

impl ReduceOp {
    fn raw(self) -> ncclRedOp_t {
        match self {
            ReduceOp::Sum => ncclRedOp_t::ncclSum,
            ReduceOp::Prod => ncclRedOp_t::ncclProd,
            ReduceOp::Max => ncclRedOp_t::ncclMax,
            ReduceOp::Min => ncclRedOp_t::ncclMin,
            ReduceOp::Avg => ncclRedOp_t::ncclAvg,
        }
    }

    /// The name CuPy's `NCCLBackend` takes (`"sum"`, `"prod"`, `"max"`, `"min"`, `"avg"`).
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Avg => "avg",
        }
    }
}

/// The element types NCCL reduces (`ncclDataType_t`). Data movement (broadcast, gathers,
/// send/recv) of any other type goes as [`DataType::Uint8`] bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    /// `ncclInt8`.
    Int8,
    /// `ncclUint8`.
    Uint8,
    /// `ncclInt32`.
    Int32,
    /// `ncclUint32`.
    Uint32,
    /// `ncclInt64`.
    Int64,
    /// `ncclUint64`.
    Uint64,
    /// `ncclFloat16`.
    Float16,
    /// `ncclFloat32`.
    Float32,
    /// `ncclFloat64`.
    Float64,
    /// `ncclBfloat16` (NCCL 2.10 and later).
    Bfloat16,
}

impl DataType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DataType::Int8 | DataType::Uint8 => 1,
            DataType::Float16 | DataType::Bfloat16 => 2,
            DataType::Int32 | DataType::Uint32 | DataType::Float32 => 4,
            DataType::Int64 | DataType::Uint64 | DataType::Float64 => 8,
        }
    }

    fn raw(self) -> ncclDataType_t {
        match self {
            DataType::Int8 => ncclDataType_t::ncclInt8,
            DataType::Uint8 => ncclDataType_t::ncclUint8,
            DataType::Int32 => ncclDataType_t::ncclInt32,
            DataType::Uint32 => ncclDataType_t::ncclUint32,
            DataType::Int64 => ncclDataType_t::ncclInt64,
            DataType::Uint64 => ncclDataType_t::ncclUint64,
            DataType::Float16 => ncclDataType_t::ncclFloat16,
            DataType::Float32 => ncclDataType_t::ncclFloat32,
            DataType::Float64 => ncclDataType_t::ncclFloat64,
            DataType::Bfloat16 => ncclDataType_t::ncclBfloat16,
        }
    }
}

/// Whether NCCL can be loaded here.
pub fn available() -> bool {
    nccl().is_ok()
}

/// NCCL's version `(major, minor, patch)` (`ncclGetVersion`).
pub fn version() -> Result<(u32, u32, u32)> {
    let lib = loaded()?;
    let mut code: c_int = 0;
    // SAFETY: an out-pointer to a local.
    check(lib, "ncclGetVersion", unsafe { (lib.get_version)(&mut code) }, None)?;
    let code = code.max(0) as u32;
    // NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z since 2.9, X*1000 + Y*100 + Z before.
    Ok(if code >= 10000 {
        (code / 10000, code / 100 % 100, code % 100)
    } else {
        (code / 1000, code / 100 % 10, code % 100)
    })
}

/// The path NCCL was loaded from.
pub fn library_path() -> Result<&'static str> {
    Ok(&loaded()?.path)
}

fn loaded() -> Result<&'static Nccl> {
    nccl().map_err(|searched| RuntimeError::NcclUnavailable { searched })
}

/// NCCL's result name (`nccl.h`'s `ncclResult_t`).
fn result_name(code: c_int) -> &'static str {
    match code {
        1 => "ncclUnhandledCudaError",
        2 => "ncclSystemError",
        3 => "ncclInternalError",
        4 => "ncclInvalidArgument",
        5 => "ncclInvalidUsage",
        6 => "ncclRemoteError",
        7 => "ncclInProgress",
        8 => "ncclTimeout",
        _ => "ncclResult",
    }
}

/// `Ok` for `ncclSuccess`; else a [`RuntimeError::Library`] with NCCL's name, text and last
/// error.
fn check(lib: &Nccl, call: &'static str, code: c_int, comm: Option<ncclComm_t>) -> Result<()> {
    if code == 0 {
        return Ok(());
    }
    let text = |p: *const std::ffi::c_char| {
        // SAFETY: NCCL returns static or comm-owned NUL-terminated strings (or null).
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    // SAFETY: plain queries of NCCL's error strings.
    let what = text(unsafe { (lib.get_error_string)(code) }).unwrap_or_default();
    let last = text(unsafe { (lib.get_last_error)(comm.unwrap_or(std::ptr::null_mut())) })
        .filter(|s| !s.is_empty());
    let mut status = format!("{} ({code}): {what}", result_name(code));
    if let Some(last) = last {
        status.push_str(&format!("; {last}"));
    }
    Err(RuntimeError::Library(crate::error::LibraryError { call, status }))
}

/// Runs `f` between `ncclGroupStart` and `ncclGroupEnd` (CuPy's `nccl.groupStart()` /
/// `groupEnd()`): the operations it queues on several communicators of one process (or a
/// rank's sends and receives) are launched together. `ncclGroupEnd` runs even when `f` fails.
pub fn group<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    let lib = loaded()?;
    // SAFETY: no arguments; NCCL keeps the group per thread.
    check(lib, "ncclGroupStart", unsafe { (lib.group_start)() }, None)?;
    let result = f();
    // SAFETY: closes the group opened above on this thread.
    let end = check(lib, "ncclGroupEnd", unsafe { (lib.group_end)() }, None);
    let r = result?;
    end?;
    Ok(r)
}

/// One rank of an NCCL communicator, on one device (`ncclComm_t`; CuPy's
/// `nccl.NcclCommunicator`). Destroyed when dropped. `Send`, not `Sync`: NCCL's calls on one
/// communicator must come from one thread at a time.
pub struct Comm {
    raw: ncclComm_t,
    device: Device,
    rank: usize,
    size: usize,
}

// SAFETY: an NCCL communicator may be used from any thread, one at a time (`Comm` is not
// `Sync`, and every call takes `&self` from the one owner).
unsafe impl Send for Comm {}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Comm(rank {} of {} on {})", self.rank, self.size, self.device)
    }
}

impl Comm {
    /// Rank `rank` of a communicator of `size` ranks identified by `id`, on `device`
    /// (`ncclCommInitRank`). Every rank must call it (each in its own process or thread): it
    /// returns once all have joined. Errors: NCCL missing, `rank >= size`, a rendezvous or
    /// device failure (NCCL's text).
    pub fn init_rank(device: Device, size: usize, rank: usize, id: &UniqueId) -> Result<Comm> {
        let lib = loaded()?;
        if rank >= size || size > c_int::MAX as usize {
            return Err(RuntimeError::InvalidArgument(format!(
                "ncclCommInitRank: rank {rank} of a communicator of {size} rank(s)"
            )));
        }
        let _current = device.use_scoped()?;
        let mut raw: ncclComm_t = std::ptr::null_mut();
        // SAFETY: an out-pointer to a local; the id by value, as the prototype takes it.
        let code =
            unsafe { (lib.comm_init_rank)(&mut raw, size as c_int, id.raw(), rank as c_int) };
        check(lib, "ncclCommInitRank", code, None)?;
        Ok(Comm { raw, device, rank, size })
    }

    /// A communicator over `devices` in this process, one rank per device in order
    /// (`ncclCommInitAll`; CuPy's `NcclCommunicator.initAll`). Errors: NCCL missing, no
    /// devices or one named twice, a device failure.
    pub fn init_all(devices: &[Device]) -> Result<Vec<Comm>> {
        let lib = loaded()?;
        let ids: Vec<c_int> = devices.iter().map(|d| d.id() as c_int).collect();
        if ids.is_empty() || (1..ids.len()).any(|i| ids[..i].contains(&ids[i])) {
            return Err(RuntimeError::InvalidArgument(format!(
                "ncclCommInitAll: devices {ids:?} (one or more, each once)"
            )));
        }
        // NCCL binds each device's current context (the primary one kiln uses).
        for d in devices {
            d.state()?;
        }
        let mut raws: Vec<ncclComm_t> = vec![std::ptr::null_mut(); ids.len()];
        // SAFETY: `raws` holds one slot per device of `ids`.
        let code =
            unsafe { (lib.comm_init_all)(raws.as_mut_ptr(), ids.len() as c_int, ids.as_ptr()) };
        check(lib, "ncclCommInitAll", code, None)?;
        let size = devices.len();
        Ok(raws
            .into_iter()
            .zip(devices)
            .enumerate()
            .map(|(rank, (raw, &device))| Comm { raw, device, rank, size })
            .collect())
    }

    /// This rank (0-based).
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The device of this rank.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Checks that `buf` and `stream` are of this rank's device and `buf` holds whole elements;
    /// returns its element count.
    fn elements(&self, call: &str, buf: &DeviceBuffer, dtype: DataType) -> Result<usize> {
        if buf.device() != self.device {
            return Err(RuntimeError::InvalidArgument(format!(
                "{call}: a buffer on {} for the communicator's rank {} on {}",
                buf.device(),
                self.rank,
                self.device
            )));
        }
        if buf.len() % dtype.size() != 0 {
            return Err(RuntimeError::InvalidArgument(format!(
                "{call}: a buffer of {} bytes is not whole {dtype:?} elements",
                buf.len()
            )));
        }
        Ok(buf.len() / dtype.size())
    }

    fn stream_check(&self, call: &str, stream: &Stream) -> Result<()> {
        if stream.device() != self.device {
            return Err(RuntimeError::InvalidArgument(format!(
                "{call}: a stream of {} for the communicator's rank {} on {}",
                stream.device(),
                self.rank,
                self.device
            )));
        }
        Ok(())
    }

    fn counts(
        &self,
        call: &str,
        send: &DeviceBuffer,
        recv: &DeviceBuffer,
        dtype: DataType,
        (send_per, recv_per): (usize, usize),
        stream: &Stream,
    ) -> Result<usize> {
        self.stream_check(call, stream)?;
        let (s, r) = (self.elements(call, send, dtype)?, self.elements(call, recv, dtype)?);
        if s * recv_per != r * send_per {
            return Err(RuntimeError::InvalidArgument(format!(
                "{call}: {s} element(s) sent and {r} received, for {} rank(s)",
                self.size
            )));
        }
        Ok(s / send_per)
    }

    fn run(&self, call: &'static str, code: impl FnOnce(&Nccl) -> c_int) -> Result<()> {
        let lib = loaded()?;
        let _current = self.device.use_scoped()?;
        check(lib, call, code(lib), Some(self.raw))
    }

    /// Element-wise reduction of every rank's `send` into every rank's `recv`
    /// (`ncclAllReduce`); `send` and `recv` the same length (they may be the same buffer's
    /// memory only through the raw API). Queued on `stream`.
    pub fn all_reduce(
        &self,
        send: &DeviceBuffer,
        recv: &mut DeviceBuffer,
        dtype: DataType,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        let n = self.counts("ncclAllReduce", send, recv, dtype, (1, 1), stream)?;
        // SAFETY: both buffers are live on the communicator's device and hold `n` elements.
        self.run("ncclAllReduce", |l| unsafe {
            (l.all_reduce)(
                ptr(send),
                ptr_mut(recv),
                n,
                dtype.raw(),
                op.raw(),
                self.raw,
                stream.raw(),
            )
        })
    }

    /// Element-wise reduction of every rank's `send` into `recv` on rank `root`
    /// (`ncclReduce`); other ranks' `recv` is not written (but must be as long).
    pub fn reduce(
        &self,
        send: &DeviceBuffer,
        recv: &mut DeviceBuffer,
        dtype: DataType,
        op: ReduceOp,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        let n = self.counts("ncclReduce", send, recv, dtype, (1, 1), stream)?;
        let root = self.root("ncclReduce", root)?;
        // SAFETY: as `all_reduce`.
        self.run("ncclReduce", |l| unsafe {
            (l.reduce)(
                ptr(send),
                ptr_mut(recv),
                n,
                dtype.raw(),
                op.raw(),
                root,
                self.raw,
                stream.raw(),
            )
        })
    }

    /// Rank `root`'s `send` copied into every rank's `recv` (`ncclBroadcast`; `send` is read
    /// on the root only, but must be as long everywhere).
    pub fn broadcast(
        &self,
        send: &DeviceBuffer,
        recv: &mut DeviceBuffer,
        dtype: DataType,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        let n = self.counts("ncclBroadcast", send, recv, dtype, (1, 1), stream)?;
        let root = self.root("ncclBroadcast", root)?;
        // SAFETY: as `all_reduce`.
        self.run("ncclBroadcast", |l| unsafe {
            (l.broadcast)(ptr(send), ptr_mut(recv), n, dtype.raw(), root, self.raw, stream.raw())
        })
    }

    /// [`Comm::broadcast`] in place: rank `root`'s `buf` copied into every other rank's `buf`.
    pub fn broadcast_in_place(
        &self,
        buf: &mut DeviceBuffer,
        dtype: DataType,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        let (n, root) = self.single("ncclBroadcast", buf, dtype, root, stream)?;
        let p = ptr_mut(buf);
        // SAFETY: `buf` is live on the communicator's device and holds `n` elements; the same
        // pointer for both buffers is NCCL's in-place broadcast.
        self.run("ncclBroadcast", |l| unsafe {
            (l.broadcast)(p, p, n, dtype.raw(), root, self.raw, stream.raw())
        })
    }

    /// Every rank's `send` gathered into every rank's `recv`, in rank order
    /// (`ncclAllGather`); `recv` is `size` times as long as `send`.
    pub fn all_gather(
        &self,
        send: &DeviceBuffer,
        recv: &mut DeviceBuffer,
        dtype: DataType,
        stream: &Stream,
    ) -> Result<()> {
        let n = self.counts("ncclAllGather", send, recv, dtype, (1, self.size), stream)?;
        // SAFETY: `recv` holds `size * n` elements, `send` `n`.
        self.run("ncclAllGather", |l| unsafe {
            (l.all_gather)(ptr(send), ptr_mut(recv), n, dtype.raw(), self.raw, stream.raw())
        })
    }

    /// The reduction of every rank's `send`, rank `r` receiving its `r`-th block of it in
    /// `recv` (`ncclReduceScatter`); `send` is `size` times as long as `recv`.
    pub fn reduce_scatter(
        &self,
        send: &DeviceBuffer,
        recv: &mut DeviceBuffer,
        dtype: DataType,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        let n = self.counts("ncclReduceScatter", send, recv, dtype, (self.size, 1), stream)?;
        // SAFETY: `send` holds `size * n` elements, `recv` `n`.
        self.run("ncclReduceScatter", |l| unsafe {
            (l.reduce_scatter)(
                ptr(send),
                ptr_mut(recv),
                n,
                dtype.raw(),
                op.raw(),
                self.raw,
                stream.raw(),
            )
        })
    }

    /// Sends `buf` to rank `peer` (`ncclSend`), which must [`recv`](Comm::recv) as many
    /// elements.
    pub fn send(
        &self,
        buf: &DeviceBuffer,
        dtype: DataType,
        peer: usize,
        stream: &Stream,
    ) -> Result<()> {
        let (n, peer) = self.single("ncclSend", buf, dtype, peer, stream)?;
        // SAFETY: `buf` is live on the communicator's device and holds `n` elements.
        self.run("ncclSend", |l| unsafe {
            (l.send)(ptr(buf), n, dtype.raw(), peer, self.raw, stream.raw())
        })
    }

    /// Receives `buf` from rank `peer` (`ncclRecv`).
    pub fn recv(
        &self,
        buf: &mut DeviceBuffer,
        dtype: DataType,
        peer: usize,
        stream: &Stream,
    ) -> Result<()> {
        let (n, peer) = self.single("ncclRecv", buf, dtype, peer, stream)?;
        // SAFETY: as `send`, written.
        self.run("ncclRecv", |l| unsafe {
            (l.recv)(ptr_mut(buf), n, dtype.raw(), peer, self.raw, stream.raw())
        })
    }

    /// The checks of a one-buffer call: its elements, and `rank` (a peer or root) as NCCL's.
    fn single(
        &self,
        call: &str,
        buf: &DeviceBuffer,
        dtype: DataType,
        rank: usize,
        stream: &Stream,
    ) -> Result<(usize, c_int)> {
        self.stream_check(call, stream)?;
        Ok((self.elements(call, buf, dtype)?, self.root(call, rank)?))
    }

    fn root(&self, call: &str, rank: usize) -> Result<c_int> {
        if rank >= self.size {
            return Err(RuntimeError::InvalidArgument(format!(
                "{call}: rank {rank} of a communicator of {} rank(s)",
                self.size
            )));
        }
        Ok(rank as c_int)
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        if let Ok(lib) = loaded() {
            let _current = self.device.use_scoped();
            // SAFETY: the communicator was made by NCCL and is destroyed once; an error cannot
            // be reported from a destructor.
            let _ = unsafe { (lib.comm_destroy)(self.raw) };
        }
    }
}

fn ptr(buf: &DeviceBuffer) -> *const c_void {
    buf.ptr() as usize as *const c_void
}

fn ptr_mut(buf: &mut DeviceBuffer) -> *mut c_void {
    buf.ptr() as usize as *mut c_void
}
