//! `kiln::distributed`: collectives between GPUs on kiln arrays, over NCCL (CuPy's
//! `cupyx.distributed.init_process_group` and its `NCCLBackend`).
//!
//! A [`Communicator`] is one rank, bound to one CUDA device. Two ways to make them:
//!
//! - **One process driving every GPU of a host**: [`Communicator::init_all`] gives one per
//!   device; hand each to its own thread (`std::thread::scope`), which makes its device current
//!   (`kiln::cuda::Device::use_scoped`) and calls the collectives on its rank (NCCL's
//!   one-thread-per-GPU model). Each thread's arrays are computed on its device.
//! - **One process per GPU** (torchrun, SLURM, `mpirun`): [`Communicator::from_env`] reads
//!   `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT` ([`Launch`]), uses GPU
//!   `LOCAL_RANK` (modulo the host's devices), and gets NCCL's id from rank 0 over a small TCP
//!   rendezvous ([`rendezvous`]); [`Communicator::init`] takes the same explicitly (CuPy's
//!   `init_process_group(n_devices, rank, host=, port=)`).
//!
//! Every rank calls each collective in the same order with arrays of the same dtype and shape
//! (as NCCL and CuPy require; a mismatch is NCCL's to detect, and may hang). Inputs are
//! computed first if lazy (on the communicator's device); an input held on another device is an
//! [`Error::DeviceMismatch`]. The operation is queued on the device's current stream after the
//! inputs' writers, like a kernel: the call returns at once and the result is an array held on
//! the device, ordered on that stream. Results are new arrays: kiln arrays are values.
//!
//! | CuPy (`NCCLBackend`) | kiln | result |
//! |---|---|---|
//! | `all_reduce(in, out, op)` | [`Communicator::all_reduce`] | the reduction, on every rank |
//! | `reduce(in, out, root, op)` | [`Communicator::reduce`] | `Some` on `root`, `None` elsewhere |
//! | `broadcast(in_out, root)` | [`Communicator::broadcast`] | `root`'s array, on every rank |
//! | `all_gather(in, out, count)` | [`Communicator::all_gather`] | shape `(size, *in.shape)` |
//! | `reduce_scatter(in, out, count, op)` | [`Communicator::reduce_scatter`] | rank `r`'s block `r` of the reduction along axis 0 |
//! | `send(array, peer)`, `recv(out, peer)` | [`Communicator::send`], [`Communicator::recv`] | |
//! | `barrier()` | [`Communicator::barrier`] | waits for every rank |
//!
//! Reductions take NCCL's types: bool (`max`/`min` only: any/all), int8, uint8, int32, uint32,
//! int64, uint64, float16, bfloat16, float32, float64, and complex64/complex128 (`sum` and
//! `avg` only, as float pairs); int16 and uint16 have no NCCL type (an [`Error::Distributed`]).
//! Data movement (broadcast, gathers, send/recv) takes every dtype, as bytes. `avg` of integers
//! truncates, as NCCL's.
//!
//! Without NCCL (`libnccl.so.2`; found as `kiln_runtime::nccl` says, `KILN_NCCL` naming it),
//! making a communicator is `RuntimeError::NcclUnavailable`; on the CPU backend, an
//! [`Error::Value`] that says collectives need CUDA devices. Set `NCCL_NVLS_ENABLE=0` on
//! machines where NVLink SHARP must stay off. `docs/distributed.md` covers runs over several
//! hosts.

mod launch;
pub mod rendezvous;

use std::sync::Arc;
use std::time::Duration;

use kiln_ir::DType;
use kiln_runtime::nccl::{self, Comm, DataType};
use kiln_runtime::{Backend, Device, DeviceBuffer, Stream};

use crate::array::Array;
use crate::error::{value_err, Error, Result};
use crate::gpu::{DeviceArray, ForeignInputs};

pub use kiln_runtime::nccl::{ReduceOp, UniqueId};
pub use launch::{Launch, DEFAULT_PORT};

