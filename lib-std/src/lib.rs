//! kiln's standard library: composite operations built from the primitives of the array API,
//! each one lazy and fusable (softmax, log_softmax, logsumexp, expit, logit, layer norm, l2
//! norm, relu, gelu and its tanh approximation).

use kiln_frontend::{axis, Array, Result};

/// `scipy.special.logsumexp(x, axis)`: `log(sum(exp(x)))` computed stably as
/// `m + log(sum(exp(x - m)))` with `m = max(x)`. Errors: as `max` (an empty axis).
pub fn logsumexp(x: &Array, ax: i64) -> Result<Array> {
    let m = x.try_max(axis(ax).keepdims())?;
    let s = x.try_subtract(&m)?.try_exp()?.try_sum(axis(ax).keepdims())?;
    s.try_log()?.try_add(&m)?.try_squeeze(Some(&[ax]))
}

/// `softmax(x, axis)` as `scipy.special.softmax`: `exp(x - max) / sum(exp(x - max))`.
///
/// ```
/// let x = kiln_frontend::Array::from_vec(vec![1.0f32, 2.0, 3.0, 1000.0, 1000.0, 1000.0], &[2, 3]);
/// let y = kiln_std::softmax(&x, -1).unwrap();
/// let v: Vec<f32> = y.to_vec();
/// assert!((v[0] + v[1] + v[2] - 1.0).abs() < 1e-6);
/// assert!((v[3] - 1.0 / 3.0).abs() < 1e-6); // large values do not overflow
/// ```
pub fn softmax(x: &Array, ax: i64) -> Result<Array> {
    let m = x.try_max(axis(ax).keepdims())?;
    let e = x.try_subtract(&m)?.try_exp()?;
    let s = e.try_sum(axis(ax).keepdims())?;
    e.try_divide(&s)
}

/// `scipy.special.log_softmax(x, axis)`: `x - max - log(sum(exp(x - max)))`, stable for large
/// values. Errors: as `max` (an empty axis).
pub fn log_softmax(x: &Array, ax: i64) -> Result<Array> {
    let m = x.try_max(axis(ax).keepdims())?;
    let d = x.try_subtract(&m)?;
    let s = d.try_exp()?.try_sum(axis(ax).keepdims())?;
    d.try_subtract(&s.try_log()?)
}

/// `scipy.special.expit(x)`: the logistic sigmoid `1 / (1 + exp(-x))` (0 and 1 at ∓inf).
pub fn expit(x: &Array) -> Result<Array> {
    x.try_negative()?.try_exp()?.try_add(1.0)?.try_reciprocal()
}

/// `scipy.special.logit(p)`: `log(p / (1 - p))` (±inf at 1 and 0, NaN outside [0, 1]).
pub fn logit(p: &Array) -> Result<Array> {
    let one_minus = p.try_negative()?.try_add(1.0)?;
    p.try_divide(&one_minus)?.try_log()
}

/// Layer normalisation over the last axis (`torch.nn.functional.layer_norm` with
/// `normalized_shape = x.shape[-1:]`): `(x - mean) / sqrt(var + eps) * weight + bias`, the
/// variance biased (ddof 0). `weight` and `bias` broadcast against `x`.
pub fn layer_norm(x: &Array, weight: &Array, bias: &Array, eps: f64) -> Result<Array> {
    let mean = x.try_mean(axis(-1).keepdims())?;
    let d = x.try_subtract(&mean)?;
    let var = d.try_square()?.try_mean(axis(-1).keepdims())?;
    d.try_divide(&var.try_add(eps)?.try_sqrt()?)?.try_multiply(weight)?.try_add(bias)
}

/// Euclidean norm of each row of the last axis: `sqrt(sum(x*x, axis=-1))`.
pub fn l2norm_rows(x: &Array) -> Result<Array> {
    x.try_square()?.try_sum(-1)?.try_sqrt()
}

/// `relu(x)` (`torch.nn.functional.relu`): `maximum(x, 0)`; NaN stays NaN. After a matmul it is
/// a cuBLASLt epilogue form (see `kiln::FusionReport::epilogues`).
pub fn relu(x: &Array) -> Result<Array> {
    x.try_maximum(0)
}

/// `gelu(x)` (`torch.nn.functional.gelu`, exact form): `x * (1 + erf(x / sqrt(2))) / 2`, for
/// float dtypes (integers compute in float as `erf` does).
pub fn gelu(x: &Array) -> Result<Array> {
    let e = x.try_multiply(std::f64::consts::FRAC_1_SQRT_2)?.try_erf()?;
    x.try_multiply(&e.try_add(1.0)?)?.try_multiply(0.5)
}

/// `gelu_tanh(x)` (`torch.nn.functional.gelu(x, approximate="tanh")`), the tanh approximation
/// of GELU: `(0.5 * x) * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x³)))`, each op in the dtype of
/// `x` (float dtypes; integers and bools compute in the float dtype `tanh` gives them, complex
/// numbers as complex). After a matmul (`gelu_tanh(a @ b)` or `gelu_tanh(a @ b + bias)`) it is
/// a cuBLASLt epilogue form (`CUBLASLT_EPILOGUE_GELU`/`_GELU_BIAS`, see
/// `kiln::FusionReport::epilogues`): the partitioner recognises exactly this expression.
///
/// ```
/// let x = kiln_frontend::Array::from_vec(vec![-3.0f64, 0.0, 1.0], &[3]);
/// let y: Vec<f64> = kiln_std::gelu_tanh(&x).unwrap().to_vec();
/// assert!((y[0] + 0.0036373920817).abs() < 1e-12 && y[1] == 0.0 && (y[2] - 0.8411919906082768).abs() < 1e-12);
/// ```
pub fn gelu_tanh(x: &Array) -> Result<Array> {
    let x = if x.dtype().is_float() || x.dtype().is_complex() {
        x.clone()
    } else {
        x.astype(x.try_tanh()?.dtype())
    };
    let cube = x.try_multiply(&x)?.try_multiply(&x)?;
    let inner = x.try_add(&cube.try_multiply(GELU_C2)?)?;
    let t = inner.try_multiply(GELU_C1)?.try_tanh()?;
    x.try_multiply(0.5)?.try_multiply(&t.try_add(1.0)?)
}

/// `sqrt(2/pi)` and the cubic coefficient of [`gelu_tanh`] (the values the partitioner's
/// epilogue match, `kiln_compiler::fusion::GELU_C1`/`GELU_C2`, looks for).
const GELU_C1: f64 = 0.797_884_560_802_865_4;
const GELU_C2: f64 = 0.044_715;
