//! A small builder of MLIR text: SSA names, scoped common-subexpression elimination of pure ops,
//! constants and kernel parameters hoisted to the function entry, and nested regions.
//!
//! The builder knows nothing of kiln's ops; [`super::lower`] drives it. Everything it prints is
//! a deterministic function of the calls made, so the same region always gives the same text.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use super::{MathLib, Target};

/// Builds the body of one `func.func`.
pub(crate) struct Builder {
    /// Parameter loads and constants: printed at the top of the function, so they dominate
    /// every use.
    entry: String,
    /// The code, in order.
    body: String,
    indent: usize,
    next: usize,
    /// `value : type` of each constant → its SSA name (function-wide).
    consts: HashMap<String, String>,
    /// Pure op text → SSA name, one map per open region (innermost last).
    scopes: Vec<HashMap<String, String>>,
    /// Whether each open region is a loop's body (`scf.for`, `scf.while`), innermost last.
    loop_regions: Vec<bool>,
    /// The loops an SSA value depends on: how many of the loops open where it was defined its
    /// operands vary in (0 for the function entry's constants and parameters; see
    /// [`Builder::loop_invariant`]). Values the builder did not define are not in it.
    loop_depth: HashMap<String, usize>,
    /// Values of the kernel's i64 parameters, by slot; deduplicated by value.
    params: Vec<i64>,
    param_names: HashMap<i64, String>,
    /// Name of the function argument holding the parameter array.
    params_arg: String,
    /// External function declarations (libm), by symbol.
    decls: BTreeMap<String, String>,
    /// Bytes from its start that each input read by [`Builder::entry_load`] holds.
    deref: BTreeMap<String, u64>,
    /// What the code is for: decides how math functions are called.
    pub target: Target,
    /// How math functions are computed (the target's library unless set).
    pub math: MathLib,
    /// Divisions of indices in 32 bits (every index of the kernel fits): on the GPU a 64-bit
    /// division is a long software sequence.
    pub index32: bool,
    /// Extents up to this size are constants rather than parameters ([`super::index::extent`]):
    /// the kernel's text then depends on them (no reuse across those sizes), and LLVM folds
    /// their index arithmetic (constant strides become address offsets). 1 by default.
    pub const_extents: usize,
    /// Where float divisions' range checks are gathered rather than branched on: a GPU row
    /// kernel's output step collects them and takes one branch for the whole step (see
    /// [`super::division::divide`]). `None`: each division branches by itself. Gathered only
    /// in the scope where the gathering began ([`Builder::gather_div_checks`]): a check made
    /// in a region opened since (a row's loop recomputed in the step) is not visible where the
    /// step branches, so that division branches by itself.
    pub div_checks: Option<Vec<String>>,
    /// The scope depth [`Builder::div_checks`] gathers at.
    div_checks_at: usize,
    /// Float divisions are emitted as the IEEE division itself, which LLVM may not speculate
    /// (an output step's slow path).
    pub div_exact: bool,
}

impl Builder {
    pub fn new(params_arg: &str, target: Target) -> Builder {
        Builder {
            entry: String::new(),
            body: String::new(),
            indent: 4,
            next: 0,
            consts: HashMap::new(),
            scopes: vec![HashMap::new()],
            loop_regions: vec![false],
            loop_depth: HashMap::new(),
            params: Vec::new(),
            param_names: HashMap::new(),
            params_arg: params_arg.to_string(),
            decls: BTreeMap::new(),
            deref: BTreeMap::new(),
            target,
            math: match target {
                Target::Host => MathLib::Libm,
                Target::Gpu => MathLib::Libdevice,
            },
            index32: false,
            const_extents: 1,
            div_checks: None,
            div_checks_at: 0,
            div_exact: false,
        }
    }

    /// Starts gathering float divisions' range checks here (`gather`), or stops (`!gather`),
    /// returning what was gathered before, and where: give both back to
    /// [`Builder::restore_div_checks`] when done.
    pub fn gather_div_checks(&mut self, gather: bool) -> (Option<Vec<String>>, usize) {
        let at = std::mem::replace(&mut self.div_checks_at, self.scopes.len());
        (std::mem::replace(&mut self.div_checks, gather.then(Vec::new)), at)
    }

    /// Ends a gathering begun by [`Builder::gather_div_checks`], with what it returned; the
    /// checks gathered meanwhile.
    pub fn restore_div_checks(&mut self, outer: (Option<Vec<String>>, usize)) -> Vec<String> {
        self.div_checks_at = outer.1;
        std::mem::replace(&mut self.div_checks, outer.0).unwrap_or_default()
    }

    /// Whether a division here gathers its range check ([`Builder::div_checks`]) rather than
    /// branching by itself.
    pub fn gathers_div_checks(&self) -> bool {
        self.div_checks.is_some() && self.scopes.len() == self.div_checks_at
    }

    /// A new SSA name.
    pub fn fresh(&mut self) -> String {
        let n = self.next;
        self.next += 1;
        format!("%{n}")
    }

    fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.body.push(' ');
        }
        self.body.push_str(text);
        self.body.push('\n');
    }

    /// A pure op (`arith.addi %a, %b : i64`): emitted once per scope in which it is visible.
    pub fn op(&mut self, text: &str) -> String {
        for scope in self.scopes.iter().rev() {
            if let Some(name) = scope.get(text) {
                return name.clone();
            }
        }
        let name = self.fresh();
        self.line(&format!("{name} = {text}"));
        self.scopes.last_mut().expect("a scope is open").insert(text.to_string(), name.clone());
        let depth = self.operand_depth(text);
        self.loop_depth.insert(name.clone(), depth);
        name
    }

    /// The loops open here.
    fn loops(&self) -> usize {
        self.loop_regions.iter().filter(|l| **l).count()
    }

    /// The loop depth a pure op of `text` depends on: the deepest of its `%` operands', all
    /// open loops for an operand the builder did not define, and for a load (memory a loop
    /// may write) unless it is marked invariant.
    fn operand_depth(&self, text: &str) -> usize {
        let loops = self.loops();
        if text.starts_with("llvm.load") && !text.contains(" invariant ") {
            return loops;
        }
        let mut depth = 0;
        let mut rest = text;
        while let Some(at) = rest.find('%') {
            let tail = &rest[at..];
            let end = tail[1..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '#'))
                .map_or(tail.len(), |e| e + 1);
            let d = self.loop_depth.get(&tail[..end]).copied().unwrap_or(loops);
            depth = depth.max(d);
            rest = &tail[end..];
        }
        depth
    }

    /// Whether SSA value `name` is invariant in the innermost open loop: the builder defined
    /// it from values all defined outside that loop (LLVM then computes it once, before the
    /// loop). A code-quality hint, never a question of correctness.
    pub fn loop_invariant(&self, name: &str) -> bool {
        let loops = self.loops();
        loops > 0 && self.loop_depth.get(name).is_some_and(|d| *d < loops)
    }

    /// An op with side effects or several results, emitted as is (`llvm.store ...`).
    pub fn stmt(&mut self, text: &str) {
        self.line(text);
    }

    /// An op with `n` results and a region: prints `%r:n = header {` and opens a scope.
    /// Returns the result names (`%r#0`, ...); close it with [`Builder::close`].
    pub fn open(&mut self, n: usize, header: &str) -> Vec<String> {
        let r = self.fresh();
        let names: Vec<String> = match n {
            0 => {
                self.line(&format!("{header} {{"));
                Vec::new()
            }
            1 => {
                self.line(&format!("{r} = {header} {{"));
                vec![r]
            }
            _ => {
                self.line(&format!("{r}:{n} = {header} {{"));
                (0..n).map(|i| format!("{r}#{i}")).collect()
            }
        };
        // The op's results vary with every loop open around it (its region's values may).
        let loops = self.loops();
        for name in &names {
            self.loop_depth.insert(name.clone(), loops);
        }
        self.indent += 2;
        self.scopes.push(HashMap::new());
        self.loop_regions.push(header.starts_with("scf.for") || header.starts_with("scf.while"));
        names
    }

    /// Ends the current region and starts the next one of the same op (`} do {`, `} else {`).
    pub fn next_region(&mut self, text: &str) {
        // `scf.while`'s `do` region is a loop body as its `before` region is.
        self.scopes.pop();
        self.indent -= 2;
        self.line(&format!("}} {text} {{"));
        self.indent += 2;
        self.scopes.push(HashMap::new());
    }

    /// Closes the innermost region (`}`).
    pub fn close(&mut self) {
        self.scopes.pop();
        self.loop_regions.pop();
        self.indent -= 2;
        self.line("}");
    }

    /// Closes the innermost region, an `scf.for`'s, with `attrs` on the op (`} {attrs}`).
    pub fn close_with(&mut self, attrs: &str) {
        self.scopes.pop();
        self.loop_regions.pop();
        self.indent -= 2;
        self.line(&format!("}} {attrs}"));
    }

    /// `(x / e, x % e)` of non-negative i64 indices, in 32 bits when [`Builder::index32`].
    pub fn divrem(&mut self, x: &str, e: &str) -> (String, String) {
        if !self.index32 {
            return (
                self.op(&format!("arith.divui {x}, {e} : i64")),
                self.op(&format!("arith.remui {x}, {e} : i64")),
            );
        }
        let x32 = self.op(&format!("arith.trunci {x} : i64 to i32"));
        let e32 = self.op(&format!("arith.trunci {e} : i64 to i32"));
        let q = self.op(&format!("arith.divui {x32}, {e32} : i32"));
        let r = self.op(&format!("arith.remui {x32}, {e32} : i32"));
        (
            self.op(&format!("arith.extui {q} : i32 to i64")),
            self.op(&format!("arith.extui {r} : i32 to i64")),
        )
    }

    /// A constant of an MLIR type, function-wide (`1.5 : f32`, `-1 : i8`, `true`).
    pub fn constant(&mut self, value: &str, ty: &str) -> String {
        let key = format!("{value} : {ty}");
        if let Some(n) = self.consts.get(&key) {
            return n.clone();
        }
        let name = self.fresh();
        let text = if ty == "i1" {
            format!("arith.constant {value}")
        } else {
            format!("arith.constant {key}")
        };
        let _ = writeln!(self.entry, "    {name} = {text}");
        self.consts.insert(key, name.clone());
        self.loop_depth.insert(name.clone(), 0);
        name
    }

    /// The value of `name` when it is an i64 [`Builder::constant`].
    pub fn i64_value(&self, name: &str) -> Option<i64> {
        self.consts
            .iter()
            .find(|(_, n)| n.as_str() == name)
            .and_then(|(k, _)| k.strip_suffix(" : i64")?.parse().ok())
    }

    /// The value of `name` when it is a float [`Builder::constant`] of type `ty` (f32 or f64,
    /// printed by [`super::types::float_const`] as its bits).
    pub fn float_value(&self, name: &str, ty: &str) -> Option<f64> {
        let suffix = format!(" : {ty}");
        let (k, _) = self.consts.iter().find(|(_, n)| n.as_str() == name)?;
        let hex = k.strip_suffix(suffix.as_str())?.strip_prefix("0x")?;
        match ty {
            "f32" => Some(f32::from_bits(u32::from_str_radix(hex, 16).ok()?) as f64),
            "f64" => Some(f64::from_bits(u64::from_str_radix(hex, 16).ok()?)),
            _ => None,
        }
    }

    /// The bytes of input `ptr` that [`Builder::entry_load`] reads, from its start: the
    /// pointer's `llvm.dereferenceable` (what lets LLVM hoist the load out of the loop of
    /// the GPU entry, where a kernel's call sits in a branch).
    pub fn dereferenceable(&self, ptr: &str) -> Option<u64> {
        self.deref.get(ptr).copied()
    }

    /// Element `pos` (an i64 [`Builder::constant`]) of the kernel input `ptr`, `bytes` wide (of
    /// memory type `m`),
    /// loaded once at the function entry and marked invariant: a kernel never writes its
    /// inputs, so a loop need not load it again each iteration (LLVM cannot hoist a load out
    /// of a branch of the loop by itself: it does not know the buffer is dereferenceable).
    /// A broadcast scalar input, such as a random draw's key and counter offset, costs one
    /// load a thread.
    pub fn entry_load(&mut self, ptr: &str, pos: &str, m: &str, bytes: u64) -> String {
        let key = format!("load {ptr}[{pos}] : {m}");
        if let Some(n) = self.consts.get(&key) {
            return n.clone();
        }
        let end = self.i64_value(pos).expect("a constant position") as u64 * bytes + bytes;
        let d = self.deref.entry(ptr.to_string()).or_insert(0);
        *d = (*d).max(end);
        let (addr, name) = (self.fresh(), self.fresh());
        let _ = writeln!(
            self.entry,
            "    {addr} = llvm.getelementptr inbounds {ptr}[{pos}] : (!llvm.ptr, i64) -> !llvm.ptr, {m}"
        );
        let _ = writeln!(self.entry, "    {name} = llvm.load {addr} invariant : !llvm.ptr -> {m}");
        self.consts.insert(key, name.clone());
        self.loop_depth.insert(name.clone(), 0);
        name
    }

    /// A stack array of `n` elements of `ty`, allocated at the function entry.
    pub fn alloca(&mut self, n: usize, ty: &str) -> String {
        let count = self.i64(n as i64);
        let name = self.fresh();
        let _ = writeln!(
            self.entry,
            "    {name} = llvm.alloca {count} x {ty} {{alignment = 64 : i64}} : (i64) -> !llvm.ptr"
        );
        name
    }

    /// An i64 constant.
    pub fn i64(&mut self, v: i64) -> String {
        self.constant(&v.to_string(), "i64")
    }

    /// An i64 kernel parameter holding `value` (loaded from the parameter array at entry).
    /// Parameters are deduplicated by value, so equal sizes share a slot.
    pub fn param(&mut self, value: i64) -> String {
        if let Some(n) = self.param_names.get(&value) {
            return n.clone();
        }
        let slot = self.params.len();
        self.params.push(value);
        let ptr = self.fresh();
        let name = self.fresh();
        let _ = writeln!(
            self.entry,
            "    {ptr} = llvm.getelementptr inbounds {}[{slot}] : (!llvm.ptr) -> !llvm.ptr, i64",
            self.params_arg
        );
        let _ = writeln!(self.entry, "    {name} = llvm.load {ptr} invariant : !llvm.ptr -> i64");
        self.param_names.insert(value, name.clone());
        self.loop_depth.insert(name.clone(), 0);
        name
    }

    /// Declares an external function once: `func.func private @sym(types) -> type`.
    pub fn declare(&mut self, sym: &str, decl: String) {
        self.decls.entry(sym.to_string()).or_insert(decl);
    }

    /// The parameter values, by slot.
    pub fn params(&self) -> &[i64] {
        &self.params
    }

    /// The entry code (parameter loads, constants) and the body, in that order.
    pub fn finish(self) -> (String, String, Vec<String>) {
        (self.entry, self.body, self.decls.into_values().collect())
    }
}
