use std::collections::HashMap;
use std::net::TcpListener;
use std::time::Duration;

use super::*;

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> =
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |name| map.get(name).cloned()
}

#[test]
fn launch_from_torchrun_variables() {
    let l = Launch::from_vars(vars(&[
        ("RANK", "3"),
        ("WORLD_SIZE", "4"),
        ("LOCAL_RANK", "1"),
        ("MASTER_ADDR", "node0"),
        ("MASTER_PORT", "12345"),
    ]))
    .unwrap();
    assert_eq!(
        l,
        Launch {
            rank: 3,
            world_size: 4,
            local_rank: 1,
            master_addr: "node0".into(),
            master_port: 12345
        }
    );
}

#[test]
fn launch_from_slurm_and_defaults() {
    let l = Launch::from_vars(vars(&[
        ("SLURM_PROCID", "5"),
        ("SLURM_NTASKS", "8"),
        ("SLURM_LOCALID", "1"),
    ]))
    .unwrap();
    assert_eq!((l.rank, l.world_size, l.local_rank), (5, 8, 1));
    assert_eq!((l.master_addr.as_str(), l.master_port), ("127.0.0.1", DEFAULT_PORT));
    // torchrun's variables win over SLURM's; LOCAL_RANK defaults to the rank.
    let l = Launch::from_vars(vars(&[
        ("RANK", "1"),
        ("WORLD_SIZE", "2"),
        ("SLURM_PROCID", "5"),
        ("SLURM_NTASKS", "8"),
    ]))
    .unwrap();
    assert_eq!((l.rank, l.world_size, l.local_rank), (1, 2, 1));
}

#[test]
fn launch_errors_name_the_variable() {
    let e = Launch::from_vars(vars(&[("WORLD_SIZE", "2")])).unwrap_err();
    assert!(matches!(e, Error::Distributed { .. }), "{e}");
    assert!(e.to_string().contains("RANK or SLURM_PROCID"), "{e}");
    let e = Launch::from_vars(vars(&[("RANK", "x"), ("WORLD_SIZE", "2")])).unwrap_err();
    assert!(e.to_string().contains("RANK=\"x\""), "{e}");
    let e = Launch::from_vars(vars(&[("RANK", "2"), ("WORLD_SIZE", "2")])).unwrap_err();
    assert!(e.to_string().contains("rank 2 of a world of 2"), "{e}");
    let e =
        Launch::from_vars(vars(&[("RANK", "0"), ("WORLD_SIZE", "2"), ("MASTER_PORT", "70000")]))
            .unwrap_err();
    assert!(e.to_string().contains("MASTER_PORT"), "{e}");
}

fn id(seed: u8) -> UniqueId {
    UniqueId::from_bytes(std::array::from_fn(|i| (i as u8).wrapping_mul(7).wrapping_add(seed)))
}

#[test]
fn rendezvous_hands_every_rank_the_id() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let world = 4;
    let fetchers: Vec<_> = (1..world)
        .map(|rank| {
            std::thread::spawn(move || {
                rendezvous::fetch("127.0.0.1", port, rank, world, Duration::from_secs(20))
            })
        })
        .collect();
    rendezvous::serve_on(listener, world, &id(9), Duration::from_secs(20)).unwrap();
    for f in fetchers {
        assert_eq!(f.join().unwrap().unwrap(), id(9));
    }
}

#[test]
fn rendezvous_waits_for_a_late_rank_zero() {
    // Bind first to learn a free port, then drop and re-listen later: rank 1 retries.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let fetcher = std::thread::spawn(move || {
        rendezvous::fetch("127.0.0.1", port, 1, 2, Duration::from_secs(20))
    });
    std::thread::sleep(Duration::from_millis(300));
    let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
    rendezvous::serve_on(listener, 2, &id(1), Duration::from_secs(20)).unwrap();
    assert_eq!(fetcher.join().unwrap().unwrap(), id(1));
}

#[test]
fn rendezvous_refuses_a_rank_with_another_world() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fetcher = std::thread::spawn(move || {
        rendezvous::fetch("127.0.0.1", port, 1, 3, Duration::from_secs(20))
    });
    let e = rendezvous::serve_on(listener, 2, &id(0), Duration::from_secs(20)).unwrap_err();
    assert!(e.to_string().contains("world of 3"), "{e}");
    // Rank 1 gets no id.
    assert!(fetcher.join().unwrap().is_err());
}

#[test]
fn rendezvous_ignores_strangers_and_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stranger = std::thread::spawn(move || {
        use std::io::Write;
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    });
    let e = rendezvous::serve_on(listener, 2, &id(0), Duration::from_millis(700)).unwrap_err();
    stranger.join().unwrap();
    assert!(e.to_string().contains("waited"), "{e}");
    assert!(e.to_string().contains("[1]"), "{e}");
    let e = rendezvous::fetch("127.0.0.1", port, 1, 2, Duration::from_millis(200)).unwrap_err();
    assert!(e.to_string().contains("could not reach rank 0"), "{e}");
}

#[test]
fn reduce_types() {
    assert_eq!(reduce_type("t", DType::Float32, ReduceOp::Sum).unwrap(), DataType::Float32);
    assert_eq!(reduce_type("t", DType::Complex128, ReduceOp::Avg).unwrap(), DataType::Float64);
    assert_eq!(reduce_type("t", DType::Bool, ReduceOp::Max).unwrap(), DataType::Uint8);
    for (dtype, op) in [
        (DType::Bool, ReduceOp::Sum),
        (DType::Complex64, ReduceOp::Max),
        (DType::Int16, ReduceOp::Sum),
        (DType::UInt16, ReduceOp::Min),
    ] {
        let e = reduce_type("all_reduce", dtype, op).unwrap_err();
        assert!(matches!(e, Error::Distributed { .. }), "{e}");
        assert!(e.to_string().starts_with("all_reduce: "), "{e}");
    }
}
