//! Arrays on several CUDA devices (CuPy's `with cupy.cuda.Device(n):`, the array API's
//! `x.device` / `x.to_device(d)`).
//!
//! An array whose value was computed on a device (or copied there by [`Array::to_device`]) lives
//! on that device. Host data (`kiln::array`, `from_host`) and lazy expressions belong to no
//! device: a materialisation runs on the calling thread's current device
//! ([`crate::current_backend`]: the innermost `Device::use_scoped`, else `KILN_DEVICE`'s), host
//! inputs are copied there, and an input held on another device is an
//! [`Error::DeviceMismatch`]. Writing an operation whose operands are held on two different
//! devices is that error at once, naming them. Each device keeps its own plans' loaded kernels,
//! memory pool, streams and modules (plans themselves are device-independent and shared).

use kiln_runtime::{Backend, Device};

use crate::array::Array;
use crate::error::{Error, Result};
use crate::gpu::DeviceArray;
use crate::materialize::on_device_at;

/// Errors where two of `inputs` are held on different devices (host-held and lazy inputs go
/// anywhere).
pub(crate) fn check_same_device<A: std::borrow::Borrow<Array>>(
    op: &str,
    inputs: &[A],
) -> Result<()> {
    let mut first: Option<(usize, Device)> = None;
    for (k, a) in inputs.iter().enumerate() {
        let a: &Array = a.borrow();
        let Some(d) = a.held_device() else { continue };
        match first {
            None => first = Some((k, d)),
            Some((j, e)) if e != d => {
                return Err(Error::DeviceMismatch {
                    op: op.to_string(),
                    operand: format!("{k} ({})", a.describe()),
                    on: d.to_string(),
                    expected: format!("operand {j} is on {e}"),
                })
            }
            Some(_) => {}
        }
    }
    Ok(())
}

impl Array {
    /// The device holding the array's value only there: computed on it or copied to it
    /// (`ndarray.device` in CuPy). `None` for host data, lazy arrays and the CPU backend.
    pub(crate) fn held_device(&self) -> Option<Device> {
        match (self.value(), self.device_value()) {
            (None, Some(d)) => Some(d.buffer().device()),
            _ => None,
        }
    }

    /// The CUDA device the array lives on (`x.device` in CuPy and the array API): the device
    /// whose memory holds its value, for an array computed on one or copied to one with
    /// [`Array::to_device`]. `None` for an array that belongs to no device (host data, not yet
    /// computed, or the CPU backend): such an array runs on, or is copied to, the current device
    /// where it is used.
    pub fn device(&self) -> Option<Device> {
        self.held_device()
    }

    /// The array on CUDA device `device` (the array API's `x.to_device(device)`; in CuPy,
    /// `with cupy.cuda.Device(n): cupy.asarray(x)`): computed first where it is lazy (on the
    /// current device), then copied: from another device peer to peer (`cuMemcpyPeerAsync`,
    /// direct over NVLink or PCIe where the devices can reach each other), from the host by an
    /// upload. The result lives on `device` (same dtype and shape); an array already there is
    /// returned as it is. The copy is queued on `device`'s current stream after the value's
    /// writer.
    ///
    /// Errors: the CPU backend ([`Error::Value`]), no device `device`
    /// (`RuntimeError::DeviceUnavailable`), an evaluation or copy failure.
    pub fn try_to_device(&self, device: usize) -> Result<Array> {
        let op = "to_device";
        if !matches!(crate::backend(), Backend::Cuda(_)) {
            return Err(crate::error::value_err(
                op,
                "the backend is the CPU (no CUDA device, or KILN_DEVICE=cpu)",
            ));
        }
        let device =
            Device::new(device).map_err(|e| Error::RuntimeIn { op: op.into(), source: e })?;
        if let Some(c) = crate::layout::c_order_reader(self) {
            // A view of a buffer in another order: its C-ordered copy moves.
            return c.try_to_device(device.id());
        }
        match self.held_device() {
            Some(d) if d == device => return Ok(self.clone()),
            Some(_) => {
                let src = self.device_value().expect("held on a device");
                let _current = device.use_scoped()?;
                let moved = src.copy_to(device).map_err(|e| Error::from(e).within(op))?;
                return Ok(Array::from_device(std::sync::Arc::new(moved)));
            }
            None => {}
        }
        if self.value().is_none() {
            // Lazy: computed on the current device (and kept there), then moved.
            self.try_eval()?;
            if self.held_device().is_some() {
                return self.try_to_device(device.id());
            }
        }
        let d: std::sync::Arc<DeviceArray> = on_device_at(self, device, op)?;
        Ok(Array::from_device(d))
    }

    /// [`Array::try_to_device`], panicking on error.
    #[track_caller]
    pub fn to_device(&self, device: usize) -> Array {
        crate::unwrap(self.try_to_device(device))
    }
}
