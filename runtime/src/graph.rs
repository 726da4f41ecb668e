//! CUDA Graphs by stream capture, as CuPy's `Stream.begin_capture()` / `end_capture()` and
//! `cupy.cuda.graph.Graph`: the work queued on a stream between the two is recorded, not run,
//! and [`Graph::launch`] replays it (one launch for the whole sequence).
//!
//! What may be captured is CUDA's rule: kernel launches ([`crate::Function::launch_on`]),
//! copies and memsets between buffers allocated before the capture, events, host functions.
//! (A frontend `RawKernel` launch also orders itself after the current stream with an event,
//! which CUDA may refuse on a capturing stream: capture `Function` launches.) Synchronising, querying or allocating with `cuMemAlloc`
//! during a capture is refused by the driver (in the `Global` and `ThreadLocal` modes it also
//! invalidates the capture), so kiln's lazy arrays must be evaluated before it begins: their
//! pool allocates with `cuMemAlloc` and checks its events. A graph replays the same pointers and
//! arguments it captured.

use cudarc::driver::sys;

use crate::{
    device::DeviceState,
    error::{check_raw, Result},
    stream::Stream,
    RuntimeError,
};

/// How a capture treats unsafe CUDA calls of other threads (`CUstreamCaptureMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CaptureMode {
    /// Unsafe calls of any thread are refused during the capture.
    Global,
    /// Unsafe calls of this thread are refused.
    ThreadLocal,
    /// Nothing is refused (CUDA still forbids synchronising a capturing stream).
    #[default]
    Relaxed,
}

impl CaptureMode {
    fn raw(self) -> sys::CUstreamCaptureMode {
        match self {
            CaptureMode::Global => sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
            CaptureMode::ThreadLocal => {
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
            }
            CaptureMode::Relaxed => sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
        }
    }
}

/// A captured and instantiated CUDA graph (`CUgraph` and its `CUgraphExec`): launch it on any
/// stream of its device, as often as needed. Not `Sync`: CUDA does not synchronise a graph's
/// launches from several threads.
pub struct Graph {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    device: &'static DeviceState,
    nodes: usize,
}

// SAFETY: the handles may be used from any thread, one at a time (`Graph` is not `Sync`).
unsafe impl Send for Graph {}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("device", &self.device.id)
            .field("nodes", &self.nodes)
            .finish()
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        if let Ok(_bound) = self.device.bind() {
            // SAFETY: made by `end_capture`, destroyed once; a launched graph's pending work
            // completes first (the driver keeps it alive).
            unsafe {
                let _ = sys::cuGraphExecDestroy(self.exec);
                let _ = sys::cuGraphDestroy(self.graph);
            }
        }
    }
}

impl Stream {
    /// Starts recording the work queued on this stream into a graph (`cuStreamBeginCapture`;
    /// CuPy's `stream.begin_capture()`). Errors: the null stream (CUDA cannot capture the
    /// legacy stream), a stream already capturing.
    pub fn begin_capture(&self, mode: CaptureMode) -> Result<()> {
        if self.raw().is_null() {
            return Err(RuntimeError::InvalidArgument(
                "the null stream cannot be captured: capture a stream made with Stream::new or Stream::non_blocking".into(),
            ));
        }
        let _bound = self.state().bind()?;
        // SAFETY: a live stream.
        check_raw("cuStreamBeginCapture", unsafe {
            sys::cuStreamBeginCapture_v2(self.raw(), mode.raw())
        })
    }

    /// Whether the stream is capturing (`cuStreamIsCapturing`; CuPy's `is_capturing()`).
    /// Errors: a capture that an illegal call invalidated.
    pub fn is_capturing(&self) -> Result<bool> {
        let _bound = self.state().bind()?;
        let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: a live stream; an out-pointer to a local.
        check_raw("cuStreamIsCapturing", unsafe {
            sys::cuStreamIsCapturing(self.raw(), &mut status)
        })?;
        match status {
            sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE => Ok(false),
            sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE => Ok(true),
            sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_INVALIDATED => {
                Err(RuntimeError::InvalidArgument(
                    "the stream's capture was invalidated by a call CUDA forbids during a capture"
                        .into(),
                ))
            }
        }
    }

    /// Ends the capture and instantiates what it recorded (`cuStreamEndCapture`,
    /// `cuGraphInstantiateWithFlags`; CuPy's `stream.end_capture()`). Errors: a stream not
    /// capturing, a capture invalidated by a forbidden call, a graph CUDA cannot instantiate.
    pub fn end_capture(&self) -> Result<Graph> {
        let device = self.state();
        let _bound = device.bind()?;
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: a live stream; an out-pointer to a local.
        check_raw("cuStreamEndCapture", unsafe {
            sys::cuStreamEndCapture(self.raw(), &mut graph)
        })?;
        if graph.is_null() {
            return Err(RuntimeError::InvalidArgument("the capture recorded no graph".into()));
        }
        let mut nodes = 0usize;
        // SAFETY: a live graph; a null node array asks for the count only.
        let counted = check_raw("cuGraphGetNodes", unsafe {
            sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut nodes)
        });
        let mut exec: sys::CUgraphExec = std::ptr::null_mut();
        let made = counted.and_then(|()| {
            // SAFETY: a live graph; an out-pointer to a local.
            check_raw("cuGraphInstantiateWithFlags", unsafe {
                sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0)
            })
        });
        if let Err(e) = made {
            // SAFETY: the graph made above, destroyed once.
            let _ = unsafe { sys::cuGraphDestroy(graph) };
            return Err(e);
        }
        Ok(Graph { graph, exec, device, nodes })
    }
}

impl Graph {
    /// Replays the graph on `stream` (`cuGraphLaunch`; CuPy's `Graph.launch(stream)`), after the
    /// work queued there before. Errors: a stream of another device.
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        self.on(stream)?;
        let _bound = self.device.bind()?;
        // SAFETY: a live graph and stream of its device.
        check_raw("cuGraphLaunch", unsafe { sys::cuGraphLaunch(self.exec, stream.raw()) })
    }

    /// Uploads the graph to the device ahead of its first launch (`cuGraphUpload`; CuPy's
    /// `Graph.upload(stream)`), so that launch costs less.
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        self.on(stream)?;
        let _bound = self.device.bind()?;
        // SAFETY: a live graph and stream of its device.
        check_raw("cuGraphUpload", unsafe { sys::cuGraphUpload(self.exec, stream.raw()) })
    }

    /// The number of nodes captured (kernels, copies, memsets, events, host functions...).
    pub fn node_count(&self) -> usize {
        self.nodes
    }

    fn on(&self, stream: &Stream) -> Result<()> {
        if stream.state().id != self.device.id {
            return Err(RuntimeError::InvalidArgument(format!(
                "a graph of cuda:{} launched on a stream of cuda:{}",
                self.device.id,
                stream.state().id
            )));
        }
        Ok(())
    }
}