/// How long ranks wait for each other at the rendezvous (rank 0 for the others, the others for
/// rank 0 to listen).
pub const RENDEZVOUS_TIMEOUT: Duration = Duration::from_secs(300);

/// One rank of a group of GPUs that reduce and exchange arrays together (an NCCL
/// communicator; CuPy's `NCCLBackend`). `Send` but not `Sync`: one thread uses it at a time.
#[derive(Debug)]
pub struct Communicator {
    comm: Comm,
}

fn cuda_backend(op: &str) -> Result<()> {
    match crate::backend() {
        Backend::Cuda(_) => Ok(()),
        Backend::Cpu => Err(value_err(
            op,
            "collectives need CUDA devices, but the backend is the CPU (no CUDA device, or \
             KILN_DEVICE=cpu)",
        )),
    }
}

fn in_op(op: &str) -> impl Fn(kiln_runtime::RuntimeError) -> Error + '_ {
    move |source| Error::RuntimeIn { op: op.to_string(), source }
}

impl Communicator {
    /// One communicator per device of `devices` (ordinals), rank `r` on `devices[r]`, for one
    /// process driving them all (`ncclCommInitAll`). Errors: the CPU backend, NCCL missing
    /// (`RuntimeError::NcclUnavailable`), a device that does not exist or is named twice.
    pub fn init_all(devices: &[usize]) -> Result<Vec<Communicator>> {
        let op = "Communicator::init_all";
        cuda_backend(op)?;
        let devices: Vec<Device> = devices
            .iter()
            .map(|&d| Device::new(d))
            .collect::<kiln_runtime::Result<_>>()
            .map_err(in_op(op))?;
        let comms = Comm::init_all(&devices).map_err(in_op(op))?;
        Ok(comms.into_iter().map(|comm| Communicator { comm }).collect())
    }

    /// Rank `rank` of `n_devices` ranks on device `device`, meeting rank 0 at `host:port`
    /// (CuPy's `init_process_group(n_devices, rank, host=host, port=port)`): rank 0 makes
    /// NCCL's id and serves it on `port`; the others fetch it ([`rendezvous`], waiting up to
    /// [`RENDEZVOUS_TIMEOUT`]). Every rank calls this; it returns once all have joined.
    /// Errors: the CPU backend, NCCL missing, `rank >= n_devices`, the rendezvous failing.
    pub fn init(
        n_devices: usize,
        rank: usize,
        host: &str,
        port: u16,
        device: usize,
    ) -> Result<Communicator> {
        let op = "Communicator::init";
        cuda_backend(op)?;
        if rank >= n_devices {
            return Err(Error::Distributed {
                op: op.into(),
                message: format!("rank {rank} of {n_devices} rank(s)"),
            });
        }
        let device = Device::new(device).map_err(in_op(op))?;
        let id = if rank == 0 {
            let id = UniqueId::new().map_err(in_op(op))?;
            if n_devices > 1 {
                // The other ranks fetch the id while rank 0 joins NCCL's own bootstrap.
                let serve = std::thread::spawn(move || {
                    rendezvous::serve(port, n_devices, &id, RENDEZVOUS_TIMEOUT)
                });
                let comm = Comm::init_rank(device, n_devices, 0, &id).map_err(in_op(op));
                serve.join().map_err(|_| value_err(op, "the rendezvous thread panicked"))??;
                return Ok(Communicator { comm: comm? });
            }
            id
        } else {
            rendezvous::fetch(host, port, rank, n_devices, RENDEZVOUS_TIMEOUT)?
        };
        let comm = Comm::init_rank(device, n_devices, rank, &id).map_err(in_op(op))?;
        Ok(Communicator { comm })
    }

