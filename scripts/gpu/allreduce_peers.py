"""all_reduce of 1 GiB float32 between the GPUs of this host, torch.distributed (NCCL) and CuPy's
NCCL communicator: bus bandwidth as nccl-tests reports it, 2 (n-1)/n * bytes / time.

python3 allreduce_peers.py [--mib 1024] [--reps 20]
"""
import argparse, json, os, sys, time

def torch_worker(rank, world, mib, reps, port, q):
    import torch, torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    x = torch.ones(mib * 2**20 // 4, device=f"cuda:{rank}")
    for _ in range(5):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        dist.barrier(); torch.cuda.synchronize()
        t = time.perf_counter(); dist.all_reduce(x); torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    if rank == 0:
        q.put(sorted(times)[len(times) // 2])
    dist.destroy_process_group()

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mib", type=int, default=1024)
    p.add_argument("--reps", type=int, default=20)
    a = p.parse_args()
    import torch, torch.multiprocessing as mp
    world = torch.cuda.device_count()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=torch_worker, args=(r, world, a.mib, a.reps, 29631, q)) for r in range(world)]
    for pr in procs: pr.start()
    t = q.get()
    for pr in procs: pr.join()
    nbytes = a.mib * 2**20
    bus = 2 * (world - 1) / world * nbytes / t / 1e9
    print(json.dumps({"peer": "torch.distributed", "gpus": world, "mib": a.mib, "ms": t * 1e3, "busbw_GBs": bus}))

if __name__ == "__main__":
    main()
