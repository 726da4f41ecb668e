// The host's LLVM optimisation pipelines, with vector math functions declared to the loop
// vectoriser: the part of the new pass manager the LLVM C API cannot configure (`LLVMRunPasses`
// builds its TargetLibraryInfo with no vector library, so loops calling sinf, expf, logf, powf,
// ... stay scalar).
//
// The caller passes the table of vector variants (glibc's libmvec: `sinf` in a loop vectorised
// 16 wide becomes `_ZGVeN16v_sinf`), which the JIT resolves once libmvec.so.1 is loaded into
// the process. LLVM's own LIBMVEC table knows only six functions and no AVX-512 variants.

#include "llvm-c/TargetMachine.h"
#include "llvm-c/Types.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"

#include <cstring>
#include <vector>

// One vector variant of a scalar function (an entry of LLVM's VecFuncs.def).
struct KilnVecFn {
  const char *scalar; // "sinf", "llvm.sin.f32"
  const char *vector; // "_ZGVeN16v_sinf"
  unsigned lanes;     // 16
  const char *abi;    // "_ZGV_LLVM_N16v"
};

// Optimises `module` for `machine` (the host), the `count` vector variants of `fns` offered to
// the vectorisers: with `pipeline` null, `default<O3>`; else that textual pipeline. Returns 0,
// or 1 with a message in `error` (of `error_len` bytes) if the pipeline does not parse.
extern "C" int kiln_llvm_optimize_host(LLVMModuleRef module, LLVMTargetMachineRef machine,
                                       const KilnVecFn *fns, size_t count, const char *pipeline,
                                       char *error, size_t error_len) {
  using namespace llvm;
  Module *m = unwrap(module);
  // LLVMTargetMachineRef is a TargetMachine* (LLVM's C API casts it the same way).
  TargetMachine *tm = reinterpret_cast<TargetMachine *>(machine);

  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopInterleaving = true;
  tuning.LoopUnrolling = true;
  PassBuilder builder(tm, tuning);

  TargetLibraryInfoImpl tlii(m->getTargetTriple());
  std::vector<VecDesc> table;
  for (size_t i = 0; i < count; ++i)
    table.emplace_back(fns[i].scalar, fns[i].vector, ElementCount::getFixed(fns[i].lanes),
                       /*Masked=*/false, fns[i].abi, std::nullopt);
  tlii.addVectorizableFunctions(table);
  fam.registerPass([&] { return TargetLibraryAnalysis(tlii); });

  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  ModulePassManager passes;
  if (pipeline) {
    if (Error err = builder.parsePassPipeline(passes, pipeline)) {
      std::string text = toString(std::move(err));
      if (error_len > 0) {
        std::strncpy(error, text.c_str(), error_len - 1);
        error[error_len - 1] = '\0';
      }
      return 1;
    }
  } else {
    passes = builder.buildPerModuleDefaultPipeline(OptimizationLevel::O3);
  }
  passes.run(*m, mam);
  return 0;
}
