// Session 41: the fixed costs of a CUDA process on this machine, without kiln: the driver's
// load, cuInit, the primary context, and a CUDA library's load (dlopen, dlclose, dlopen again:
// what cudarc's `is_culib_present` then `culib()` do) and first handle; then the exit.
// Build: gcc -O2 floor.c -o floor -ldl. Run: ./floor LIB CREATE (e.g. libcusolver.so.12
// cusolverDnCreate); prints ms for each stage, and CLOCK_REALTIME at main and before exit.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
static long long real_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

typedef int (*init_t)(unsigned);
typedef int (*get_t)(int*, int);
typedef int (*retain_t)(void**, int);
typedef int (*set_t)(void*);
typedef int (*create_t)(void**);

int main(int argc, char** argv) {
  printf("main at %lld ns\n", real_ns());
  double t = now_ms(), t0 = t;
#define STAGE(name)                                 \
  do {                                              \
    double n = now_ms();                            \
    printf("%-28s %8.2f ms\n", name, n - t);        \
    t = n;                                          \
  } while (0)
  void* cuda = dlopen("libcuda.so.1", RTLD_LAZY);
  STAGE("dlopen libcuda");
  if (!cuda) {
    printf("no libcuda: %s\n", dlerror());
    return 1;
  }
  dlclose(cuda);
  STAGE("dlclose libcuda");
  cuda = dlopen("libcuda.so.1", RTLD_LAZY);
  STAGE("dlopen libcuda again");
  if (!cuda) return 1;
  int r = ((init_t)dlsym(cuda, "cuInit"))(0);
  STAGE("cuInit");
  int dev = 0;
  r |= ((get_t)dlsym(cuda, "cuDeviceGet"))(&dev, 0);
  void* ctx = 0;
  r |= ((retain_t)dlsym(cuda, "cuDevicePrimaryCtxRetain"))(&ctx, dev);
  STAGE("cuDevicePrimaryCtxRetain");
  r |= ((set_t)dlsym(cuda, "cuCtxSetCurrent"))(ctx);
  STAGE("cuCtxSetCurrent");
  if (r) {
    printf("driver error %d\n", r);
    return 1;
  }
  for (int k = 1; k + 1 < argc; k += 2) {
    void* lib = dlopen(argv[k], RTLD_LAZY);
    STAGE(argv[k]);
    if (!lib) {
      printf("  %s\n", dlerror());
      continue;
    }
    dlclose(lib);
    STAGE("  dlclose");
    void* stayed = dlopen(argv[k], RTLD_LAZY | RTLD_NOLOAD);
    printf("  still mapped after dlclose: %s\n", stayed ? "yes" : "no");
    if (stayed) dlclose(stayed);
    t = now_ms();
    lib = dlopen(argv[k], RTLD_LAZY);
    STAGE("  dlopen again");
    create_t create = (create_t)dlsym(lib, argv[k + 1]);
    void* handle = 0;
    int s = create ? create(&handle) : -1;
    STAGE(argv[k + 1]);
    printf("  status %d\n", s);
  }
  printf("%-28s %8.2f ms\n", "total in main", now_ms() - t0);
  printf("exit at %lld ns\n", real_ns());
  return 0;
}