    /// This process's rank as its launcher describes it ([`Launch::from_env`]: torchrun's or
    /// SLURM's variables), on GPU `LOCAL_RANK` modulo the host's devices.
    pub fn from_env() -> Result<Communicator> {
        let launch = Launch::from_env()?;
        Communicator::from_launch(&launch)
    }

    /// [`Communicator::from_env`] from a [`Launch`].
    pub fn from_launch(launch: &Launch) -> Result<Communicator> {
        cuda_backend("Communicator::from_env")?;
        let devices = Device::all().len().max(1);
        Communicator::init(
            launch.world_size,
            launch.rank,
            &launch.master_addr,
            launch.master_port,
            launch.local_rank % devices,
        )
    }

    /// This rank, `0..size()`.
    pub fn rank(&self) -> usize {
        self.comm.rank()
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.comm.size()
    }

    /// The device of this rank.
    pub fn device(&self) -> Device {
        self.comm.device()
    }

    /// `a`'s value on this rank's device, computed there if lazy (a value held on another
    /// device is the materialisation's [`Error::DeviceMismatch`]).
    fn operand(&self, op: &str, a: &Array) -> Result<Arc<DeviceArray>> {
        let _current = self.device().use_scoped().map_err(in_op(op))?;
        a.try_to_device_array().map_err(|e| e.within(op))
    }

    /// Runs `f` with this rank's device current, on its current stream, after the writers of
    /// `inputs`; `out`, the result's dtype and shape, is allocated on that stream for `f` to
    /// write and returned as an array held on the device.
    fn queue(
        &self,
        op: &str,
        inputs: &[&Arc<DeviceArray>],
        out: Option<(DType, &[usize])>,
        f: impl FnOnce(&Stream, Option<&mut DeviceBuffer>) -> kiln_runtime::Result<()>,
    ) -> Result<Option<Array>> {
        let _current = self.device().use_scoped().map_err(in_op(op))?;
        let stream = Stream::current_on(self.device()).map_err(in_op(op))?;
        let _ordered = ForeignInputs::order_streams(
            stream.clone(),
            inputs.iter().map(|a| a.buffer().stream()),
        )
        .map_err(|e| Error::from(e).within(op))?;
        let Some((dtype, shape)) = out else {
            f(&stream, None).map_err(in_op(op))?;
            return Ok(None);
        };
        let bytes = kiln_ir::shape::checked_nbytes(shape, dtype.itemsize()).ok_or_else(|| {
            Error::Distributed { op: op.into(), message: format!("{dtype} {shape:?} is too big") }
        })?;
        let mut buf = DeviceBuffer::alloc_on(&stream, bytes).map_err(in_op(op))?;
        f(&stream, Some(&mut buf)).map_err(in_op(op))?;
        let d =
            DeviceArray::from_buffer(buf, dtype, shape).map_err(|e| Error::from(e).within(op))?;
        Ok(Some(Array::from_device(Arc::new(d))))
    }

    /// [`Communicator::queue`] of an operation with one result.
    fn queue_one(
        &self,
        op: &str,
        inputs: &[&Arc<DeviceArray>],
        (dtype, shape): (DType, &[usize]),
        f: impl FnOnce(&Stream, &mut DeviceBuffer) -> kiln_runtime::Result<()>,
    ) -> Result<Array> {
        let out = self.queue(op, inputs, Some((dtype, shape)), |stream, out| {
            f(stream, out.expect("an output was asked for"))
        })?;
        Ok(out.expect("an output was asked for"))
    }

    /// The element-wise reduction `op` of every rank's `a` (same dtype and shape on every
    /// rank), on every rank (`ncclAllReduce`; CuPy's `all_reduce`). Errors: a dtype NCCL cannot
    /// reduce with `op` ([`Error::Distributed`]), `a` held on another device, NCCL's errors.
    pub fn all_reduce(&self, a: &Array, op: ReduceOp) -> Result<Array> {
        let name = "all_reduce";
        let dtype = reduce_type(name, a.dtype(), op)?;
        let d = self.operand(name, a)?;
        self.queue_one(name, &[&d], (a.dtype(), a.shape()), |stream, out| {
            self.comm.all_reduce(d.buffer(), out, dtype, op, stream)
        })
    }

