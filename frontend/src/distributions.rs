//! `kiln::random`'s other distributions (NumPy's `Generator` methods): `exponential`, `gamma`,
//! `beta`, `poisson`, `binomial`, and the draws without a formula per element: `permutation`,
//! `shuffle`, `choice`.
//!
//! **Lazy draws.** `exponential`, `gamma`, `beta`, `poisson` and `binomial` are elementwise
//! functions of Philox draws, so they fuse into their readers like `random` does. A rejection
//! sampler cannot loop in a fused kernel, so it runs a fixed number `R` of rounds, each from
//! fresh draws (the generator takes `R` times the element count from its stream), and each
//! element keeps its first accepted candidate (a chain of `where`). `R` is chosen so that the
//! probability that no round accepts is below 10⁻¹⁵ for every parameter (the per-round rejection
//! probabilities below were integrated numerically, and the accepted distributions checked exact
//! against the pmf, for the constants used here); in that case the element gets a documented
//! fallback value. Every element computes all `R` rounds: the cost of a draw is `R` times a
//! round's, the price of fusing.
//!
//! - gamma (Marsaglia–Tsang, float64 arithmetic): at most 4.84% of a round rejected (at
//!   `shape` = 1, fewer above), `R = 12` (0.0484¹² < 2·10⁻¹⁶); fallback `d·max(v, 0)` of the
//!   last round. `shape < 1` uses the boost `G(shape + 1) · u^(1/shape)`.
//! - poisson, `lam >= 10` (Hörmann's PTRS): at most 24.8% rejected (at `lam` = 10), `R = 25`
//!   (0.248²⁵ < 7·10⁻¹⁶); fallback `floor(lam)`. `lam < 10`: inversion (below).
//! - binomial, `n·min(p, 1-p) >= 10` (Hörmann's BTRS): at most 29.1% rejected (at n = 20,
//!   p = 0.5), `R = 29` (0.291²⁹ < 3·10⁻¹⁶); fallback the mode `floor((n + 1)p)`. Smaller:
//!   inversion.
//!
//! Inversion (poisson `lam < 10`, binomial `n·min(p, 1-p) < 10`): the distribution function
//! `F(k)` is tabulated on the host in float64 and each element is `#{k : F(k) <= u}` for a
//! float64 uniform `u` (an unrolled sum of comparisons, elementwise). The table stops where the
//! pmf has fallen below 2⁻⁶⁰ past the mode (the mass left out is below 2⁻⁵⁹, under the uniform's
//! resolution 2⁻⁵³), so the probabilities are exact to about 10⁻¹⁶.
//!
//! The acceptance tests use `gammaln` differences as NumPy's PTRS does: their absolute error is
//! about `lam·ln(lam)·2⁻⁵³` (`n·ln(n)·2⁻⁵³` for binomial), negligible below ~10⁹ and a relative
//! distortion of the acceptance near 10⁻³ at 10¹².
//!
//! **Sorts.** `permutation` and `shuffle` sort 63-bit random keys (`argsort`, stable); a tie
//! between two keys (probability below `n²/2⁶⁴`) keeps the original order of the two. `choice`
//! without replacement is the first `size` of such a permutation; with weights `p`, the
//! Efraimidis–Spirakis keys `E/p` (`E` exponential) sorted, which picks as successive draws
//! proportional to `p` among the items left do. With replacement: `integers`, or with `p` the
//! count of the normalised cumulative `p` below a uniform (`searchsorted`, `O(len(p))` per draw).
//!
//! The numbers are not NumPy's for the same seed (nor its samplers' streams).

use kiln_ir::eval::special::gammaln_f64;
use kiln_ir::DType;

use crate::array::Array;
use crate::elementwise::{try_where_, Operand};
use crate::error::{value_err, Result};
use crate::random::Generator;
use crate::views::SliceArg;

/// Rejection rounds of Marsaglia–Tsang (rejection at most 0.0484 a round).
const GAMMA_ROUNDS: usize = 12;
/// Rejection rounds of PTRS (at most 0.248 a round for `lam >= 10`).
const POISSON_ROUNDS: usize = 25;
/// Rejection rounds of BTRS (at most 0.291 a round for `n·min(p, 1-p) >= 10`).
const BINOMIAL_ROUNDS: usize = 29;
/// Below this mean, poisson and binomial invert a host table instead of rejecting.
const INVERSION_MEAN: f64 = 10.0;
/// Terms of the array form's inversion below [`INVERSION_MEAN`]: a count of 48 or more has
/// probability below 4·10⁻¹⁸ there.
const INVERSION_TERMS: usize = 48;
/// NumPy's largest `lam`: `int64 max - 10·sqrt(int64 max)`.
pub(crate) const POISSON_LAM_MAX: f64 = 9.223372006484771e18;

/// What `permutation` and `choice` draw from: `0..n`, or the elements of an array along its
/// first axis (NumPy's `int or array_like` argument).
#[derive(Clone, Copy, Debug)]
pub enum Population<'a> {
    /// `np.arange(n)`.
    Range(i64),
    /// The array's sub-arrays along axis 0.
    Array(&'a Array),
}

impl From<i64> for Population<'_> {
    fn from(n: i64) -> Self {
        Population::Range(n)
    }
}

impl From<i32> for Population<'_> {
    fn from(n: i32) -> Self {
        Population::Range(n as i64)
    }
}

