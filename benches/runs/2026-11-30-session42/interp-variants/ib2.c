// Session 42: the bytecode interpreter's variants timed on programs against compiled
// references. Build: gcc -O2 ib.c -o ib -ldl. Run: ./ib REF.cubin VARIANT.cubin:LANES ...
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef unsigned long long u64;
typedef int CUresult;
typedef void *CUmodule, *CUfunction, *CUevent, *CUctx;
typedef u64 CUdp;
#define F(ret, name, args) static ret(*name) args;
F(CUresult, cuInit, (unsigned))
F(CUresult, cuDeviceGet, (int*, int))
F(CUresult, cuDevicePrimaryCtxRetain, (CUctx*, int))
F(CUresult, cuCtxSetCurrent, (CUctx))
F(CUresult, cuModuleLoad, (CUmodule*, const char*))
F(CUresult, cuModuleGetFunction, (CUfunction*, CUmodule, const char*))
F(CUresult, cuMemAlloc_v2, (CUdp*, size_t))
F(CUresult, cuMemcpyHtoD_v2, (CUdp, const void*, size_t))
F(CUresult, cuMemcpyDtoH_v2, (void*, CUdp, size_t))
F(CUresult, cuLaunchKernel, (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**))
F(CUresult, cuEventCreate, (CUevent*, unsigned))
F(CUresult, cuEventRecord, (CUevent, void*))
F(CUresult, cuEventSynchronize, (CUevent))
F(CUresult, cuEventElapsedTime, (float*, CUevent, CUevent))
F(CUresult, cuCtxSynchronize, (void))
F(CUresult, cuDeviceGetAttribute, (int*, int, int))
F(CUresult, cuFuncSetAttribute, (CUfunction, int, int))
F(CUresult, cuOccupancyMaxActiveBlocksPerMultiprocessor, (int*, CUfunction, int, size_t))
#define CK(x) do { CUresult r_ = (x); if (r_) { printf("%s failed: %d (line %d)\n", #x, r_, __LINE__); exit(1); } } while (0)

enum { LOAD = 1, STORE = 2, CONST = 3, SQUARE = 13, EXP = 15, SIN = 22, COS = 23, NEG = 10, ADD = 60, SUB = 61, MUL = 62 };
#define F32 3
static u64 W(int op, int dst, int a, int b, int c) {
  return (u64)op | (u64)F32 << 8 | (u64)dst << 16 | (u64)a << 24 | (u64)b << 32 | (u64)c << 40;
}
static u64 fbits(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
typedef struct { const char* name; u64 code[64]; int ncode, regs, ninputs; } Prog;
typedef struct { u64 in[12]; u64 out[4]; } Buffers;

static int cmpf(const void* a, const void* b) { float x = *(float*)a, y = *(float*)b; return x < y ? -1 : x > y; }
static CUevent e0, e1;
static float time_launch(CUfunction f, unsigned blocks, unsigned threads, unsigned smem, void** args, int reps) {
  float t[64];
  for (int k = 0; k < 3; k++) CK(cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, smem, 0, args, 0));
  for (int k = 0; k < reps; k++) {
    CK(cuEventRecord(e0, 0));
    CK(cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, smem, 0, args, 0));
    CK(cuEventRecord(e1, 0));
    CK(cuEventSynchronize(e1));
    CK(cuEventElapsedTime(&t[k], e0, e1));
  }
  qsort(t, reps, sizeof(float), cmpf);
  return t[reps / 2];
}

