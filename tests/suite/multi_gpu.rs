//! Several GPUs: arrays on any device (`Device::use_scoped` decides where new work runs, an
//! array computed on a device lives there, `to_device` copies across, operands on different
//! devices are a typed error), and `kiln::distributed`'s NCCL collectives. The `gpu_*` tests
//! need a GPU (one-rank communicators work on one) and the `gpu2_*` tests two (skipped with
//! fewer, `skipped: fewer than 2 GPUs`). Without a GPU only the CPU backend's errors run.

use kiln::cuda::Device;
use kiln::distributed::{Communicator, ReduceOp};
use kiln::{Array, DType, Error};

use crate::vendor_gpu::on_gpu;

/// Two GPUs, or a skip line.
fn two_gpus() -> bool {
    if !on_gpu() {
        return false;
    }
    if Device::all().len() < 2 {
        println!("skipped: fewer than 2 GPUs");
        return false;
    }
    true
}

fn ramp(n: usize, scale: f32) -> Array {
    Array::from_vec((0..n).map(|i| i as f32 * scale).collect(), &[n])
}

#[test]
fn collectives_need_cuda_on_the_cpu_backend() {
    if on_gpu() {
        return;
    }
    let e = Communicator::init_all(&[0]).unwrap_err();
    assert!(matches!(e, Error::Value { .. }), "{e}");
    assert!(e.to_string().contains("collectives need CUDA devices"), "{e}");
    let e = Communicator::init(2, 0, "127.0.0.1", 29500, 0).unwrap_err();
    assert!(e.to_string().contains("backend is the CPU"), "{e}");
    let e = ramp(4, 1.0).try_to_device(0).unwrap_err();
    assert!(e.to_string().starts_with("to_device: "), "{e}");
    // Host data belongs to no device.
    assert_eq!(ramp(4, 1.0).device(), None);
}

#[test]
fn gpu_arrays_live_where_they_were_computed() {
    if !on_gpu() {
        return;
    }
    let x = ramp(1000, 0.5);
    assert_eq!(x.device(), None, "host data belongs to no device");
    let y = (&x * 2.0f32).eval().clone();
    assert_eq!(y.device(), Some(Device::current().unwrap()));
    // to_device of the device it is on: the same array.
    let z = y.to_device(y.device().unwrap().id());
    assert!(z.same_expr(&y));
    // An ordinal past the devices is the runtime's typed error, named.
    let e = y.try_to_device(Device::all().len()).unwrap_err();
    assert!(e.to_string().starts_with("to_device: "), "{e}");
}

#[test]
fn gpu_single_rank_collectives() {
    if !on_gpu() {
        return;
    }
    let comms = Communicator::init_all(&[Device::current().unwrap().id()]).unwrap();
    let c = &comms[0];
    assert_eq!((c.rank(), c.size()), (0, 1));
    let x = ramp(10, 1.5);
    for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg] {
        assert_eq!(c.all_reduce(&x, op).unwrap().to_vec::<f32>(), x.to_vec::<f32>(), "{op:?}");
    }
    let g = c.all_gather(&x.reshape(&[2, 5])).unwrap();
    assert_eq!(g.shape(), [1, 2, 5]);
    assert_eq!(g.to_vec::<f32>(), x.to_vec::<f32>());
    assert_eq!(c.broadcast(&x, 0).unwrap().to_vec::<f32>(), x.to_vec::<f32>());
    assert_eq!(c.reduce(&x, 0, ReduceOp::Sum).unwrap().unwrap().to_vec::<f32>(), x.to_vec::<f32>());
    assert_eq!(c.reduce_scatter(&x, ReduceOp::Sum).unwrap().to_vec::<f32>(), x.to_vec::<f32>());
    // A lazy input is computed first, on the communicator's device.
    let lazy = &x * 2.0f32 + 1.0f32;
    assert_eq!(c.all_reduce(&lazy, ReduceOp::Sum).unwrap().to_vec::<f32>(), lazy.to_vec::<f32>());
    // Complex sums as float pairs; bool max.
    let z = x.astype(DType::Complex64);
    assert_eq!(
        c.all_reduce(&z, ReduceOp::Sum).unwrap().to_vec::<num_complex::Complex32>(),
        z.to_vec::<num_complex::Complex32>()
    );
    let b = x.greater(3.0f32);
    assert_eq!(c.all_reduce(&b, ReduceOp::Max).unwrap().to_vec::<bool>(), b.to_vec::<bool>());
    c.barrier().unwrap();
    // Typed errors, named; the input stays valid.
    let e = c.all_reduce(&b, ReduceOp::Sum).unwrap_err();
    assert!(e.to_string().starts_with("all_reduce: sum of bool"), "{e}");
    let e = c.broadcast(&x, 1).unwrap_err();
    assert!(e.to_string().contains("root 1 of a communicator of 1"), "{e}");
    let e = c.reduce_scatter(&Array::scalar(1.0f32), ReduceOp::Sum).unwrap_err();
    assert!(e.to_string().starts_with("reduce_scatter: "), "{e}");
    assert_eq!(x.to_vec::<f32>()[3], 4.5);
}