impl From<usize> for Population<'_> {
    fn from(n: usize) -> Self {
        Population::Range(n as i64)
    }
}

impl<'a> From<&'a Array> for Population<'a> {
    fn from(a: &'a Array) -> Self {
        Population::Array(a)
    }
}

pub(crate) fn float_dtype(op: &str, dtype: DType) -> Result<()> {
    if matches!(dtype, DType::Float32 | DType::Float64) {
        return Ok(());
    }
    let accepted = "float32, float64".into();
    Err(kiln_ir::IrError::UnsupportedDType { op: op.into(), dtypes: vec![dtype], accepted }.into())
}

/// `Error::Value` for `op` unless `ok`.
fn require(op: &str, ok: bool, message: impl FnOnce() -> String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(value_err(op, message()))
    }
}

/// `[rounds] + size`, the shape of a draw giving each round its own elements.
fn with_rounds(rounds: usize, size: &[usize], lanes: Option<usize>) -> Vec<usize> {
    let mut s = vec![rounds];
    s.extend_from_slice(size);
    s.extend(lanes);
    s
}

/// `a[r]`, or `a[r, ..., lane]`.
fn round(a: &Array, r: usize, lane: Option<i64>) -> Result<Array> {
    let mut idx = vec![SliceArg::Index(r as i64)];
    if let Some(l) = lane {
        idx.extend([SliceArg::Ellipsis, SliceArg::Index(l)]);
    }
    a.try_slice(&idx)
}

/// The first accepted candidate of the rounds, else `fallback`: `where(ok₀, c₀, where(ok₁, c₁,
/// ... fallback))`.
fn first_accepted(rounds: Vec<(Array, Array)>, fallback: Array) -> Result<Array> {
    rounds.into_iter().rev().try_fold(fallback, |acc, (ok, cand)| try_where_(&ok, &cand, &acc))
}

/// `#{k : table[k] <= u}` for the increasing host `table`, int64, elementwise.
fn count_below(u: &Array, table: &[f64]) -> Result<Array> {
    let mut acc = crate::creation::zeros(u.shape(), DType::Int64);
    for &f in table {
        acc = acc.try_add(u.try_greater_equal(f)?.astype(DType::Int64))?;
    }
    Ok(acc)
}

/// The array form of [`count_below`] over [`cdf_table`]: `#{k < INVERSION_TERMS : cdf_k <= u}`
/// (and `k < limit` where given), int64 of `u`'s shape, for each element's pmf from `pmf0` by
/// `pmf(k + 1) = pmf(k) · ratio(k)`, its distribution function summed as `cdf_table` sums it.
fn count_by_search(
    u: &Array,
    pmf0: Array,
    limit: Option<&Array>,
    ratio: impl Fn(usize) -> Result<Array>,
) -> Result<Array> {
    let (mut pmf, mut cdf) = (pmf0.clone(), pmf0);
    let mut count = crate::creation::zeros(u.shape(), DType::Int64);
    for k in 0..INVERSION_TERMS {
        if k > 0 {
            cdf = cdf.try_add(&pmf)?;
        }
        let mut counted = u.try_greater_equal(&cdf)?;
        if let Some(n) = limit {
            counted = counted.try_logical_and(&n.try_greater(k as f64)?)?;
        }
        count = count.try_add(counted.astype(DType::Int64))?;
        pmf = pmf.try_multiply(&ratio(k)?)?;
    }
    Ok(count)
}

/// The distribution function of a log-concave pmf given by its first value and the ratio
/// `pmf(k + 1) / pmf(k)`, for `k < limit`, up to where it reaches 1 or the pmf falls below 2⁻⁶⁰
/// with ratios below 1/2 (the tail left out below 2⁻⁵⁹).
fn cdf_table(pmf0: f64, ratio: impl Fn(f64) -> f64, limit: f64) -> Vec<f64> {
    let (mut pmf, mut cdf, mut k) = (pmf0, 0.0f64, 0.0f64);
    let mut table = Vec::new();
    while k < limit {
        cdf += pmf;
        if cdf >= 1.0 {
            break;
        }
        table.push(cdf);
        let r = ratio(k);
        if pmf < 2f64.powi(-60) && r < 0.5 {
            break;
        }
        pmf *= r;
        k += 1.0;
    }
    table
}

/// One round of Hörmann's transformed rejection (PTRS, BTRS) from the uniform pair
/// `uv[r, ..., 0..2]`: `u = uv₀ - 1/2`, `v = uv₁`, `us = 1/2 - |u|`, the candidate
/// `k = floor((2a/us + b)·u + c)`, the squeeze `us >= 0.07 and v <= vr`, and the hat
/// `a/us² + b`.
struct TrialRound {
    v: Array,
    us: Array,
    k: Array,
    fast: Array,
    hat: Array,
}

impl TrialRound {
    fn new(uv: &Array, r: usize, a: f64, b: f64, c: f64, vr: f64) -> Result<TrialRound> {
        TrialRound::with(uv, r, [(2.0 * a).into(), a.into(), b.into(), c.into(), vr.into()])
    }

