//! Where a call's host time goes, finer than `kiln::host_phase_times`: named points on the
//! dispatch path (`KILN_HOST_TRACE=1`), each charged with the time since the point before it
//! on the same thread. Off by default: a point then costs one relaxed atomic load.
//!
//! A caller that times calls (kiln-bench) calls [`begin`] before each call, so the first point
//! of a call is charged with the work before it (building the expression), and reads the sums
//! with [`report`]. Points are static names; the sums are per thread.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

/// 0: not read yet, 1: off, 2: on.
static STATE: AtomicU8 = AtomicU8::new(0);

/// Whether `KILN_HOST_TRACE` is on (read once).
pub fn enabled() -> bool {
    match STATE.load(Ordering::Relaxed) {
        0 => {
            let on = std::env::var("KILN_HOST_TRACE").is_ok_and(|v| !v.is_empty() && v != "0");
            STATE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
        s => s == 2,
    }
}

struct Trace {
    last: Option<Instant>,
    /// (point, total ns, count), in the order first met.
    sums: Vec<(&'static str, u64, u64)>,
}

thread_local! {
    static TRACE: RefCell<Trace> = const { RefCell::new(Trace { last: None, sums: Vec::new() }) };
}

/// Starts a call: the next point is charged from now.
pub fn begin() {
    if enabled() {
        TRACE.with(|t| t.borrow_mut().last = Some(Instant::now()));
    }
}

/// Charges `point` with the time since the previous point (or [`begin`]) on this thread.
#[inline]
pub fn point(point: &'static str) {
    if enabled() {
        charge(point);
    }
}

#[inline(never)]
fn charge(point: &'static str) {
    let now = Instant::now();
    // (`try_with`: an array a thread-local holds may drop after this thread's trace, at exit.)
    let _ = TRACE.try_with(|t| {
        let mut t = t.borrow_mut();
        if let Some(last) = t.last {
            let ns = (now - last).as_nanos() as u64;
            match t.sums.iter_mut().find(|s| s.0 == point) {
                Some(s) => {
                    s.1 += ns;
                    s.2 += 1;
                }
                None => t.sums.push((point, ns, 1)),
            }
        }
        t.last = Some(now);
    });
}

/// The sums since the last report on this thread, as (point, total µs, count), and clears them.
pub fn report() -> Vec<(&'static str, f64, u64)> {
    TRACE.with(|t| {
        let mut t = t.borrow_mut();
        t.last = None;
        t.sums.drain(..).map(|(p, ns, n)| (p, ns as f64 / 1e3, n)).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_charged_in_order_and_cleared_by_report() {
        STATE.store(2, Ordering::Relaxed);
        begin();
        point("a");
        point("b");
        point("a");
        let r = report();
        let names: Vec<_> = r.iter().map(|(p, _, n)| (*p, *n)).collect();
        assert_eq!(names, vec![("a", 2), ("b", 1)]);
        assert!(report().is_empty());
        // Without `begin`, a first point only starts the clock.
        point("c");
        point("d");
        let r = report();
        assert_eq!(r.iter().map(|(p, _, _)| *p).collect::<Vec<_>>(), vec!["d"]);
        // A point charged by a thread-local's drop after the thread's trace is gone (at the
        // thread's exit: destructors run in the reverse order of first use) is dropped, not a
        // panic in a destructor (an abort).
        struct Late;
        impl Drop for Late {
            fn drop(&mut self) {
                point("late");
            }
        }
        thread_local! { static LATE: Late = const { Late }; }
        let t = std::thread::spawn(|| {
            LATE.with(|_| ());
            begin();
            point("x");
        });
        assert!(t.join().is_ok());
        STATE.store(0, Ordering::Relaxed);
    }
}