#[test]
fn gpu2_operands_on_two_devices_are_an_error() {
    if !two_gpus() {
        return;
    }
    let a = {
        let _d = Device::new(0).unwrap().use_scoped().unwrap();
        (ramp(8, 1.0) + 1.0f32).eval().clone()
    };
    let b = {
        let _d = Device::new(1).unwrap().use_scoped().unwrap();
        (ramp(8, 2.0) + 1.0f32).eval().clone()
    };
    assert_eq!(a.device().map(|d| d.id()), Some(0));
    assert_eq!(b.device().map(|d| d.id()), Some(1));
    let e = a.try_add(&b).unwrap_err();
    assert!(matches!(e, Error::DeviceMismatch { .. }), "{e}");
    assert!(e.to_string().contains("is on cuda:1, but operand 0 is on cuda:0"), "{e}");
    // A lazy expression over a device-1 array evaluated with device 0 current.
    let lazy = &b * 3.0f32;
    let e = {
        let _d = Device::new(0).unwrap().use_scoped().unwrap();
        lazy.try_eval().unwrap_err()
    };
    assert!(e.to_string().contains("the current device is cuda:0"), "{e}");
    // Both stay valid; moved across, they combine.
    let b0 = b.to_device(0);
    assert_eq!(b0.device().map(|d| d.id()), Some(0));
    let sum = {
        let _d = Device::new(0).unwrap().use_scoped().unwrap();
        (&a + &b0).to_vec::<f32>()
    };
    let want: Vec<f32> = (0..8).map(|i| (i as f32 + 1.0) + (2.0 * i as f32 + 1.0)).collect();
    assert_eq!(sum, want);
    {
        let _d = Device::new(1).unwrap().use_scoped().unwrap();
        assert_eq!(lazy.to_vec::<f32>()[2], 15.0);
    }
}

#[test]
fn gpu2_work_goes_to_the_current_device() {
    if !two_gpus() {
        return;
    }
    // The same expression (one plan) on each device; host data goes to either.
    let x = ramp(1 << 20, 1e-3);
    let mut results = Vec::new();
    for d in [0usize, 1] {
        let _d = Device::new(d).unwrap().use_scoped().unwrap();
        let y = (x.sin() * 2.0f32).sum(None).eval().clone();
        assert_eq!(y.device().map(|d| d.id()), Some(d));
        results.push(y.item::<f32>());
    }
    assert_eq!(results[0], results[1]);
    // A big array moved peer to peer, bit for bit.
    let big = {
        let _d = Device::new(1).unwrap().use_scoped().unwrap();
        (ramp(1 << 22, 0.25).cos()).eval().clone()
    };
    let moved = big.to_device(0);
    assert_eq!(moved.device().map(|d| d.id()), Some(0));
    assert_eq!(moved.to_vec::<f32>(), big.to_vec::<f32>());
}