    /// [`TrialRound::new`] with the constants `[2a, a, b, c, vr]` as scalars or arrays (each
    /// element's own, broadcast against the round's draws).
    fn with(uv: &Array, r: usize, [a2, a, b, c, vr]: [Operand; 5]) -> Result<TrialRound> {
        let (u, v) = (round(uv, r, Some(0))?.try_subtract(0.5)?, round(uv, r, Some(1))?);
        let us = u.try_abs()?.try_multiply(-1.0)?.try_add(0.5)?;
        let k = us.try_reciprocal()?.try_multiply(a2)?.try_add(b.clone())?.try_multiply(&u)?;
        let k = k.try_add(c)?.try_floor()?;
        let fast = us.try_greater_equal(0.07)?.try_logical_and(&v.try_less_equal(vr)?)?;
        let hat = us.try_multiply(&us)?.try_reciprocal()?.try_multiply(a)?.try_add(b)?;
        Ok(TrialRound { v, us, k, fast, hat })
    }

    /// BTRS's acceptance of the round (Hörmann 1993, the binomial of `n` trials), the
    /// constants `[n, n + 1, α, m, ln(p/q), h]`: whether its candidate `k` is accepted
    /// (`0 <= k <= n`, and the squeeze or
    /// `ln(v·α/(a/us² + b)) <= h - ln k! - ln (n-k)! + (k - m) ln(p/q)`), and `k`.
    fn btrs_accept(self, [n, n1, alpha, m, lpq, h]: [Operand; 6]) -> Result<(Array, Array)> {
        let TrialRound { v, k, fast, hat, .. } = self;
        let inside = k.try_greater_equal(0.0)?.try_logical_and(&k.try_less_equal(n)?)?;
        let lhs = v.try_multiply(alpha)?.try_divide(&hat)?.try_log()?;
        let rhs = k.try_subtract(m)?.try_multiply(lpq)?.try_add(h)?;
        let rhs = rhs.try_subtract(&k.try_add(1.0)?.try_gammaln()?)?;
        let rhs = rhs.try_subtract(&k.try_multiply(-1.0)?.try_add(n1)?.try_gammaln()?)?;
        let ok = inside.try_logical_and(&fast.try_logical_or(&lhs.try_less_equal(&rhs)?)?)?;
        Ok((ok, k))
    }

    /// PTRS's acceptance of the round (Hörmann 1993, the Poisson of mean `lam`): whether its
    /// candidate `k` is accepted (the squeeze, else outside the tail and
    /// `ln v + ln(1/α) - ln(a/us² + b) <= -lam + k ln lam - ln k!`), and `k`.
    fn ptrs_accept(
        self,
        log_inv_alpha: Operand,
        loglam: Operand,
        lam: Operand,
    ) -> Result<(Array, Array)> {
        let TrialRound { v, us, k, fast, hat } = self;
        let tail = us.try_less(0.013)?.try_logical_and(&v.try_greater(&us)?)?;
        let lhs = v.try_log()?.try_add(log_inv_alpha)?.try_subtract(&hat.try_log()?)?;
        let rhs = k.try_multiply(loglam)?.try_subtract(lam)?;
        let rhs = rhs.try_subtract(&k.try_add(1.0)?.try_gammaln()?)?;
        let slow = k
            .try_greater_equal(0.0)?
            .try_logical_and(&tail.try_logical_not()?)?
            .try_logical_and(&lhs.try_less_equal(&rhs)?)?;
        Ok((fast.try_logical_or(&slow)?, k))
    }
}

impl Generator {
    /// `rng.exponential(scale, size)`: exponential floats of mean `scale` (density
    /// `exp(-x/scale)/scale` on x >= 0), `-scale · log1p(-u)` for `u` uniform in [0, 1), made in
    /// `dtype` (float32 or float64) and lazy: it fuses into its reader. Shape `size`.
    ///
    /// Errors: `scale` negative, NaN or infinite (NumPy: "scale < 0"); another dtype.
    pub fn try_exponential(&mut self, scale: f64, size: &[usize], dtype: DType) -> Result<Array> {
        require("exponential", scale >= 0.0 && scale.is_finite(), || {
            format!("scale < 0 or not finite (got {scale})")
        })?;
        float_dtype("exponential", dtype)?;
        let u = self.stream.uniform(size, dtype)?;
        u.try_multiply(-1.0)?.try_log1p()?.try_multiply(-scale)
    }

    /// Marsaglia–Tsang's standard gamma of shape `k >= 1` in float64, shape `size`: `R` rounds
    /// of a normal `z` and a uniform `u`, `d = k - 1/3`, `v = (1 + z/sqrt(9d))³`, accepted when
    /// `1 + z/sqrt(9d) > 0` and `ln u < z²/2 + d(1 - v + ln v)`; the value `d·v`.
    fn marsaglia_tsang(&mut self, k: f64, size: &[usize]) -> Result<Array> {
        let d = k - 1.0 / 3.0;
        self.marsaglia_tsang_dc(d.into(), (1.0 / (9.0 * d).sqrt()).into(), size)
    }