    /// The element-wise reduction `op` of every rank's `a`, on rank `root` (`ncclReduce`):
    /// `Some` there, `None` on the other ranks. Errors: as [`Communicator::all_reduce`], and a
    /// `root` out of range.
    pub fn reduce(&self, a: &Array, root: usize, op: ReduceOp) -> Result<Option<Array>> {
        let name = "reduce";
        self.check_rank(name, "root", root)?;
        let dtype = reduce_type(name, a.dtype(), op)?;
        let d = self.operand(name, a)?;
        let out = self.queue_one(name, &[&d], (a.dtype(), a.shape()), |stream, out| {
            self.comm.reduce(d.buffer(), out, dtype, op, root, stream)
        })?;
        Ok((self.rank() == root).then_some(out))
    }

    /// Rank `root`'s `a`, on every rank (`ncclBroadcast`; CuPy's `broadcast`). Every rank
    /// passes an array of the same dtype and shape; only `root`'s values are read (the others'
    /// are not computed). Errors: a `root` out of range, NCCL's errors.
    pub fn broadcast(&self, a: &Array, root: usize) -> Result<Array> {
        let name = "broadcast";
        self.check_rank(name, "root", root)?;
        let d = (self.rank() == root).then(|| self.operand(name, a)).transpose()?;
        let inputs: Vec<&Arc<DeviceArray>> = d.iter().collect();
        self.queue_one(name, &inputs, (a.dtype(), a.shape()), |stream, out| match &d {
            Some(d) => self.comm.broadcast(d.buffer(), out, DataType::Uint8, root, stream),
            // Other ranks only receive, in place.
            None => self.comm.broadcast_in_place(out, DataType::Uint8, root, stream),
        })
    }

    /// Every rank's `a` (same dtype and shape on every rank), stacked in rank order: shape
    /// `(size, *a.shape)` on every rank (`ncclAllGather`; CuPy's `all_gather`, whose flat
    /// output this is reshaped).
    pub fn all_gather(&self, a: &Array) -> Result<Array> {
        let name = "all_gather";
        let d = self.operand(name, a)?;
        let shape: Vec<usize> =
            [self.size()].into_iter().chain(a.shape().iter().copied()).collect();
        self.queue_one(name, &[&d], (a.dtype(), &shape), |stream, out| {
            self.comm.all_gather(d.buffer(), out, DataType::Uint8, stream)
        })
    }

    /// The reduction `op` of every rank's `a`, split along axis 0 into `size` blocks, rank `r`
    /// getting block `r`: shape `(a.shape[0] / size, *a.shape[1:])` (`ncclReduceScatter`;
    /// CuPy's `reduce_scatter`). Errors: a 0-d `a`, an axis 0 not a multiple of the ranks, a
    /// dtype NCCL cannot reduce with `op`.
    pub fn reduce_scatter(&self, a: &Array, op: ReduceOp) -> Result<Array> {
        let name = "reduce_scatter";
        let size = self.size();
        let Some(&rows) = a.shape().first().filter(|&&r| r % size == 0) else {
            return Err(Error::Distributed {
                op: name.into(),
                message: format!(
                    "an array of shape {:?} does not split along axis 0 into {size} blocks",
                    a.shape()
                ),
            });
        };
        let dtype = reduce_type(name, a.dtype(), op)?;
        let d = self.operand(name, a)?;
        let mut shape = a.shape().to_vec();
        shape[0] = rows / size;
        self.queue_one(name, &[&d], (a.dtype(), &shape), |stream, out| {
            self.comm.reduce_scatter(d.buffer(), out, dtype, op, stream)
        })
    }

