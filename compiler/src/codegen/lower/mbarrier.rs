//! Inline PTX for Hopper's asynchronous copies: the block's shared window as 32-bit
//! addresses, and mbarrier arrivals and waits (the look-ahead scan, the queued scatter).

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
}