    /// [`Generator::marsaglia_tsang`] from `d = k - 1/3` and `c = 1/sqrt(9d)`, scalars or float64
    /// arrays that broadcast to `size` (one shape per element).
    pub(crate) fn marsaglia_tsang_dc(
        &mut self,
        d: Operand,
        c: Operand,
        size: &[usize],
    ) -> Result<Array> {
        let f64 = DType::Float64;
        let z = self.stream.standard_normal(&with_rounds(GAMMA_ROUNDS, size, None), f64)?;
        let u = self.stream.uniform(&with_rounds(GAMMA_ROUNDS, size, None), f64)?;
        let mut rounds = Vec::with_capacity(GAMMA_ROUNDS);
        let mut last_v = None;
        for r in 0..GAMMA_ROUNDS {
            let z = round(&z, r, None)?;
            let t = z.try_multiply(c.clone())?.try_add(1.0)?;
            let v = t.try_multiply(&t)?.try_multiply(&t)?;
            let bound = z
                .try_multiply(&z)?
                .try_multiply(0.5)?
                .try_add(&v.try_log()?.try_subtract(&v)?.try_add(1.0)?.try_multiply(d.clone())?)?;
            let ok = t
                .try_greater(0.0)?
                .try_logical_and(&round(&u, r, None)?.try_log()?.try_less(&bound)?)?;
            rounds.push((ok, v.try_multiply(d.clone())?));
            last_v = Some(v);
        }
        let fallback = last_v.expect("rounds").try_maximum(0.0)?.try_multiply(d)?;
        first_accepted(rounds, fallback)
    }

    /// A standard gamma of shape `k > 0` in float64 as `(g, boost)`: the value is
    /// `g · exp(boost)`, `boost` the log of `u^(1/k)` for `k < 1` (`g` of shape `k + 1`).
    fn standard_gamma_parts(&mut self, k: f64, size: &[usize]) -> Result<(Array, Option<Array>)> {
        if k >= 1.0 {
            return Ok((self.marsaglia_tsang(k, size)?, None));
        }
        let g = self.marsaglia_tsang(k + 1.0, size)?;
        // 1 - u is uniform in (0, 1]: its log is finite.
        let u = self.stream.uniform(size, DType::Float64)?;
        Ok((g, Some(u.try_multiply(-1.0)?.try_log1p()?.try_multiply(1.0 / k)?)))
    }

    /// `rng.gamma(shape, scale, size)`: gamma floats of shape `shape_k` and scale `scale`
    /// (mean `shape_k·scale`, variance `shape_k·scale²`), shape `size`, lazy: Marsaglia–Tsang
    /// in 12 rejection rounds from fresh draws, each element its first accepted candidate (at
    /// most 4.84% of a round rejects, at shape 1: no round accepts with probability below
    /// 2·10⁻¹⁶, and then the element is the last round's candidate `d·max(v, 0)`); `shape_k < 1`
    /// through the boost `G(shape_k + 1)·u^(1/shape_k)`. Computed in float64 and cast to
    /// `dtype` (float32 values below its smallest subnormal round to 0). `shape_k = 0` or
    /// `scale = 0` gives zeros, as NumPy.
    ///
    /// Errors: `shape_k` or `scale` negative, NaN or infinite (NumPy: "shape < 0", "scale < 0");
    /// a dtype other than float32/float64.
    pub fn try_gamma(
        &mut self,
        shape_k: f64,
        scale: f64,
        size: &[usize],
        dtype: DType,
    ) -> Result<Array> {
        require("gamma", shape_k >= 0.0 && shape_k.is_finite(), || {
            format!("shape < 0 or not finite (got {shape_k})")
        })?;
        require("gamma", scale >= 0.0 && scale.is_finite(), || {
            format!("scale < 0 or not finite (got {scale})")
        })?;
        float_dtype("gamma", dtype)?;
        if shape_k == 0.0 || scale == 0.0 {
            return Ok(crate::creation::zeros(size, dtype));
        }
        let (g, boost) = self.standard_gamma_parts(shape_k, size)?;
        let g = match boost {
            Some(b) => g.try_multiply(&b.try_exp()?)?,
            None => g,
        };
        Ok(g.try_multiply(scale)?.astype(dtype))
    }

    /// `rng.beta(a, b, size)`: beta floats on [0, 1] (mean `a/(a+b)`), `X/(X+Y)` for
    /// independent gammas `X` of shape `a` and `Y` of shape `b`, computed as
    /// `1/(1 + exp(ln Y - ln X))` so that small shapes do not underflow to 0/0; lazy (two
    /// [`Generator::try_gamma`] draws), float64 arithmetic cast to `dtype`. Shape `size`.
    ///
    /// Errors: `a` or `b` not positive, NaN or infinite (NumPy: "a <= 0", "b <= 0"); a dtype
    /// other than float32/float64.
    pub fn try_beta(&mut self, a: f64, b: f64, size: &[usize], dtype: DType) -> Result<Array> {
        require("beta", a > 0.0 && a.is_finite(), || format!("a <= 0 or not finite (got {a})"))?;
        require("beta", b > 0.0 && b.is_finite(), || format!("b <= 0 or not finite (got {b})"))?;
        float_dtype("beta", dtype)?;
        let mut log_gamma = |k: f64| -> Result<Array> {
            let (g, boost) = self.standard_gamma_parts(k, size)?;
            let lg = g.try_log()?;
            match boost {
                Some(b) => lg.try_add(&b),
                None => Ok(lg),
            }
        };
        let (lx, ly) = (log_gamma(a)?, log_gamma(b)?);
        let beta = ly.try_subtract(&lx)?.try_exp()?.try_add(1.0)?.try_reciprocal()?;
        Ok(beta.astype(dtype))
    }