    /// Sends `a` to rank `peer`, which receives it with [`Communicator::recv`] of the same
    /// dtype and shape (`ncclSend`). Queued on the stream; `a` stays valid.
    pub fn send(&self, a: &Array, peer: usize) -> Result<()> {
        let name = "send";
        self.check_rank(name, "peer", peer)?;
        let d = self.operand(name, a)?;
        self.queue(name, &[&d], None, |stream, _| {
            self.comm.send(d.buffer(), DataType::Uint8, peer, stream)
        })?;
        Ok(())
    }

    /// Receives from rank `peer` the array it [`send`](Communicator::send)s, of `shape` and
    /// `dtype` (`ncclRecv`). Errors: a `peer` out of range, a shape too big for memory.
    pub fn recv(&self, shape: &[usize], dtype: DType, peer: usize) -> Result<Array> {
        let name = "recv";
        self.check_rank(name, "peer", peer)?;
        self.queue_one(name, &[], (dtype, shape), |stream, out| {
            self.comm.recv(out, DataType::Uint8, peer, stream)
        })
    }

    /// Waits until every rank has reached its `barrier` (CuPy's `barrier()`): an all-reduce of
    /// one element, waited for on the host.
    pub fn barrier(&self) -> Result<()> {
        let name = "barrier";
        let token = crate::zeros(&[1], DType::Int32);
        let done = self.all_reduce(&token, ReduceOp::Sum).map_err(|e| e.within(name))?;
        let _current = self.device().use_scoped().map_err(in_op(name))?;
        done.try_eval()?;
        Stream::current_on(self.device()).and_then(|s| s.synchronize()).map_err(in_op(name))
    }

    fn check_rank(&self, op: &str, what: &str, rank: usize) -> Result<()> {
        if rank >= self.size() {
            return Err(Error::Distributed {
                op: op.into(),
                message: format!("{what} {rank} of a communicator of {} rank(s)", self.size()),
            });
        }
        Ok(())
    }
}

/// Runs `f` between NCCL's `groupStart` and `groupEnd`: collectives it queues on several
/// communicators of this process (one thread driving every GPU), or a rank's sends and
/// receives to several peers, are launched together instead of waiting on each other.
pub fn group<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    let mut inner: Option<Result<R>> = None;
    let outer = nccl::group(|| {
        inner = Some(f());
        Ok(())
    });
    let r = inner.unwrap_or_else(|| Err(value_err("group", "NCCL's group did not start")))?;
    outer.map_err(in_op("group"))?;
    Ok(r)
}

/// NCCL's type for reducing `dtype` with `op` (complex values as pairs of their floats).
fn reduce_type(name: &str, dtype: DType, op: ReduceOp) -> Result<DataType> {
    use DType::*;
    let refuse = |why: &str| Error::Distributed {
        op: name.into(),
        message: format!("{} of {dtype}: {why}", op.name()),
    };
    Ok(match dtype {
        Bool if matches!(op, ReduceOp::Max | ReduceOp::Min) => DataType::Uint8,
        Bool => return Err(refuse("booleans reduce by max (any) or min (all) only")),
        Int8 => DataType::Int8,
        UInt8 => DataType::Uint8,
        Int32 => DataType::Int32,
        UInt32 => DataType::Uint32,
        Int64 => DataType::Int64,
        UInt64 => DataType::Uint64,
        Float16 => DataType::Float16,
        BFloat16 => DataType::Bfloat16,
        Float32 => DataType::Float32,
        Float64 => DataType::Float64,
        Complex64 if matches!(op, ReduceOp::Sum | ReduceOp::Avg) => DataType::Float32,
        Complex128 if matches!(op, ReduceOp::Sum | ReduceOp::Avg) => DataType::Float64,
        Complex64 | Complex128 => {
            return Err(refuse("complex values reduce by sum or avg only (as float pairs)"))
        }
        Int16 | UInt16 => return Err(refuse("NCCL has no 16-bit integer type")),
    })
}

#[cfg(test)]
mod tests;
