//! A compiled region launched over fresh output buffers (with the scratch and counters of
//! split reductions, scatters and grid kernels).

use super::*;

/// Launches a compiled region over fresh output buffers.
pub(super) fn launch(
    gpu: &Gpu,
    k: &GpuKernel,
    function: &Function,
    inputs: &[Arc<DeviceArray>],
) -> Result<Vec<DeviceArray>> {
    let kernel = &k.kernel;
    check_inputs(0, &kernel.inputs, inputs)?;
    let mut outs: Vec<DeviceArray> = kernel
        .outputs
        .iter()
        .map(|(dt, shape)| DeviceArray::empty(*dt, shape))
        .collect::<Result<_>>()?;
    kiln_runtime::host_trace::point("launch: outputs allocated");
    if kernel.gpu_scatter.is_some_and(|gs| gs.zero_outputs) {
        for o in &mut outs {
            o.buf.memset(0)?;
        }
    }
    // A scatter of no positions still writes its initial array.
    if kernel.work_items == 0 && kernel.gpu_scatter.is_none()
        || kernel.gpu_grid.is_some_and(|gs| gs.blocks == 0)
    {
        return Ok(outs);
    }
    let chunk = kernel.min_chunk.max(1);
    let chunks = kernel.work_items.div_ceil(chunk);
    let stream = Stream::current()?;
    // A split reduction: one block per (group of work items, split), its scratch and zeroed
    // counters (the stream's kept ones: each launch's last blocks set them back to zero).
    let mut split_bufs = Vec::new();
    if let Some(sp) = kernel.gpu_split {
        split_bufs.push(Words::Fresh(DeviceBuffer::alloc(sp.scratch_bytes(kernel.work_items))?));
        split_bufs.push(kept(Kept::Counters, &stream, 4 * kernel.work_items)?);
    }
    // A scatter: its blocks' partials and the counters that find the last blocks.
    if let Some(gs) = kernel.gpu_scatter {
        split_bufs.push(Words::Fresh(DeviceBuffer::alloc(gs.scratch_bytes)?));
        split_bufs.push(kept(Kept::Counters, &stream, 4 * gs.counters)?);
    }
    // A scan by tiles: the zeroed words the tiles publish, passed for the entry's scratch
    // parameter too (a grid kernel reads no scratch); a persistent kernel's words are the
    // stream's, kept (tagged by epochs, they need no zeroing a launch).
    let grid_words = match kernel.gpu_grid {
        Some(gs) if gs.persistent => Some(kept(Kept::Epochs, &stream, 4 * gs.counter_words)?),
        Some(gs) => Some(Words::zeroed(&stream, 4 * gs.counter_words)?),
        None => None,
    };
    // More dynamic shared memory than a launch gets without opting in (a GPU line sort, the
    // look-ahead scan).
    if kernel.gpu_shared > 48 * 1024 {
        function.set_max_dynamic_shared_memory(kernel.gpu_shared as u32)?;
    }
    let config = match (kernel.gpu_split, kernel.gpu_block) {
        _ if let Some(gs) = kernel.gpu_scatter => {
            LaunchConfig::linear(gs.blocks as u32, gs.threads as u32)
        }
        _ if let Some(gs) = kernel.gpu_grid
            && gs.persistent =>
        {
            // Every block resident at once (one a multiprocessor for the look-ahead scan's
            // shared memory), at most one a tile, as few as take the tiles in as many rounds
            // as the device's resident blocks would: no last round of a few blocks alone.
            let per_sm = function.max_active_blocks(gs.threads, kernel.gpu_shared)?.max(1);
            let resident = per_sm * gpu.multiprocessors();
            LaunchConfig::linear(balanced_blocks(gs.blocks, resident) as u32, gs.threads as u32)
        }
        _ if let Some(gs) = kernel.gpu_grid => {
            LaunchConfig::linear(gs.blocks as u32, gs.threads as u32)
        }
        (Some(sp), Some((threads, items))) => LaunchConfig::linear(
            (kernel.work_items.div_ceil(items) * sp.splits) as u32,
            threads as u32,
        ),
        (_, Some((threads, items))) => LaunchConfig::linear(
            kernel.work_items.div_ceil(items).min(gpu.max_blocks as usize) as u32,
            threads as u32,
        ),
        (_, None) => LaunchConfig::grid_stride(chunks, 256, gpu.max_blocks),
    }
    .with_shared_mem(kernel.gpu_shared as u32);
    // A scatter with launch bounds: the blocks it asks a multiprocessor to hold need the
    // shared memory (the driver's own carve-out may hold one fewer).
    if kernel.gpu_scatter.is_some_and(|gs| gs.min_blocks > 0) {
        function.set_preferred_shared_memory_carveout(100)?;
    }
    let scalars: Vec<i64> =
        kernel.params.iter().copied().chain([kernel.work_items as i64, chunk as i64]).collect();
    let mut args: Vec<&dyn KernelArg> =
        Vec::with_capacity(inputs.len() + outs.len() + scalars.len());
    args.extend(inputs.iter().map(|a| &a.buf as &dyn KernelArg));
    args.extend(outs.iter().map(|a| &a.buf as &dyn KernelArg));
    args.extend(split_bufs.iter().map(|b| b.buffer() as &dyn KernelArg));
    if let Some(words) = &grid_words {
        let words = words.buffer();
        args.extend([words as &dyn KernelArg, words as &dyn KernelArg]);
    }
    args.extend(scalars.iter().map(|s| s as &dyn KernelArg));
    kiln_runtime::host_trace::point("launch: config, args");
    // SAFETY: `kiln_gpu` takes the region's input then output buffers (device pointers, each
    // holding the dtype and shape checked above, outputs freshly allocated at their full size),
    // for a split reduction its scratch and counters (sized by `GpuSplit`), for a scatter its
    // scratch and counters (sized by `GpuScatter`), for a scan by tiles its published words
    // (sized by `GpuGrid`) twice, the first for the scratch it does not read, then its i64
    // parameters, the number of work items and the chunk size, as the lowering declares them;
    // it touches only elements of those buffers. The counters are zero when it starts: fresh
    // and zeroed before it, or kept for this stream, zeroed once and left zero by each launch
    // before it on the stream; a persistent grid's words are fresh and zeroed, or the stream's
    // kept words of exactly its size, tagged by the epochs of the launches before it on the
    // stream. The look-ahead scan's blocks wait on each other: its launch is cooperative, so
    // every block is resident (or the launch fails) and the waits end.
    unsafe {
        if kernel.gpu_grid.is_some_and(|gs| gs.persistent) {
            function.launch_cooperative_on(&stream, config, &args)?
        } else {
            function.launch_on(&stream, config, &args)?
        }
    };
    kiln_runtime::host_trace::point("launch: cuLaunchKernel");
    Ok(outs)
}