    /// `rng.poisson(lam, size)`: Poisson counts of mean `lam`, int64 of shape `size`, lazy:
    /// inversion of a float64 host table of the distribution function for `lam < 10` (each
    /// element counts the table's values below a uniform; the tail past a pmf of 2⁻⁶⁰ left
    /// out), Hörmann's PTRS above, in 25 rejection rounds (at most 24.8% of a round rejects, at
    /// `lam = 10`: no round accepts with probability below 7·10⁻¹⁶, and then the element is
    /// `floor(lam)`). The acceptance test uses `gammaln` as NumPy's PTRS, accurate to about
    /// `lam·ln(lam)·2⁻⁵³`. `lam = 0` gives zeros.
    ///
    /// Errors: `lam` negative or NaN ("lam < 0"), above NumPy's limit 9.2·10¹⁸ ("lam value too
    /// large").
    pub fn try_poisson(&mut self, lam: f64, size: &[usize]) -> Result<Array> {
        require("poisson", lam >= 0.0, || format!("lam < 0 (got {lam})"))?;
        require("poisson", lam <= POISSON_LAM_MAX, || format!("lam value too large (got {lam})"))?;
        if lam == 0.0 {
            return Ok(crate::creation::zeros(size, DType::Int64));
        }
        if lam < INVERSION_MEAN {
            let u = self.stream.uniform(size, DType::Float64)?;
            return count_below(&u, &cdf_table((-lam).exp(), |k| lam / (k + 1.0), f64::INFINITY));
        }
        let (slam, loglam) = (lam.sqrt(), lam.ln());
        let b = 0.931 + 2.53 * slam;
        let a = -0.059 + 0.02483 * b;
        let log_inv_alpha = (1.1239 + 1.1328 / (b - 3.4)).ln();
        let vr = 0.9277 - 3.6224 / (b - 2.0);
        let uv =
            self.stream.uniform(&with_rounds(POISSON_ROUNDS, size, Some(2)), DType::Float64)?;
        let mut rounds = Vec::with_capacity(POISSON_ROUNDS);
        for r in 0..POISSON_ROUNDS {
            let round = TrialRound::new(&uv, r, a, b, lam + 0.43, vr)?;
            rounds.push(round.ptrs_accept(log_inv_alpha.into(), loglam.into(), lam.into())?);
        }
        let fallback = crate::creation::full(size, lam.floor(), DType::Float64);
        Ok(first_accepted(rounds, fallback)?.astype(DType::Int64))
    }

    /// Poisson counts of each element's mean `lam` (float64, finite, in [0,
    /// [`POISSON_LAM_MAX`]], broadcasting to `shape`), int64 of shape `shape`: below
    /// [`INVERSION_MEAN`] inversion by sequential search (the distribution function summed as
    /// [`cdf_table`] sums it, [`INVERSION_TERMS`] terms), above PTRS with the element's
    /// constants ([`Generator::try_poisson`]'s rounds); every element draws both, and its mean
    /// picks one.
    pub(crate) fn poisson_counts(&mut self, lam: &Array, shape: &[usize]) -> Result<Array> {
        let u = self.stream.uniform(shape, DType::Float64)?;
        let pmf0 = lam.try_multiply(-1.0)?.try_exp()?;
        let small = count_by_search(&u, pmf0, None, |k| lam.try_divide((k + 1) as f64))?;
        let b = lam.try_sqrt()?.try_multiply(2.53)?.try_add(0.931)?;
        let a = b.try_multiply(0.02483)?.try_add(-0.059)?;
        let inv_alpha = b.try_subtract(3.4)?.try_reciprocal()?.try_multiply(1.1328)?;
        let log_inv_alpha = inv_alpha.try_add(1.1239)?.try_log()?;
        let vr = b.try_subtract(2.0)?.try_reciprocal()?.try_multiply(-3.6224)?.try_add(0.9277)?;
        let (a2, c, loglam) = (a.try_multiply(2.0)?, lam.try_add(0.43)?, lam.try_log()?);
        let uv =
            self.stream.uniform(&with_rounds(POISSON_ROUNDS, shape, Some(2)), DType::Float64)?;
        let mut rounds = Vec::with_capacity(POISSON_ROUNDS);
        for r in 0..POISSON_ROUNDS {
            let constants = [&a2, &a, &b, &c, &vr].map(|x| x.clone().into());
            let round = TrialRound::with(&uv, r, constants)?;
            let (lia, ll, l) = (&log_inv_alpha, &loglam, lam);
            rounds.push(round.ptrs_accept(lia.into(), ll.into(), l.into())?);
        }
        let large = first_accepted(rounds, lam.try_floor()?)?.astype(DType::Int64);
        try_where_(&lam.try_less(INVERSION_MEAN)?, &small, &large)
    }