int main(int argc, char** argv) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW);
#define L(name) name = dlsym(h, #name); if (!name) { printf("no %s\n", #name); return 1; }
  L(cuInit) L(cuDeviceGet) L(cuDevicePrimaryCtxRetain) L(cuCtxSetCurrent) L(cuModuleLoad) L(cuModuleGetFunction)
  L(cuMemAlloc_v2) L(cuMemcpyHtoD_v2) L(cuMemcpyDtoH_v2) L(cuLaunchKernel) L(cuEventCreate) L(cuEventRecord)
  L(cuEventSynchronize) L(cuEventElapsedTime) L(cuCtxSynchronize) L(cuDeviceGetAttribute) L(cuFuncSetAttribute) L(cuOccupancyMaxActiveBlocksPerMultiprocessor)
  int dev; CUctx ctx;
  CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
  int sms; CK(cuDeviceGetAttribute(&sms, 16, dev));
  CK(cuEventCreate(&e0, 0)); CK(cuEventCreate(&e1, 0));
  u64 n = getenv("IB_N") ? strtoull(getenv("IB_N"), 0, 0) : (1ull << 26);
  int reps = 15;
  float* hx = malloc(n * 4); float* hy = malloc(n * 4); float* hr = malloc(n * 4);
  for (u64 i = 0; i < n; i++) hx[i] = -3.0f + 6.0f * (float)((i * 2654435761ull) % 1000003) / 1000003.0f;
  CUdp x, z, w, y, r, code;
  CK(cuMemAlloc_v2(&x, n * 4)); CK(cuMemAlloc_v2(&z, n * 4)); CK(cuMemAlloc_v2(&w, n * 4));
  CK(cuMemAlloc_v2(&y, n * 4)); CK(cuMemAlloc_v2(&r, n * 4)); CK(cuMemAlloc_v2(&code, 8 * 384));
  CK(cuMemcpyHtoD_v2(x, hx, n * 4)); CK(cuMemcpyHtoD_v2(z, hx, n * 4)); CK(cuMemcpyHtoD_v2(w, hx, n * 4));

  Prog progs[5]; memset(progs, 0, sizeof progs);
  float k = 1000.123f, c = 0.25f;
  { Prog* p = &progs[0]; p->name = "copy"; p->regs = 1; p->ninputs = 1; int i = 0;
    p->code[i++] = W(LOAD, 0, 0, 0, 0); p->code[i++] = W(STORE, 0, 0, 0, 0); p->ncode = i; }
  { Prog* p = &progs[1]; p->name = "first_expr"; p->regs = 3; p->ninputs = 1; int i = 0;
    p->code[i++] = W(LOAD, 0, 0, 0, 0); p->code[i++] = W(CONST, 1, 0, 0, 0); p->code[i++] = fbits(k);
    p->code[i++] = W(MUL, 2, 0, 1, 0); p->code[i++] = W(COS, 1, 0, 0, 0); p->code[i++] = W(ADD, 0, 2, 1, 0);
    p->code[i++] = W(STORE, 0, 0, 0, 0); p->ncode = i; }
  { Prog* p = &progs[2]; p->name = "ew_chain"; p->regs = 3; p->ninputs = 1; int i = 0;
    p->code[i++] = W(LOAD, 0, 0, 0, 0); p->code[i++] = W(CONST, 1, 0, 0, 0); p->code[i++] = fbits(c);
    p->code[i++] = W(SUB, 1, 0, 1, 0); p->code[i++] = W(SQUARE, 1, 1, 0, 0);
    p->code[i++] = W(CONST, 2, 0, 0, 0); p->code[i++] = fbits(0.5f); p->code[i++] = W(MUL, 1, 1, 2, 0);
    p->code[i++] = W(SIN, 2, 0, 0, 0); p->code[i++] = W(ADD, 1, 1, 2, 0); p->code[i++] = W(MUL, 2, 0, 0, 0);
    p->code[i++] = W(NEG, 2, 2, 0, 0); p->code[i++] = W(EXP, 2, 2, 0, 0); p->code[i++] = W(MUL, 1, 1, 2, 0);
    p->code[i++] = W(STORE, 0, 1, 0, 0); p->ncode = i; }
  { Prog* p = &progs[3]; p->name = "add16"; p->regs = 2; p->ninputs = 1; int i = 0;
    p->code[i++] = W(LOAD, 0, 0, 0, 0); p->code[i++] = W(ADD, 1, 0, 0, 0);
    for (int j = 0; j < 15; j++) p->code[i++] = W(ADD, 1, 1, 0, 0);
    p->code[i++] = W(STORE, 0, 1, 0, 0); p->ncode = i; }
  { Prog* p = &progs[4]; p->name = "three_inputs"; p->regs = 2; p->ninputs = 3; int i = 0;
    p->code[i++] = W(LOAD, 0, 0, 0, 0); p->code[i++] = W(LOAD, 1, 1, 0, 0); p->code[i++] = W(MUL, 0, 0, 1, 0);
    p->code[i++] = W(LOAD, 1, 2, 0, 0); p->code[i++] = W(ADD, 0, 0, 1, 0); p->code[i++] = W(STORE, 0, 0, 0, 0); p->ncode = i; }

  CUmodule refm; CK(cuModuleLoad(&refm, argv[1]));
  const char* refs[5] = {"ref_copy", "ref_first", "ref_ew", "ref_add16", "ref_three"};
  printf("n = %llu, %d SMs; median of %d, ms; IB_OCC=%s\n", n, sms, reps, getenv("IB_OCC") ? getenv("IB_OCC") : "0");
  int only = getenv("IB_PROG") ? atoi(getenv("IB_PROG")) : -1;
  if (only >= 0) reps = 3;
  for (int pi = 0; pi < 5; pi++) {
    if (only >= 0 && pi != only) continue;
    Prog* p = &progs[pi];
    CUfunction rf; CK(cuModuleGetFunction(&rf, refm, refs[pi]));
    void* rargs[6]; int na = 0;
    rargs[na++] = &x;
    if (pi == 4) { rargs[na++] = &z; rargs[na++] = &w; }
    rargs[na++] = &r; rargs[na++] = &n;
    if (pi == 1) rargs[na++] = &k; else if (pi == 2) rargs[na++] = &c;
    unsigned rb = (unsigned)((n + 255) / 256);
    float tr = time_launch(rf, rb, 256, 0, rargs, reps);
    CK(cuMemcpyDtoH_v2(hr, r, n * 4));
    printf("%-13s compiled %.4f", p->name, tr);
    CK(cuMemcpyHtoD_v2(code, p->code, 8 * p->ncode));
    for (int vi = 2; vi < argc; vi++) {
      char path[512]; strncpy(path, argv[vi], 511); char* colon = strrchr(path, ':');
      int lanes = 4; if (colon) { *colon = 0; lanes = atoi(colon + 1); }
      CUmodule m; CK(cuModuleLoad(&m, path)); CUfunction f; CK(cuModuleGetFunction(&f, m, lanes == 1 ? "kiln_interp_1" : "kiln_interp"));
      int per_thread = p->regs * lanes * 8;
      int fit = (48 * 1024 - 6272) / per_thread / 32 * 32; if (fit < 32) fit = 32; if (fit > 256) fit = 256;
      u64 spread = (n + (u64)lanes * sms - 1) / ((u64)lanes * sms); spread = (spread + 31) / 32 * 32;
      int threads = spread < 32 ? 32 : spread > (u64)fit ? fit : (int)spread;
      u64 blocks = (n + (u64)threads * lanes - 1) / ((u64)threads * lanes);
      u64 maxb = (u64)sms * (2048 / threads); if (blocks > maxb) blocks = maxb;
      unsigned smem = per_thread * threads;
      int occ = getenv("IB_OCC") ? atoi(getenv("IB_OCC")) : 0, resident = 0;
      if (occ) {
        CK(cuFuncSetAttribute(f, 9, 100));
        CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&resident, f, threads, smem));
        u64 full = (u64)sms * (resident ? resident : 1);
        if (blocks > full) blocks = full;
      }
      Buffers b; memset(&b, 0, sizeof b); b.in[0] = x; b.in[1] = z; b.in[2] = w; b.out[0] = y;
      unsigned ncode = p->ncode, nprologue = 0;
      void* args[5] = {&code, &ncode, &nprologue, &n, &b};
      CK(cuMemcpyHtoD_v2(y, hx, 4)); // poison
      float t = time_launch(f, (unsigned)blocks, threads, smem, args, reps);
      CK(cuMemcpyDtoH_v2(hy, y, n * 4));
      double err = 0; for (u64 i = 0; i < n; i++) { double d = fabs((double)hy[i] - hr[i]) / (1.0 + fabs(hr[i])); if (d > err || d != d) err = d; }
      printf(" | %s:%d %.4f (%.2fx, err %.1e%s%d)", strrchr(path, '/') ? strrchr(path, '/') + 1 : path, lanes, t, t / tr, err, occ ? ", res " : "", resident);
    }
    printf("\n");
  }
  return 0;
}
