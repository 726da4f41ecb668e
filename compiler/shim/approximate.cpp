// MLIR's polynomial approximations of math functions, for GPU kernels built without libdevice.
//
// MLIR 22 has no pass for them (only the test pass `test-math-polynomial-approximation`) and the C
// API does not reach `populateMathPolynomialApproximationPatterns`, so this applies the patterns
// greedily to a module and then checks that no math op is left that NVPTX cannot lower by itself
// (LLVM's `llvm.exp`, `llvm.log`, `llvm.pow`, ... abort the NVPTX backend).
//
// The patterns rewrite f32 (and vectors of f32) `math.exp`, `expm1`, `log`, `log2`, `log1p`,
// `sin`, `cos`, `tanh`, `atan`, `atan2`, `asin`, `acos`, `erf`, `erfc` and `cbrt` into `arith`
// ops; other types are left alone.

#include "mlir/CAPI/IR.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cstring>

namespace {
// Math ops the LLVM lowering turns into an NVPTX instruction (or a short inline sequence).
bool native(llvm::StringRef name) {
  static const char *const ok[] = {"math.sqrt",      "math.floor",    "math.ceil",
                                   "math.trunc",     "math.roundeven", "math.absf",
                                   "math.copysign",  "math.fma"};
  for (const char *n : ok)
    if (name == n)
      return true;
  return false;
}

void copy_out(const std::string &text, char *out, size_t len) {
  if (len == 0)
    return;
  size_t n = text.size() < len - 1 ? text.size() : len - 1;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}
} // namespace

// Rewrites the module's math ops into polynomial approximations. Returns 0, or 1 with the name
// of an op that remains and has no approximation (`math.exp : f64`) in `error`, or 2 if the
// rewrite did not converge.
extern "C" int kiln_math_polynomial(MlirOperation raw, char *error, size_t error_len) {
  mlir::Operation *module = unwrap(raw);
  mlir::RewritePatternSet patterns(module->getContext());
  mlir::populateMathPolynomialApproximationPatterns(patterns);
  if (mlir::failed(mlir::applyPatternsGreedily(module, std::move(patterns)))) {
    copy_out("the polynomial rewrite did not converge", error, error_len);
    return 2;
  }
  std::string left;
  module->walk([&](mlir::Operation *op) {
    llvm::StringRef name = op->getName().getStringRef();
    if (!left.empty() || !name.starts_with("math.") || native(name))
      return;
    left = name.str();
    if (op->getNumResults() == 1) {
      std::string ty;
      llvm::raw_string_ostream os(ty);
      op->getResult(0).getType().print(os);
      left += " : " + ty;
    }
  });
  if (!left.empty()) {
    copy_out(left, error, error_len);
    return 1;
  }
  return 0;
}