    /// `rng.binomial(n, p, size)`: binomial counts of `n` trials of probability `p`, int64 of
    /// shape `size`, lazy: for `m = n·min(p, 1-p) < 10` inversion of a host table, above
    /// Hörmann's BTRS in 29 rejection rounds (at most 29.1% of a round rejects, at n = 20,
    /// p = 1/2: no round accepts with probability below 3·10⁻¹⁶, and then the element is the
    /// mode `floor((n + 1)p)`; `gammaln` differences accurate to about `n·ln(n)·2⁻⁵³`); `p > 1/2` draws
    /// `n - binomial(n, 1-p)`. `n = 0`, `p = 0` give zeros, `p = 1` gives `n`.
    ///
    /// Errors: `n < 0` ("n < 0"); `p` outside [0, 1] or NaN ("p < 0, p > 1 or p is NaN").
    pub fn try_binomial(&mut self, n: i64, p: f64, size: &[usize]) -> Result<Array> {
        require("binomial", n >= 0, || format!("n < 0 (got {n})"))?;
        require("binomial", (0.0..=1.0).contains(&p), || {
            format!("p < 0, p > 1 or p is NaN (got {p})")
        })?;
        if n == 0 || p == 0.0 || p == 1.0 {
            return Ok(crate::creation::full(size, if p == 1.0 { n } else { 0 }, DType::Int64));
        }
        let flip = p > 0.5;
        let (p, nf) = (if flip { 1.0 - p } else { p }, n as f64);
        let q = 1.0 - p;
        let x = if nf * p < INVERSION_MEAN {
            let u = self.stream.uniform(size, DType::Float64)?;
            let pmf0 = (nf * (-p).ln_1p()).exp();
            count_below(&u, &cdf_table(pmf0, |k| (nf - k) / (k + 1.0) * (p / q), nf))?
        } else {
            self.btrs(nf, p, size)?.astype(DType::Int64)
        };
        if flip {
            x.try_multiply(-1i64)?.try_add(n)
        } else {
            Ok(x)
        }
    }

    /// BTRS (Hörmann 1993) for `n·p >= 10`, `p <= 1/2`, float64 counts of shape `size`.
    fn btrs(&mut self, n: f64, p: f64, size: &[usize]) -> Result<Array> {
        let spq = (n * p * (1.0 - p)).sqrt();
        let b = 1.15 + 2.53 * spq;
        let a = -0.0873 + 0.0248 * b + 0.01 * p;
        let c = n * p + 0.5;
        let vr = 0.92 - 4.2 / b;
        let alpha = (2.83 + 5.1 / b) * spq;
        let lpq = (p / (1.0 - p)).ln();
        let m = ((n + 1.0) * p).floor();
        let h = gammaln_f64(m + 1.0) + gammaln_f64(n - m + 1.0);
        let uv =
            self.stream.uniform(&with_rounds(BINOMIAL_ROUNDS, size, Some(2)), DType::Float64)?;
        let mut rounds = Vec::with_capacity(BINOMIAL_ROUNDS);
        for r in 0..BINOMIAL_ROUNDS {
            let round = TrialRound::new(&uv, r, a, b, c, vr)?;
            let consts = [n.into(), (n + 1.0).into(), alpha.into(), m.into(), lpq.into(), h.into()];
            rounds.push(round.btrs_accept(consts)?);
        }
        first_accepted(rounds, crate::creation::full(size, m, DType::Float64))
    }

    /// Binomial counts of each element's `n` trials of probability `p` (float64 arrays, `n` a
    /// whole number in [0, 2⁵³], `p` in [0, 1], broadcasting to `shape`), int64 of shape
    /// `shape`: with `p' = min(p, 1-p)`, below `n·p' = `[`INVERSION_MEAN`] inversion by
    /// sequential search ([`INVERSION_TERMS`] terms, positions below `n`), above BTRS with the
    /// element's constants ([`Generator::try_binomial`]'s rounds); every element draws both;
    /// `p > 1/2` gives `n` less the count of `1 - p`.
    pub(crate) fn binomial_counts(
        &mut self,
        n: &Array,
        p: &Array,
        shape: &[usize],
    ) -> Result<Array> {
        let flip = p.try_greater(0.5)?;
        let p = try_where_(&flip, &p.try_multiply(-1.0)?.try_add(1.0)?, p)?;
        let q = p.try_multiply(-1.0)?.try_add(1.0)?;
        let pq = p.try_divide(&q)?;
        let u = self.stream.uniform(shape, DType::Float64)?;
        let pmf0 = p.try_multiply(-1.0)?.try_log1p()?.try_multiply(n)?.try_exp()?;
        let small = count_by_search(&u, pmf0, Some(n), |k| {
            n.try_subtract(k as f64)?.try_divide((k + 1) as f64)?.try_multiply(&pq)
        })?;
        let spq = n.try_multiply(&p)?.try_multiply(&q)?.try_sqrt()?;
        let b = spq.try_multiply(2.53)?.try_add(1.15)?;
        let a = b.try_multiply(0.0248)?.try_add(-0.0873)?.try_add(&p.try_multiply(0.01)?)?;
        let c = n.try_multiply(&p)?.try_add(0.5)?;
        let inv_b = b.try_reciprocal()?;
        let vr = inv_b.try_multiply(-4.2)?.try_add(0.92)?;
        let alpha = inv_b.try_multiply(5.1)?.try_add(2.83)?.try_multiply(&spq)?;
        let lpq = pq.try_log()?;
        let m = n.try_add(1.0)?.try_multiply(&p)?.try_floor()?;
        let n1 = n.try_add(1.0)?;
        let h = m.try_add(1.0)?.try_gammaln()?.try_add(&n1.try_subtract(&m)?.try_gammaln()?)?;
        let a2 = a.try_multiply(2.0)?;
        let uv =
            self.stream.uniform(&with_rounds(BINOMIAL_ROUNDS, shape, Some(2)), DType::Float64)?;
        let mut rounds = Vec::with_capacity(BINOMIAL_ROUNDS);
        for r in 0..BINOMIAL_ROUNDS {
            let constants = [&a2, &a, &b, &c, &vr].map(|x| x.clone().into());
            let round = TrialRound::with(&uv, r, constants)?;
            let consts = [n, &n1, &alpha, &m, &lpq, &h].map(|x| x.clone().into());
            rounds.push(round.btrs_accept(consts)?);
        }
        let large = first_accepted(rounds, m.clone())?.astype(DType::Int64);
        let x = try_where_(&n.try_multiply(&p)?.try_less(INVERSION_MEAN)?, &small, &large)?;
        let flipped = x.try_multiply(-1i64)?.try_add(&n.astype(DType::Int64))?;
        try_where_(&flip, &flipped, &x)
    }