#[test]
fn gpu2_collectives_between_two_gpus() {
    if !two_gpus() {
        return;
    }
    let comms = Communicator::init_all(&[0, 1]).unwrap();
    let n = 1000;
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = comms
            .into_iter()
            .map(|c| {
                s.spawn(move || {
                    let _d = c.device().use_scoped().unwrap();
                    let r = c.rank();
                    let x = ramp(n, 1.0) + (r as f32 * 1000.0);
                    let sum = c.all_reduce(&x, ReduceOp::Sum).unwrap().to_vec::<f32>();
                    let max = c.all_reduce(&x, ReduceOp::Max).unwrap().to_vec::<f32>();
                    let avg = c.all_reduce(&x.astype(DType::Float64), ReduceOp::Avg).unwrap();
                    let gathered = c.all_gather(&x).unwrap();
                    assert_eq!(gathered.shape(), [2, n]);
                    let bc = c.broadcast(&x, 1).unwrap().to_vec::<f32>();
                    let red = c.reduce(&x, 0, ReduceOp::Sum).unwrap().map(|a| a.to_vec::<f32>());
                    let rs =
                        c.reduce_scatter(&x.reshape(&[2, (n / 2) as i64]), ReduceOp::Sum).unwrap();
                    assert_eq!(rs.shape(), [1, n / 2]);
                    // A ring of sends: rank r sends to 1 - r and receives from it, grouped.
                    let got = kiln::distributed::group(|| {
                        c.send(&x, 1 - r)?;
                        c.recv(&[n], DType::Float32, 1 - r)
                    })
                    .unwrap()
                    .to_vec::<f32>();
                    let i64s = Array::from_vec(vec![r as i64 + 1; 4], &[4]);
                    let prod = c.all_reduce(&i64s, ReduceOp::Prod).unwrap().to_vec::<i64>();
                    c.barrier().unwrap();
                    let on = sum.len();
                    (
                        r,
                        on,
                        sum,
                        max,
                        avg.to_vec::<f64>(),
                        gathered.to_vec::<f32>(),
                        bc,
                        red,
                        rs.to_vec::<f32>(),
                        got,
                        prod,
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let x = |r: usize| -> Vec<f32> { (0..n).map(|i| i as f32 + r as f32 * 1000.0).collect() };
    let total: Vec<f32> = (0..n).map(|i| x(0)[i] + x(1)[i]).collect();
    for (r, _, sum, max, avg, gathered, bc, red, rs, got, prod) in results {
        assert_eq!(sum, total, "rank {r}");
        assert_eq!(max, x(1), "rank {r}");
        let want_avg: Vec<f64> = total.iter().map(|&t| t as f64 / 2.0).collect();
        assert_eq!(avg, want_avg, "rank {r}");
        assert_eq!(gathered, [x(0), x(1)].concat(), "rank {r}");
        assert_eq!(bc, x(1), "rank {r}");
        assert_eq!(red, (r == 0).then(|| total.clone()), "rank {r}");
        assert_eq!(rs, total[r * n / 2..(r + 1) * n / 2].to_vec(), "rank {r}");
        assert_eq!(got, x(1 - r), "rank {r}");
        assert_eq!(prod, vec![2i64; 4], "rank {r}");
    }
}

#[test]
fn gpu2_one_process_per_gpu_through_the_rendezvous() {
    if !two_gpus() {
        return;
    }
    // Two "processes" as threads, each with its rank's launch description.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let sums: Vec<Vec<f32>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2usize)
            .map(|rank| {
                s.spawn(move || {
                    let launch = kiln::distributed::Launch {
                        rank,
                        world_size: 2,
                        local_rank: rank,
                        master_addr: "127.0.0.1".into(),
                        master_port: port,
                    };
                    let c = Communicator::from_launch(&launch).unwrap();
                    assert_eq!((c.rank(), c.device().id()), (rank, rank));
                    let _d = c.device().use_scoped().unwrap();
                    c.all_reduce(&ramp(64, rank as f32 + 1.0), ReduceOp::Sum).unwrap().to_vec()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let want: Vec<f32> = (0..64).map(|i| i as f32 * 3.0).collect();
    assert_eq!(sums, vec![want.clone(), want]);
}

/// The data-parallel k-means step's two graphs (before the all-reduce: labels, sums and counts
/// of a shard; after it: the new centers and their shift) have GPU code for every region but
/// library calls: nothing runs on the host between copies.
#[test]
fn the_data_parallel_step_runs_every_region_on_the_gpu() {
    use kiln_compiler::codegen::{lower, LowerOptions};
    let (n, k, d) = (4096usize, 10usize, 64usize);
    let x = crate::fusion::randn(&[n, d], 3);
    let centers = crate::fusion::randn(&[k, d], 4);
    let dist = (x.expand_dims(&[1]) - centers.expand_dims(&[0])).square().sum(2);
    let labels = dist.argmin(1);
    let sums = kiln::zeros(&[k, d], DType::Float32).add_at(&labels, &x);
    let counts = kiln::bincount(&labels, None, k).astype(DType::Float32);
    let partial = kiln::concatenate(&[&sums, &counts.expand_dims(&[1])], 1);
    let total = partial.eval().clone();
    let (sums, counts) =
        (total.slice(&kiln::s![.., ..d as i64]), total.slice(&kiln::s![.., d as i64]));
    let means = &sums / counts.maximum(1.0f32).expand_dims(&[1]);
    let new_centers = kiln::where_(counts.greater(0.0f32).expand_dims(&[1]), &means, &centers);
    let shift = (&new_centers - &centers).square().sum(None);
    for outs in [vec![&partial], vec![&new_centers, &shift]] {
        let lowered = kiln::lower(&outs);
        let options = kiln_compiler::pipeline::Options::from_env();
        let plan = kiln_compiler::pipeline::compile(&lowered.graph, &options).unwrap();
        for (i, r) in plan.partition.regions.iter().enumerate() {
            if let Err(e) = lower(r, &LowerOptions::gpu()) {
                panic!("region {i} has no GPU code: {e}\n{}", plan.report());
            }
        }
    }
}
