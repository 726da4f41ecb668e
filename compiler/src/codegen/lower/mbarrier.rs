//! Inline PTX for Hopper's asynchronous copies: the block's shared window as 32-bit
//! addresses, mbarriers (initialised, arrived on with or without a transaction count, waited
//! on) and bulk copies completing on them (the look-ahead scan, the queued scatter).

use super::Lower;

impl Lower<'_> {
    /// The shared-window address (32-bit) of the block's dynamic shared memory.
    pub(super) fn smem_base32(&mut self) -> String {
        let g = self.b.op("llvm.mlir.addressof @kiln_rows : !llvm.ptr<3>");
        self.b.op(&format!("llvm.ptrtoint {g} : !llvm.ptr<3> to i32"))
    }

    /// PTX `text` with operands `args` (SSA value, type) under `constraints`, as a statement
    /// with side effects.
    pub(super) fn asm(&mut self, text: &str, constraints: &str, args: &[(&str, &str)]) {
        let names: Vec<&str> = args.iter().map(|a| a.0).collect();
        let tys: Vec<&str> = args.iter().map(|a| a.1).collect();
        self.b.stmt(&format!(
            "llvm.inline_asm has_side_effects \"{text}\", \"{constraints}\" {} : ({}) -> ()",
            names.join(", "),
            tys.join(", ")
        ));
    }

    /// Arrives on the mbarrier at shared address `bar` (release: the thread's shared-memory
    /// writes before it are seen by the threads its phase wakes).
    pub(super) fn asm_arrive(&mut self, bar: &str) {
        self.asm(
            "{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [$0]; }",
            "r",
            &[(bar, "i32")],
        );
    }

    /// Waits until the mbarrier at shared address `bar` completes the phase of parity `par`.
    pub(super) fn asm_wait(&mut self, bar: &str, par: &str) {
        self.asm(
            "{ .reg .pred p; LAB_WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1; @!p bra LAB_WAIT; }",
            "r,r",
            &[(bar, "i32"), (par, "i32")],
        );
    }

    /// The 32-bit shared address of 8-byte slot `slot` from byte `bars` of dynamic shared
    /// memory.
    pub(super) fn slot32(&mut self, bars: usize, slot: usize) -> String {
        let base = self.smem_base32();
        let off = self.b.constant(&(bars + 8 * slot).to_string(), "i32");
        self.b.op(&format!("arith.addi {base}, {off} : i32"))
    }

    /// The 32-bit shared address of 8-byte slot `first + s` from byte `bars` (`s` an i64).
    pub(super) fn bar_at(&mut self, bars: usize, first: usize, s: &str) -> String {
        let base = self.slot32(bars, first);
        let s = self.b.op(&format!("arith.trunci {s} : i64 to i32"));
        let eight = self.b.constant("8", "i32");
        let off = self.b.op(&format!("arith.muli {s}, {eight} : i32"));
        self.b.op(&format!("arith.addi {base}, {off} : i32"))
    }

    /// Initialises the mbarrier at shared address `bar` for `count` (an i32) arrivals.
    pub(super) fn asm_init(&mut self, bar: &str, count: &str) {
        self.asm("mbarrier.init.shared::cta.b64 [$0], $1;", "r,r", &[(bar, "i32"), (count, "i32")]);
    }

    /// Makes the initialisations before it visible to the bulk-copy engine.
    pub(super) fn asm_init_fence(&mut self) {
        self.asm("fence.mbarrier_init.release.cluster;", "", &[]);
    }

    /// Arrives on the mbarrier at shared address `bar`, its phase expecting `bytes` (an i32)
    /// more of bulk copies.
    pub(super) fn asm_expect_tx(&mut self, bar: &str, bytes: &str) {
        self.asm(
            "{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [$0], $1; }",
            "r,r",
            &[(bar, "i32"), (bytes, "i32")],
        );
    }

    /// Copies `bytes` (an i32, a multiple of 16) from global address `src` (an i64) to shared
    /// address `dst` (an i32), both 16-byte aligned, completing on the mbarrier at `bar`.
    pub(super) fn asm_bulk_copy(&mut self, dst: &str, src: &str, bytes: &str, bar: &str) {
        self.asm(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];",
            "r,l,r,r",
            &[(dst, "i32"), (src, "i64"), (bytes, "i32"), (bar, "i32")],
        );
    }
}