    /// Int64 positions `0..n` in a random order: the argsort of `n` 63-bit random keys.
    fn random_order(&mut self, n: usize) -> Result<Array> {
        let keys = self.stream.integers(0, i64::MAX, &[n], DType::Int64)?;
        keys.try_argsort(Some(0))
    }

    /// `x` shuffled along axis 0 (a copy), for `op`'s errors.
    fn shuffled(&mut self, op: &str, x: &Array) -> Result<Array> {
        require(op, x.ndim() > 0, || "x must be an integer or at least 1-dimensional".into())?;
        let order = self.random_order(x.shape()[0])?;
        x.try_take(&order, Some(0))
    }

    /// `rng.permutation(x)`: for an integer `n`, `0..n` in a random order (int64 `[n]`; a
    /// negative `n` gives an empty array, as NumPy's `arange`); for an array, a copy with its
    /// sub-arrays along axis 0 in a random order (same shape and dtype). Uniform over the
    /// orders up to ties of its 63-bit random keys (probability below `n²/2⁶⁴`; a tie keeps
    /// the two items' order): an `argsort` of random keys, a sort region, not fused.
    ///
    /// Errors: a 0-d array.
    pub fn try_permutation<'a>(&mut self, x: impl Into<Population<'a>>) -> Result<Array> {
        match x.into() {
            Population::Range(n) => self.random_order(n.max(0) as usize),
            Population::Array(a) => self.shuffled("permutation", a),
        }
    }

    /// `rng.shuffle(x)`: NumPy shuffles in place; kiln's arrays are values, so this returns the
    /// shuffled copy (along axis 0, as [`Generator::try_permutation`] of an array).
    ///
    /// Errors: a 0-d array.
    pub fn try_shuffle(&mut self, x: &Array) -> Result<Array> {
        self.shuffled("shuffle", x)
    }

    /// `rng.choice(a, size, replace, p)`: `prod(size)` draws from `a` (`0..n` for an integer,
    /// else `a`'s sub-arrays along axis 0), with or without replacement, uniformly or with
    /// probabilities `p` (one per item, host values, normalised by their sum as NumPy does).
    /// The result has shape `size` (int64) for an integer `a`, `size + a.shape[1:]` (`a`'s
    /// dtype) for an array. With replacement: `integers`, or with `p` the count of the
    /// normalised cumulative `p` at or below a float64 uniform (`searchsorted`, `O(len(p))` work
    /// per draw). Without: the first `prod(size)` of a permutation, or with `p` the
    /// Efraimidis–Spirakis order (the smallest keys `E/p`, `E` exponential, which draws as
    /// successive picks proportional to `p` among the items left).
    ///
    /// Errors (NumPy's ValueErrors): `a` an integer <= 0 or an empty array when samples are
    /// asked for; a 0-d array; `p`'s length not the population's; `p` with NaN, a negative
    /// value, or a sum further than `sqrt(eps)` from 1; without replacement, `size` larger than
    /// the population, or than the number of non-zero `p`.
    pub fn try_choice<'a>(
        &mut self,
        a: impl Into<Population<'a>>,
        size: &[usize],
        replace: bool,
        p: Option<&[f64]>,
    ) -> Result<Array> {
        let a = a.into();
        let k: usize = size.iter().product();
        let pop = match a {
            Population::Range(n) => {
                let msg = || "a must be a positive integer unless no samples are taken".into();
                require("choice", n > 0 || k == 0, msg)?;
                n.max(0) as usize
            }
            Population::Array(x) => {
                require("choice", x.ndim() > 0, || "a must be 1-dimensional or more".into())?;
                let msg = || "a cannot be empty unless no samples are taken".into();
                require("choice", x.shape()[0] > 0 || k == 0, msg)?;
                x.shape()[0]
            }
        };
        if let Some(p) = p {
            check_probabilities(p, pop)?;
        }
        if !replace {
            let msg = || "Cannot take a larger sample than population when replace is False";
            require("choice", k <= pop, || msg().into())?;
            if let Some(p) = p {
                let nonzero = p.iter().filter(|&&w| w > 0.0).count();
                require("choice", k <= nonzero, || "Fewer non-zero entries in p than size".into())?;
            }
        }
        let dims: Vec<i64> = size.iter().map(|&d| d as i64).collect();
        let idx = if k == 0 {
            crate::creation::zeros(size, DType::Int64)
        } else if replace {
            match p {
                None => self.stream.integers(0, pop as i64, size, DType::Int64)?,
                Some(p) => {
                    let total: f64 = p.iter().sum();
                    let cdf: Vec<f64> = p
                        .iter()
                        .scan(0.0, |s, &w| {
                            *s += w;
                            Some(*s / total)
                        })
                        .collect();
                    let u = self.stream.uniform(size, DType::Float64)?;
                    let cdf = Array::from_vec(cdf, &[pop]);
                    let i = crate::search::try_searchsorted(&cdf, &u, crate::search::Side::Right)?;
                    i.try_minimum(pop as i64 - 1)?
                }
            }
        } else {
            let order = match p {
                None => self.random_order(pop)?,
                Some(p) => {
                    let u = self.stream.uniform(&[pop], DType::Float64)?;
                    let e = u.try_multiply(-1.0)?.try_log1p()?.try_multiply(-1.0)?;
                    e.try_divide(Array::from_vec(p.to_vec(), &[pop]))?.try_argsort(Some(0))?
                }
            };
            let first = SliceArg::Range { start: Some(0), stop: Some(k as i64), step: 1 };
            order.try_slice(&[first])?.try_reshape(&dims)?
        };
        match a {
            Population::Range(_) => Ok(idx),
            Population::Array(x) => x.try_take(&idx, Some(0)),
        }
    }
}