/// A kernel's scratch or counters: made for the launch, or the stream's kept ones.
enum Words {
    Fresh(DeviceBuffer),
    Kept(Arc<DeviceBuffer>),
}

impl Words {
    /// `bytes` for the launch on `stream`, zeroed by a memset (recorded with the launch when
    /// a launch list is).
    fn zeroed(stream: &Stream, bytes: usize) -> Result<Words> {
        let mut buf = DeviceBuffer::alloc_on(stream, bytes)?;
        buf.memset(0)?;
        Ok(Words::Fresh(buf))
    }

    fn buffer(&self) -> &DeviceBuffer {
        match self {
            Words::Fresh(b) => b,
            Words::Kept(b) => b,
        }
    }
}

/// What a kept buffer holds between a stream's launches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kept {
    /// Split reductions' and scatters' counters: zero (each launch's last blocks set them
    /// back to zero, [`kiln_compiler::codegen`]'s `last_block`).
    Counters,
    /// Persistent grid kernels' words, tagged by launch epochs
    /// (`kiln_compiler::codegen::GpuGrid::persistent`).
    Epochs,
}

/// Kept buffers, at most. Past this a launch gets a buffer of its own, zeroed by a memset
/// recorded with it (as before buffers were kept). None is ever dropped: a launch list another
/// thread recorded on the same stream, not yet issued, may use it.
const KEPT: usize = 32;

/// `stream`'s kept buffer of `kind` and `bytes` bytes, zeroed once when made: the
/// stream's launches run one after another, each finding it as the last left it, whatever
/// kernel that was, so no launch zeroes it again (no memset node in a replayed launch list).
/// The zeroing is issued at once, not recorded into a launch list: a list dropped unissued
/// must not leave the buffer unzeroed. The kept buffers keep their streams alive.
fn kept(kind: Kept, stream: &Stream, bytes: usize) -> Result<Words> {
    type Entry = (Kept, Stream, usize, Arc<DeviceBuffer>);
    static BUFFERS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
    // Zeroed counters serve any kernel needing no more (sizes rounded, so that kernels of
    // nearby sizes share one); epoch words only kernels of their exact size (the epoch's word
    // is the last, where a longer line's kernel publishes a tile).
    let bytes = match kind {
        Kept::Counters => bytes.next_power_of_two().max(1024),
        Kept::Epochs => bytes,
    };
    let mut kept = BUFFERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = kept.iter().find(|e| e.0 == kind && e.2 == bytes && e.1 == *stream) {
        return Ok(Words::Kept(e.3.clone()));
    }
    if kept.len() >= KEPT {
        return Words::zeroed(stream, bytes);
    }
    let mut buf = DeviceBuffer::alloc_on(stream, bytes)?;
    buf.memset_unrecorded(0)?;
    let buf = Arc::new(buf);
    kept.push((kind, stream.clone(), bytes, buf.clone()));
    Ok(Words::Kept(buf))
}

/// Blocks for `tiles` tiles taken in turn by at most `resident` blocks (block `c` takes tiles
/// `c, c + G, ...`): the fewest that need no more rounds than `resident` blocks would, so
/// the last round is as full as the others can make it. 4096 tiles on 132 multiprocessors:
/// 128 blocks of 32 tiles each, not 4 blocks taking a 32nd tile while 128 wait.
fn balanced_blocks(tiles: usize, resident: usize) -> usize {
    let resident = resident.max(1);
    let rounds = tiles.div_ceil(resident).max(1);
    tiles.div_ceil(rounds)
}

#[cfg(test)]
mod tests {
    use super::balanced_blocks;

    #[test]
    fn balanced_blocks_fill_the_last_round() {
        assert_eq!(balanced_blocks(4096, 132), 128);
        assert_eq!(balanced_blocks(128, 132), 128);
        assert_eq!(balanced_blocks(133, 132), 67);
        assert_eq!(balanced_blocks(4097, 132), 129);
        assert_eq!(balanced_blocks(1, 132), 1);
        assert_eq!(balanced_blocks(0, 132), 0);
        for tiles in 1..2000 {
            for resident in [1, 7, 114, 132] {
                let g = balanced_blocks(tiles, resident);
                assert!(g >= 1 && g <= resident.min(tiles), "{tiles} {resident} {g}");
                assert_eq!(tiles.div_ceil(g), tiles.div_ceil(resident), "{tiles} {resident}");
            }
        }
    }
}
