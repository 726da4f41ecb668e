//! The streams a schedule runs on ([`Lanes`]: fork, producers' events, join), where each region
//! ran ([`last_run_streams`]), and inputs ordered on other streams ([`ForeignInputs`]).

use super::*;

/// Where a region of a schedule ran on the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RanOn {
    /// The region (and step) index.
    pub region: usize,
    /// Its stream in the schedule (the fusion report's `stream` column): 0 the caller's.
    pub stream: u32,
    /// The CUDA stream it ran on ([`Stream::id`]: 0 for the null stream).
    pub cuda_stream: u64,
    /// The tier of the generated code that ran (`None`: a library call, or the host ran it).
    pub tier: Option<Tier>,
}

thread_local! {
    pub(super) static LAST_RUN: RefCell<Vec<RanOn>> = const { RefCell::new(Vec::new()) };
}

/// The stream each region of the last schedule this thread ran on a GPU was launched on, in
/// order (empty before any): for checking a fusion report against what ran.
pub fn last_run_streams() -> Vec<RanOn> {
    LAST_RUN.with(|r| r.borrow().clone())
}

/// Makes the array's free and later uses ordered on `stream` (which follows every stream that
/// used it).
pub(super) fn order_on(a: &mut Arc<DeviceArray>, stream: &Stream) -> Result<()> {
    if a.buf.stream() == stream {
        return Ok(());
    }
    match Arc::get_mut(a) {
        Some(d) => d.buf.set_stream(stream)?,
        // Not reached: the schedule holds the only handle of what it wrote. Wait for the
        // array's stream instead, so no work there still uses it.
        None => a.buf.stream().synchronize()?,
    }
    Ok(())
}

/// The streams, other than the caller's current one, that a schedule's inputs are ordered on
/// (the current stream of another thread, or of the scope that made them): their writers may
/// still run there, and their frees will be ordered there. The caller's stream waits for each
/// before the schedule reads its inputs, and each waits for the caller's stream once the
/// schedule's work is queued there (when this is dropped, after the join), so that a free of
/// an input on its own stream comes after the schedule's reads.
pub struct ForeignInputs {
    pub(super) current: Stream,
    pub(super) streams: Vec<Stream>,
}

impl ForeignInputs {
    pub(super) fn order(current: Stream, inputs: &[Arc<DeviceArray>]) -> Result<ForeignInputs> {
        Self::order_streams(current, inputs.iter().map(|a| a.buf.stream()))
    }

    /// Orders work about to be queued on `current` after the work queued so far on each of
    /// `streams` (the streams of the buffers it will read or write), and, when dropped, the
    /// later work of each after it.
    pub fn order_streams<'s>(
        current: Stream,
        streams: impl IntoIterator<Item = &'s Stream>,
    ) -> Result<ForeignInputs> {
        let mut foreign: Vec<Stream> = Vec::new();
        for s in streams {
            if *s != current && !foreign.contains(s) {
                current.wait_event(&record(s)?)?;
                foreign.push(s.clone());
            }
        }
        Ok(ForeignInputs { current, streams: foreign })
    }
}

impl Drop for ForeignInputs {
    fn drop(&mut self) {
        if self.streams.is_empty() {
            return;
        }
        match record(&self.current) {
            Ok(done) => {
                for s in &self.streams {
                    if s.wait_event(&done).is_err() {
                        let _ = self.current.synchronize();
                    }
                }
            }
            // No event: wait for the reads instead.
            Err(_) => {
                let _ = self.current.synchronize();
            }
        }
    }
}

/// The streams a schedule runs on: stream 0 the caller's current stream, stream `k` the
/// device's pool stream `k - 1`, with the events between them.
pub(super) struct Lanes {
    pub(super) device: Device,
    pub(super) current: Stream,
    /// Pool streams by index `k - 1`, taken on first use.
    pub(super) pool: Vec<Option<Stream>>,
    /// Recorded on the caller's stream as the schedule starts, when it uses a pool stream.
    pub(super) fork: Option<Event>,
    /// The events recorded after regions that another stream waits for, by region.
    pub(super) recorded: HashMap<usize, Event>,
    pub(super) joined: bool,
}

impl Lanes {
    pub(super) fn new(device: Device, plan: &StreamPlan) -> Result<Lanes> {
        let current = Stream::current_on(device)?;
        let fork = if plan.is_single_stream() { None } else { Some(record(&current)?) };
        Ok(Lanes {
            device,
            current,
            pool: vec![None; POOL_STREAMS as usize],
            fork,
            recorded: HashMap::new(),
            joined: false,
        })
    }

    /// The stream of plan index `index`; a pool stream first waits for the fork.
    pub(super) fn stream(&mut self, index: u32) -> Result<Stream> {
        let Some(k) = (index as usize).checked_sub(1) else {
            return Ok(self.current.clone());
        };
        let slot = self.pool.get_mut(k).ok_or_else(|| {
            Error::from(CompileError::InvalidInput(format!(
                "stream {index}: the pool has {POOL_STREAMS} streams"
            )))
        })?;
        if let Some(s) = slot {
            return Ok(s.clone());
        }
        let s = self.device.pool_stream(k)?;
        if let Some(fork) = &self.fork {
            s.wait_event(fork)?;
        }
        *slot = Some(s.clone());
        Ok(s)
    }

    /// The stream of `region`, after it waited for the events of its producers elsewhere.
    pub(super) fn before(&mut self, plan: &StreamPlan, region: usize) -> Result<Stream> {
        let stream = self.stream(plan.streams.get(region).copied().unwrap_or(0))?;
        for p in plan.waits_of(region) {
            let event = self.recorded.get(&p).ok_or_else(|| {
                Error::from(CompileError::InvalidInput(format!(
                    "region {region} waits for region {p}, which has not run"
                )))
            })?;
            stream.wait_event(event)?;
        }
        Ok(stream)
    }

    /// Records the event after `region` when another stream waits for it.
    pub(super) fn after(
        &mut self,
        plan: &StreamPlan,
        region: usize,
        stream: &Stream,
    ) -> Result<()> {
        if plan.records_after(region) {
            self.recorded.insert(region, record(stream)?);
        }
        Ok(())
    }

    /// Makes the caller's stream wait for every pool stream used; whether there was one.
    pub(super) fn join(&mut self) -> Result<bool> {
        let mut any = false;
        for s in self.pool.iter().flatten() {
            self.current.wait_event(&record(s)?)?;
            any = true;
        }
        self.joined = true;
        Ok(any)
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        self.settle();
    }
}

impl Lanes {
    /// After an error: lets everything queued on the streams used finish, so that the buffers
    /// freed next are in use on no stream.
    pub(super) fn settle(&mut self) {
        if self.joined || self.pool.iter().all(Option::is_none) {
            return;
        }
        // The schedule stopped on an error: let everything queued finish, so the buffers freed
        // next are in use on no stream.
        for s in self.pool.iter().flatten() {
            let _ = s.synchronize();
        }
        let _ = self.current.synchronize();
    }
}

/// A new event (without timing) recorded on `stream`.
pub(super) fn record(stream: &Stream) -> Result<Event> {
    let event = Event::with_flags(stream.device(), false, true)?;
    event.record(stream)?;
    Ok(event)
}