/// NumPy's checks of `choice`'s `p` for a population of `pop`.
fn check_probabilities(p: &[f64], pop: usize) -> Result<()> {
    let len = p.len();
    require("choice", len == pop, || format!("a and p must have same size ({pop} and {len})"))?;
    require("choice", !p.iter().any(|w| w.is_nan()), || "probabilities contain NaN".into())?;
    require("choice", p.iter().all(|&w| w >= 0.0), || "probabilities are not non-negative".into())?;
    let sum: f64 = p.iter().sum();
    require("choice", (sum - 1.0).abs() <= f64::EPSILON.sqrt(), || {
        format!("probabilities do not sum to 1 (sum {sum})")
    })
}

/// The panicking forms.
impl Generator {
    /// [`Generator::try_exponential`], panicking on error.
    #[track_caller]
    pub fn exponential(&mut self, scale: f64, size: &[usize], dtype: DType) -> Array {
        crate::unwrap(self.try_exponential(scale, size, dtype))
    }
    /// [`Generator::try_gamma`], panicking on error.
    #[track_caller]
    pub fn gamma(&mut self, shape_k: f64, scale: f64, size: &[usize], dtype: DType) -> Array {
        crate::unwrap(self.try_gamma(shape_k, scale, size, dtype))
    }
    /// [`Generator::try_beta`], panicking on error.
    #[track_caller]
    pub fn beta(&mut self, a: f64, b: f64, size: &[usize], dtype: DType) -> Array {
        crate::unwrap(self.try_beta(a, b, size, dtype))
    }
    /// [`Generator::try_poisson`], panicking on error.
    #[track_caller]
    pub fn poisson(&mut self, lam: f64, size: &[usize]) -> Array {
        crate::unwrap(self.try_poisson(lam, size))
    }
    /// [`Generator::try_binomial`], panicking on error.
    #[track_caller]
    pub fn binomial(&mut self, n: i64, p: f64, size: &[usize]) -> Array {
        crate::unwrap(self.try_binomial(n, p, size))
    }
    /// [`Generator::try_permutation`], panicking on error.
    #[track_caller]
    pub fn permutation<'a>(&mut self, x: impl Into<Population<'a>>) -> Array {
        crate::unwrap(self.try_permutation(x))
    }
    /// [`Generator::try_shuffle`], panicking on error.
    #[track_caller]
    pub fn shuffle(&mut self, x: &Array) -> Array {
        crate::unwrap(self.try_shuffle(x))
    }
    /// [`Generator::try_choice`], panicking on error.
    #[track_caller]
    pub fn choice<'a>(
        &mut self,
        a: impl Into<Population<'a>>,
        size: &[usize],
        replace: bool,
        p: Option<&[f64]>,
    ) -> Array {
        crate::unwrap(self.try_choice(a, size, replace, p))
    }
}

/// A random permutation of `0..n` or of an array's rows, from the global generator
/// ([`Generator::try_permutation`]).
pub fn try_permutation<'a>(x: impl Into<Population<'a>>) -> Result<Array> {
    crate::random::with_global(|g| g.try_permutation(x))
}

/// [`try_permutation`], panicking on error.
#[track_caller]
pub fn permutation<'a>(x: impl Into<Population<'a>>) -> Array {
    crate::unwrap(try_permutation(x))
}

/// Draws from a population, from the global generator ([`Generator::try_choice`]).
pub fn try_choice<'a>(
    a: impl Into<Population<'a>>,
    size: &[usize],
    replace: bool,
    p: Option<&[f64]>,
) -> Result<Array> {
    crate::random::with_global(|g| g.try_choice(a, size, replace, p))
}

/// [`try_choice`], panicking on error.
#[track_caller]
pub fn choice<'a>(
    a: impl Into<Population<'a>>,
    size: &[usize],
    replace: bool,
    p: Option<&[f64]>,
) -> Array {
    crate::unwrap(try_choice(a, size, replace, p))
}
