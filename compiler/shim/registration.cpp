// Selective MLIR registration for kiln: the parts the MLIR C API cannot reach.
//
// The C API can insert single dialects (mlirGetDialectHandle__*__) and register single passes
// (mlirRegisterConversion*), but it has no entry point for the dialect extensions `convert-to-llvm`
// needs (each dialect's ConvertToLLVMPatternInterface) nor for single MLIR -> LLVM IR
// translations: its only routes are mlirRegisterAllDialects / mlirRegisterAllLLVMTranslations,
// which pull every dialect and every LLVM backend into a static binary (~183 MB against ~75 MB
// stripped, see TOOLCHAIN.md). This file registers only what kiln uses.
//
// The C++ functions are forward-declared instead of including their MLIR headers: the headers
// cost ~6-30 s of compile time, and a changed signature still fails at link time because the
// mangled names encode the parameter types. The dialects are inserted through the C API.

#include "mlir-c/Dialect/Arith.h"
#include "mlir-c/Dialect/ControlFlow.h"
#include "mlir-c/Dialect/Func.h"
#include "mlir-c/Dialect/GPU.h"
#include "mlir-c/Dialect/Index.h"
#include "mlir-c/Dialect/LLVM.h"
#include "mlir-c/Dialect/Math.h"
#include "mlir-c/Dialect/MemRef.h"
#include "mlir-c/Dialect/NVVM.h"
#include "mlir-c/Dialect/SCF.h"
#include "mlir-c/Dialect/UB.h"
#include "mlir-c/IR.h"

namespace mlir {
class DialectRegistry;

// ConvertToLLVMPatternInterface implementations (mlir/Conversion/*ToLLVM/*.h).
namespace arith { void registerConvertArithToLLVMInterface(DialectRegistry &); }
namespace cf { void registerConvertControlFlowToLLVMInterface(DialectRegistry &); }
void registerConvertFuncToLLVMInterface(DialectRegistry &);
namespace NVVM { void registerConvertGpuToNVVMInterface(DialectRegistry &); }
namespace index { void registerConvertIndexToLLVMInterface(DialectRegistry &); }
void registerConvertMathToLLVMInterface(DialectRegistry &);
void registerConvertMemRefToLLVMInterface(DialectRegistry &);
void registerConvertNVVMToLLVMInterface(DialectRegistry &);
namespace ub { void registerConvertUBToLLVMInterface(DialectRegistry &); }

// MLIR -> LLVM IR translations (mlir/Target/LLVMIR/Dialect/*/*.h).
void registerBuiltinDialectTranslation(DialectRegistry &);
void registerGPUDialectTranslation(DialectRegistry &);
void registerLLVMDialectTranslation(DialectRegistry &);
void registerNVVMDialectTranslation(DialectRegistry &);
} // namespace mlir

extern "C" void kiln_mlir_register(MlirDialectRegistry raw) {
  const MlirDialectHandle dialects[] = {
      mlirGetDialectHandle__arith__(), mlirGetDialectHandle__cf__(),
      mlirGetDialectHandle__func__(),  mlirGetDialectHandle__gpu__(),
      mlirGetDialectHandle__index__(), mlirGetDialectHandle__llvm__(),
      mlirGetDialectHandle__math__(),  mlirGetDialectHandle__memref__(),
      mlirGetDialectHandle__nvvm__(),  mlirGetDialectHandle__scf__(),
      mlirGetDialectHandle__ub__(),
  };
  for (MlirDialectHandle dialect : dialects)
    mlirDialectHandleInsertDialect(dialect, raw);

  // Same cast as `unwrap` in mlir/CAPI/IR.h, without its heavy includes.
  mlir::DialectRegistry &registry = *static_cast<mlir::DialectRegistry *>(raw.ptr);

  mlir::arith::registerConvertArithToLLVMInterface(registry);
  mlir::cf::registerConvertControlFlowToLLVMInterface(registry);
  mlir::registerConvertFuncToLLVMInterface(registry);
  mlir::NVVM::registerConvertGpuToNVVMInterface(registry);
  mlir::index::registerConvertIndexToLLVMInterface(registry);
  mlir::registerConvertMathToLLVMInterface(registry);
  mlir::registerConvertMemRefToLLVMInterface(registry);
  mlir::registerConvertNVVMToLLVMInterface(registry);
  mlir::ub::registerConvertUBToLLVMInterface(registry);

  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerGPUDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
}
