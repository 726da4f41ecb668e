//! NCCL's unique id, handed from rank 0 to the other ranks over TCP (what torchrun's store
//! and CuPy's `init_process_group` do): rank 0 listens on its port; each other rank connects
//! (retrying until rank 0 is up), says who it is and receives the id's bytes.
//!
//! A message is `kiln-nccl-id/1` (14 bytes), then the connecting rank and the world size as
//! little-endian `u64`s one way; the same tag and the id's 128 bytes back. Rank 0 checks every
//! rank's world size and that no rank comes twice; a connection that is not a kiln rank is
//! logged and ignored.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use kiln_runtime::nccl::{UniqueId, UNIQUE_ID_BYTES};

use crate::error::{Error, Result};

const TAG: &[u8; 14] = b"kiln-nccl-id/1";

fn err(message: String) -> Error {
    Error::Distributed { op: "rendezvous".into(), message }
}

/// Rank 0's side: listens on `port` of every interface, sends `id` to each of the other
/// `world_size - 1` ranks, and returns once all have it. Errors: the port cannot be bound, a
/// rank that says something else, a rank twice or out of range, a world size that differs,
/// `timeout` passed.
pub fn serve(port: u16, world_size: usize, id: &UniqueId, timeout: Duration) -> Result<()> {
    let listener = TcpListener::bind(("0.0.0.0", port))
        .map_err(|e| err(format!("rank 0 cannot listen on port {port}: {e}")))?;
    serve_on(listener, world_size, id, timeout)
}

/// [`serve`] on a bound listener (tests bind port 0).
pub fn serve_on(
    listener: TcpListener,
    world_size: usize,
    id: &UniqueId,
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    listener.set_nonblocking(true).map_err(|e| err(format!("listener: {e}")))?;
    let mut joined = vec![false; world_size];
    joined[0] = true;
    let mut waiting = world_size - 1;
    while waiting > 0 {
        let (mut stream, peer) = match listener.accept() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    let missing: Vec<usize> = (0..world_size).filter(|&r| !joined[r]).collect();
                    return Err(err(format!(
                        "rank 0 waited {timeout:?} for ranks {missing:?} of {world_size}"
                    )));
                }
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(e) => return Err(err(format!("accept: {e}"))),
        };
        let io = |e: std::io::Error| err(format!("from {peer}: {e}"));
        stream.set_nonblocking(false).map_err(io)?;
        stream.set_read_timeout(Some(Duration::from_secs(10))).map_err(io)?;
        let mut hello = [0u8; 14 + 16];
        if let Err(e) = stream.read_exact(&mut hello) {
            tracing::warn!(%peer, error = %e, "rendezvous: a connection that said nothing; ignored");
            continue;
        }
        if &hello[..14] != TAG {
            tracing::warn!(%peer, "rendezvous: a connection that is not a kiln rank; ignored");
            continue;
        }
        let rank = u64::from_le_bytes(hello[14..22].try_into().expect("8 bytes")) as usize;
        let world = u64::from_le_bytes(hello[22..30].try_into().expect("8 bytes")) as usize;
        if world != world_size {
            return Err(err(format!(
                "rank {rank} at {peer} has a world of {world}, rank 0 of {world_size}"
            )));
        }
        if rank == 0 || rank >= world_size || joined[rank] {
            return Err(err(format!(
                "{peer} says it is rank {rank} of {world_size}, which is rank 0, out of range or \
                 taken"
            )));
        }
        let mut reply = Vec::with_capacity(14 + UNIQUE_ID_BYTES);
        reply.extend_from_slice(TAG);
        reply.extend_from_slice(id.as_bytes());
        stream.write_all(&reply).map_err(io)?;
        joined[rank] = true;
        waiting -= 1;
    }
    Ok(())
}

/// Rank `rank`'s side (not 0): connects to rank 0 at `addr:port` (retrying until `timeout`,
/// as rank 0 may start later), and returns the id it sends.
pub fn fetch(
    addr: &str,
    port: u16,
    rank: usize,
    world_size: usize,
    timeout: Duration,
) -> Result<UniqueId> {
    let deadline = Instant::now() + timeout;
    let mut last = String::new();
    loop {
        let addrs: Vec<_> = match (addr, port).to_socket_addrs() {
            Ok(a) => a.collect(),
            Err(e) => return Err(err(format!("rank 0's address {addr}:{port}: {e}"))),
        };
        for a in &addrs {
            match TcpStream::connect_timeout(a, Duration::from_secs(2)) {
                Ok(stream) => return exchange(stream, rank, world_size),
                Err(e) => last = format!("{a}: {e}"),
            }
        }
        if Instant::now() >= deadline {
            return Err(err(format!(
                "rank {rank} could not reach rank 0 at {addr}:{port} in {timeout:?} ({last})"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn exchange(mut stream: TcpStream, rank: usize, world_size: usize) -> Result<UniqueId> {
    let io = |e: std::io::Error| err(format!("rank {rank} talking to rank 0: {e}"));
    stream.set_read_timeout(Some(Duration::from_secs(60))).map_err(io)?;
    let mut hello = Vec::with_capacity(30);
    hello.extend_from_slice(TAG);
    hello.extend_from_slice(&(rank as u64).to_le_bytes());
    hello.extend_from_slice(&(world_size as u64).to_le_bytes());
    stream.write_all(&hello).map_err(io)?;
    let mut reply = [0u8; 14 + UNIQUE_ID_BYTES];
    stream.read_exact(&mut reply).map_err(io)?;
    if &reply[..14] != TAG {
        return Err(err(format!("rank 0 answered rank {rank} with something else")));
    }
    Ok(UniqueId::from_bytes(reply[14..].try_into().expect("128 bytes")))
}
