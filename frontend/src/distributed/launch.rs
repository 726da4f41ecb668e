//! Where a process sits in a distributed run: its rank, the world size, its GPU on the host,
//! and rank 0's address, from the variables a launcher sets (torchrun's `RANK`, `WORLD_SIZE`,
//! `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`; SLURM's `SLURM_PROCID`, `SLURM_NTASKS`,
//! `SLURM_LOCALID` where torchrun's are unset).

use crate::error::{Error, Result};

/// A process's place in a run of `world_size` processes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// This process's rank, `0..world_size` (`RANK`, else `SLURM_PROCID`).
    pub rank: usize,
    /// The number of processes (`WORLD_SIZE`, else `SLURM_NTASKS`).
    pub world_size: usize,
    /// This process's index on its host (`LOCAL_RANK`, else `SLURM_LOCALID`, else the rank):
    /// its GPU is `local_rank` modulo the host's devices.
    pub local_rank: usize,
    /// Rank 0's host name or address, where the others fetch NCCL's id (`MASTER_ADDR`, default
    /// `127.0.0.1`).
    pub master_addr: String,
    /// Rank 0's rendezvous port (`MASTER_PORT`, default 29500 as torchrun's).
    pub master_port: u16,
}

/// torchrun's default `MASTER_PORT`.
pub const DEFAULT_PORT: u16 = 29500;

impl Launch {
    /// This process's place from its environment ([`Launch::from_vars`]).
    pub fn from_env() -> Result<Launch> {
        Launch::from_vars(|name| std::env::var(name).ok())
    }

    /// The place the variables `var` gives (by name; `None` when unset). Errors
    /// ([`Error::Distributed`]): no rank or world size, a value that is not a number, a rank
    /// not below the world size.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Launch> {
        let op = "distributed launch";
        let err = |message: String| Error::Distributed { op: op.into(), message };
        let number = |names: &[&str]| -> Result<Option<usize>> {
            for name in names {
                if let Some(text) = var(name).filter(|t| !t.trim().is_empty()) {
                    return text.trim().parse().map(Some).map_err(|_| {
                        err(format!("{name}={text:?} is not a non-negative integer"))
                    });
                }
            }
            Ok(None)
        };
        let missing = |what: &str, names: &str| {
            err(format!(
                "no {what}: set {names} (torchrun and SLURM set them), or build the \
                 communicator with explicit ranks"
            ))
        };
        let rank = number(&["RANK", "SLURM_PROCID"])?
            .ok_or_else(|| missing("rank", "RANK or SLURM_PROCID"))?;
        let world_size = number(&["WORLD_SIZE", "SLURM_NTASKS"])?
            .ok_or_else(|| missing("world size", "WORLD_SIZE or SLURM_NTASKS"))?;
        if rank >= world_size {
            return Err(err(format!("rank {rank} of a world of {world_size}")));
        }
        let local_rank = number(&["LOCAL_RANK", "SLURM_LOCALID"])?.unwrap_or(rank);
        let master_addr = var("MASTER_ADDR")
            .filter(|t| !t.trim().is_empty())
            .map_or_else(|| "127.0.0.1".to_string(), |t| t.trim().to_string());
        let master_port = match var("MASTER_PORT").filter(|t| !t.trim().is_empty()) {
            None => DEFAULT_PORT,
            Some(text) => text
                .trim()
                .parse()
                .map_err(|_| err(format!("MASTER_PORT={text:?} is not a port number")))?,
        };
        Ok(Launch { rank, world_size, local_rank, master_addr, master_port })
    }
}
