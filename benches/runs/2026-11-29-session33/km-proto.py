"""Session 33: a k-means iteration (2^20x64, k = 10) as warp-independent tiles, prototyped in
CUDA C++ through CuPy to measure the structure before lowering it in kiln.

Each warp takes tiles of 32 positions on its own (no block barrier in the loop): it stages the
tile's rows (STAGE=1: to its shared memory; STAGE=0: reads them through L1), a lane a position
computes the label (expanded dot products screened, the exact fold where undecided), then for
each cluster a ballot of the lanes with that label and every lane adds those positions' rows'
two elements it owns, in position order, into the warp's private bins. At the end the warps'
bins are combined in warp order per block, and a second kernel combines the blocks' partials
in block order (a warp a column) and divides by the counts.
Usage: python3 km-proto.py
"""
import statistics, sys, time
import numpy as np
import cupy as cp

SRC = r'''
#ifndef D
#define D 64
#endif
#define KC 10
#define WT 32
#define RS (D + 4)
#define NW (NT / 32)
#define FULL 0xffffffffu
#define COLS (KC * D + KC)
#define INFINITY __int_as_float(0x7f800000)

__device__ __forceinline__ void cp16(void* s, const void* g) {
    unsigned sa = (unsigned)__cvta_generic_to_shared(s);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(sa), "l"(g));
}
__device__ __forceinline__ void stage_async(float* tile, const float* X, long long t0, long long end, int lane) {
    const int len = (int)min((long long)WT, end - t0);
    const float4* src = (const float4*)(X + t0 * D);
#pragma unroll
    for (int i = 0; i < WT * D / 4 / 32; i++) {
        int f = i * 32 + lane;
        int r = f / (D / 4), c = f % (D / 4);
        if (r < len) cp16(&tile[r * RS + c * 4], &src[f]);
    }
}

extern "C" __global__ void __launch_bounds__(NT)
km_tiles(const float* __restrict__ X, const float* __restrict__ C, float* __restrict__ part,
         long long n, long long per)
{
    extern __shared__ float4 sm4[];
    float* sm = (float*)sm4;
    float* cs = sm;                  // KC*D centres
    float* cn = cs + KC * D;         // KC norms (16 slots)
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#if STAGE == 2
    const int wsz = 2 * WT * RS + KC * D + 16;
#elif STAGE
    const int wsz = WT * RS + KC * D + 16;
#else
    const int wsz = KC * D + 16;
#endif
    float* wbase = cn + 16 + warp * wsz;
#if STAGE == 2
    float* tile = wbase;
    float* wb = tile + 2 * WT * RS;
    int buf = 0;
#elif STAGE
    float* tile = wbase;
    float* wb = tile + WT * RS;
#else
    float* wb = wbase;
#endif
    float* wc = wb + KC * D;
    for (int i = threadIdx.x; i < KC * D; i += NT) cs[i] = C[i];
    for (int i = lane; i < KC * D + 16; i += 32) wb[i] = 0.f;
    __syncthreads();
    if (threadIdx.x < KC) {
        float s = 0.f;
        for (int d = 0; d < D; d++) s = fmaf(cs[threadIdx.x * D + d], cs[threadIdx.x * D + d], s);
        cn[threadIdx.x] = s;
    }
    __syncthreads();
    float cmax = 0.f;
    for (int j = 0; j < KC; j++) cmax = fmaxf(cmax, cn[j]);
    const long long start = (long long)blockIdx.x * per;
    const long long end = min(start + per, n);
#if STAGE == 2
    if (start + warp * WT < end) stage_async(tile, X, start + warp * WT, end, lane);
    asm volatile("cp.async.commit_group;\n");
#endif
    for (long long t0 = start + warp * WT; t0 < end; t0 += NW * WT) {
        const int len = (int)min((long long)WT, end - t0);
#if STAGE == 2
        {
            const long long tn = t0 + NW * WT;
            if (tn < end) stage_async(tile + (buf ^ 1) * WT * RS, X, tn, end, lane);
            asm volatile("cp.async.commit_group;\n");
            asm volatile("cp.async.wait_group 1;\n");
            __syncwarp();
        }
        const float* tb = tile + buf * WT * RS;
        const float* xr = tb + lane * RS;
#elif STAGE
        const float4* src = (const float4*)(X + t0 * D);
#pragma unroll
        for (int i = 0; i < WT * D / 4 / 32; i++) {
            int f = i * 32 + lane;
            int r = f / (D / 4), c = f % (D / 4);
            if (r < len) *(float4*)&tile[r * RS + c * 4] = src[f];
        }
        __syncwarp();
        const float* xr = tile + lane * RS;
#else
        const float* xr = X + (t0 + min(lane, len - 1)) * D;
#endif
        int lab = -1;
        if (lane < len) {
            float dot[KC];
#pragma unroll
            for (int j = 0; j < KC; j++) dot[j] = 0.f;
            float xn = 0.f;
#pragma unroll 4
            for (int d4 = 0; d4 < D / 4; d4++) {
                float4 x = *(const float4*)&xr[4 * d4];
                xn = fmaf(x.x, x.x, fmaf(x.y, x.y, fmaf(x.z, x.z, fmaf(x.w, x.w, xn))));
#pragma unroll
                for (int j = 0; j < KC; j++) {
                    float4 c = *(const float4*)&cs[j * D + 4 * d4];
                    dot[j] = fmaf(x.x, c.x, fmaf(x.y, c.y, fmaf(x.z, c.z, fmaf(x.w, c.w, dot[j]))));
                }
            }
            float best = INFINITY, second = INFINITY;
            int bj = 0;
#pragma unroll
            for (int j = 0; j < KC; j++) {
                float e = fmaf(-2.f, dot[j], cn[j]);
                if (e < best) { second = best; best = e; bj = j; }
                else if (e < second) second = e;
            }
            float bound = 1.0e-5f * (xn + cmax) + 1e-30f;
            if (!(second - best > bound)) {
                float bd = INFINITY; bj = 0;
                for (int j = 0; j < KC; j++) {
                    float s = 0.f;
                    for (int d = 0; d < D; d++) { float t = xr[d] - cs[j * D + d]; s = fmaf(t, t, s); }
                    if (s < bd) { bd = s; bj = j; }
                }
            }
            lab = bj;
        }
#pragma unroll 1
        for (int j = 0; j < KC; j++) {
            unsigned m = __ballot_sync(FULL, lab == j);
            if (lane == 0) wc[j] += (float)__popc(m);
            float ax = 0.f, ay = 0.f;
            while (m) {
                int p = __ffs(m) - 1;
                m &= m - 1;
#if STAGE == 2
                float2 v = *(const float2*)&tb[p * RS + 2 * lane];
#elif STAGE
                float2 v = *(const float2*)&tile[p * RS + 2 * lane];
#else
                float2 v = *(const float2*)&X[(t0 + p) * D + 2 * lane];
#endif
                ax += v.x; ay += v.y;
            }
            float2* b = (float2*)&wb[j * D + 2 * lane];
            float2 o = *b; o.x += ax; o.y += ay; *b = o;
        }
        __syncwarp();
#if STAGE == 2
        buf ^= 1;
#endif
    }
    __syncthreads();
    for (int i = threadIdx.x; i < COLS; i += NT) {
        float s = 0.f;
        for (int w = 0; w < NW; w++) s += (cn + 16 + w * wsz + (wb - wbase))[i];
        part[(long long)blockIdx.x * COLS + i] = s;
    }
}

#define WT2 (32 * PPL)
extern "C" __global__ void __launch_bounds__(NT)
km_ppl(const float* __restrict__ X, const float* __restrict__ C, float* __restrict__ part,
       long long n, long long per)
{
    extern __shared__ float4 sm4[];
    float* sm = (float*)sm4;
    float* cs = sm;
    float* cn = cs + KC * D;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wsz = WT2 * RS + KC * D + 16;
    float* tile = cn + 16 + warp * wsz;
    float* wb = tile + WT2 * RS;
    float* wc = wb + KC * D;
    for (int i = threadIdx.x; i < KC * D; i += NT) cs[i] = C[i];
    for (int i = lane; i < KC * D + 16; i += 32) wb[i] = 0.f;
    __syncthreads();
    if (threadIdx.x < KC) {
        float s = 0.f;
        for (int d = 0; d < D; d++) s = fmaf(cs[threadIdx.x * D + d], cs[threadIdx.x * D + d], s);
        cn[threadIdx.x] = s;
    }
    __syncthreads();
    float cmax = 0.f;
    for (int j = 0; j < KC; j++) cmax = fmaxf(cmax, cn[j]);
    const long long start = (long long)blockIdx.x * per;
    const long long end = min(start + per, n);
    for (long long t0 = start + warp * WT2; t0 < end; t0 += NW * WT2) {
        const int len = (int)min((long long)WT2, end - t0);
        const float4* src = (const float4*)(X + t0 * D);
#pragma unroll
        for (int i = 0; i < WT2 * D / 4 / 32; i++) {
            int f = i * 32 + lane;
            int r = f / (D / 4), c = f % (D / 4);
            if (r < len) *(float4*)&tile[r * RS + c * 4] = src[f];
        }
        __syncwarp();
        int lab[PPL];
#if FREE
#pragma unroll
        for (int q = 0; q < PPL; q++) lab[q] = (lane + 32 * q < len) ? (int)((t0 + lane + 32 * q) % KC) : -1;
#else
        float dot[PPL][KC], xn[PPL];
        const float* xr[PPL];
#pragma unroll
        for (int q = 0; q < PPL; q++) {
            xr[q] = tile + min(lane + 32 * q, len - 1) * RS;
            xn[q] = 0.f;
#pragma unroll
            for (int j = 0; j < KC; j++) dot[q][j] = 0.f;
        }
#pragma unroll 2
        for (int d4 = 0; d4 < D / 4; d4++) {
            float4 x[PPL];
#pragma unroll
            for (int q = 0; q < PPL; q++) {
                x[q] = *(const float4*)&xr[q][4 * d4];
                xn[q] = fmaf(x[q].x, x[q].x, fmaf(x[q].y, x[q].y, fmaf(x[q].z, x[q].z, fmaf(x[q].w, x[q].w, xn[q]))));
            }
#pragma unroll
            for (int j = 0; j < KC; j++) {
                float4 c = *(const float4*)&cs[j * D + 4 * d4];
#pragma unroll
                for (int q = 0; q < PPL; q++)
                    dot[q][j] = fmaf(x[q].x, c.x, fmaf(x[q].y, c.y, fmaf(x[q].z, c.z, fmaf(x[q].w, c.w, dot[q][j]))));
            }
        }
#pragma unroll
        for (int q = 0; q < PPL; q++) {
            float best = INFINITY, second = INFINITY;
            int bj = 0;
#pragma unroll
            for (int j = 0; j < KC; j++) {
                float e = fmaf(-2.f, dot[q][j], cn[j]);
                if (e < best) { second = best; best = e; bj = j; }
                else if (e < second) second = e;
            }
            float bound = 1.0e-5f * (xn[q] + cmax) + 1e-30f;
            if (!(second - best > bound)) {
                float bd = INFINITY; bj = 0;
                for (int j = 0; j < KC; j++) {
                    float s = 0.f;
                    for (int d = 0; d < D; d++) { float t = xr[q][d] - cs[j * D + d]; s = fmaf(t, t, s); }
                    if (s < bd) { bd = s; bj = j; }
                }
            }
            lab[q] = (lane + 32 * q < len) ? bj : -1;
        }
#endif
#pragma unroll 1
        for (int j = 0; j < KC; j++) {
            float ax = 0.f, ay = 0.f;
            int cnt = 0;
#pragma unroll
            for (int q = 0; q < PPL; q++) {
                unsigned m = __ballot_sync(FULL, lab[q] == j);
                cnt += __popc(m);
                const float* tq = tile + 32 * q * RS + 2 * lane;
                while (m) {
                    int p = __ffs(m) - 1;
                    m &= m - 1;
                    float2 v = *(const float2*)&tq[p * RS];
                    ax += v.x; ay += v.y;
                }
            }
            if (lane == 0) wc[j] += (float)cnt;
            float2* b = (float2*)&wb[j * D + 2 * lane];
            float2 o = *b; o.x += ax; o.y += ay; *b = o;
        }
        __syncwarp();
    }
    __syncthreads();
    for (int i = threadIdx.x; i < COLS; i += NT) {
        float s = 0.f;
        for (int w = 0; w < NW; w++) s += (cn + 16 + w * wsz + WT2 * RS)[i];
        part[(long long)blockIdx.x * COLS + i] = s;
    }
}

__device__ __forceinline__ unsigned tf32(float v) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}
__device__ __forceinline__ void split(float v, unsigned& h, unsigned& l) {
    h = tf32(v);
    l = tf32(v - __uint_as_float(h));
}
__device__ __forceinline__ void mma(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                    unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Warp tiles of 32 positions; labels from 3xTF32 tensor-core dot products screened with
// kappa = (16 D + 64) 2^-23 (session 32's bound), undecided positions by the lane's float32
// direct fold.
extern "C" __global__ void __launch_bounds__(NT)
km_mma(const float* __restrict__ X, const float* __restrict__ C, float* __restrict__ part,
       long long n, long long per, unsigned* __restrict__ undecided)
{
    extern __shared__ float4 sm4[];
    float* sm = (float*)sm4;
    float* cs = sm;                       // KC*D centres (row stride D)
    float* cn = cs + KC * D;              // 16 norms
    unsigned* bfr = (unsigned*)(cn + 16); // [2 nt][D/8 kk][32 lanes][4]: b0h b1h b0l b1l
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane >> 2, t = lane & 3;
    const int wsz = WT * RS + KC * D + 16;
    float* tile = (float*)(bfr + 2 * (D / 8) * 32 * 4) + warp * wsz;
    float* wb = tile + WT * RS;
    float* wc = wb + KC * D;
    for (int i = threadIdx.x; i < KC * D; i += NT) cs[i] = C[i];
    for (int i = lane; i < KC * D + 16; i += 32) wb[i] = 0.f;
    __syncthreads();
    if (threadIdx.x < 16) {
        float s = 0.f;
        if (threadIdx.x < KC)
            for (int d = 0; d < D; d++) s = fmaf(cs[threadIdx.x * D + d], cs[threadIdx.x * D + d], s);
        cn[threadIdx.x] = s;
    }
    for (int i = threadIdx.x; i < 2 * (D / 8) * 32; i += NT) {
        int l = i % 32, kk = (i / 32) % (D / 8), nt = i / 32 / (D / 8);
        int gg = l >> 2, tt = l & 3, j = 8 * nt + gg;
        float b0 = j < KC ? cs[j * D + 8 * kk + tt] : 0.f;
        float b1 = j < KC ? cs[j * D + 8 * kk + tt + 4] : 0.f;
        unsigned h0, l0, h1, l1;
        split(b0, h0, l0); split(b1, h1, l1);
        bfr[i * 4 + 0] = h0; bfr[i * 4 + 1] = h1; bfr[i * 4 + 2] = l0; bfr[i * 4 + 3] = l1;
    }
    __syncthreads();
    float cmax = 0.f;
    for (int j = 0; j < KC; j++) cmax = fmaxf(cmax, cn[j]);
    const float kappa = (16.f * D + 64.f) * 1.1920929e-7f;
    const long long start = (long long)blockIdx.x * per;
    const long long end = min(start + per, n);
    unsigned und = 0;
    for (long long t0 = start + warp * WT; t0 < end; t0 += NW * WT) {
        const int len = (int)min((long long)WT, end - t0);
        const float4* src = (const float4*)(X + t0 * D);
#pragma unroll
        for (int i = 0; i < WT * D / 4 / 32; i++) {
            int f = i * 32 + lane;
            int r = f / (D / 4), c = f % (D / 4);
            if (r < len) *(float4*)&tile[r * RS + c * 4] = src[f];
        }
        __syncwarp();
        float acc[2][2][4];
        float xn[2][2];
#pragma unroll
        for (int a = 0; a < 2; a++) {
            xn[a][0] = xn[a][1] = 0.f;
#pragma unroll
            for (int b = 0; b < 2; b++)
#pragma unroll
                for (int c = 0; c < 4; c++) acc[a][b][c] = 0.f;
        }
#pragma unroll 2
        for (int kk = 0; kk < D / 8; kk++) {
            unsigned bh[2][2], bl[2][2];
#pragma unroll
            for (int nt = 0; nt < 2; nt++) {
                uint4 v = *(const uint4*)&bfr[((nt * (D / 8) + kk) * 32 + lane) * 4];
                bh[nt][0] = v.x; bh[nt][1] = v.y; bl[nt][0] = v.z; bl[nt][1] = v.w;
            }
#pragma unroll
            for (int mt = 0; mt < 2; mt++) {
                const float* r0 = tile + (16 * mt + g) * RS + 8 * kk + t;
                const float* r1 = r0 + 8 * RS;
                float a[4] = {r0[0], r1[0], r0[4], r1[4]};
                xn[mt][0] = fmaf(a[0], a[0], fmaf(a[2], a[2], xn[mt][0]));
                xn[mt][1] = fmaf(a[1], a[1], fmaf(a[3], a[3], xn[mt][1]));
                unsigned ah[4], al[4];
#pragma unroll
                for (int q = 0; q < 4; q++) split(a[q], ah[q], al[q]);
#pragma unroll
                for (int nt = 0; nt < 2; nt++) {
                    mma(acc[mt][nt], al[0], al[1], al[2], al[3], bh[nt][0], bh[nt][1]);
                    mma(acc[mt][nt], ah[0], ah[1], ah[2], ah[3], bl[nt][0], bl[nt][1]);
                    mma(acc[mt][nt], ah[0], ah[1], ah[2], ah[3], bh[nt][0], bh[nt][1]);
                }
            }
        }
        // Each lane: rows (mt, h) = position 16 mt + 8 h + g; centres 2t, 2t+1, 8+2t, 9+2t.
        int res[2][2];
#pragma unroll
        for (int mt = 0; mt < 2; mt++) {
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float x2 = xn[mt][h];
                x2 += __shfl_xor_sync(FULL, x2, 1);
                x2 += __shfl_xor_sync(FULL, x2, 2);
                float best = INFINITY, second = INFINITY;
                int bj = 0;
#pragma unroll
                for (int nt = 0; nt < 2; nt++) {
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        int j = 8 * nt + 2 * t + e;
                        if (j < KC) {
                            float v = fmaf(-2.f, acc[mt][nt][2 * h + e], cn[j]);
                            if (v < best) { second = best; best = v; bj = j; }
                            else if (v < second) second = v;
                        }
                    }
                }
#pragma unroll
                for (int o = 1; o <= 2; o <<= 1) {
                    float ob = __shfl_xor_sync(FULL, best, o);
                    float os = __shfl_xor_sync(FULL, second, o);
                    int oj = __shfl_xor_sync(FULL, bj, o);
                    float nb = fminf(best, ob);
                    float ns = fminf(fminf(second, os), fmaxf(best, ob));
                    int nj = (ob < best || (ob == best && oj < bj)) ? oj : bj;
                    best = nb; second = ns; bj = nj;
                }
                float bound = kappa * (x2 + cmax) + 1e-30f;
                res[mt][h] = (second - best > bound) ? bj : -1;
            }
        }
        // Position p's label to lane p.
        int lab;
        {
            const int src = (lane & 7) * 4, mt = lane >> 4, h = (lane >> 3) & 1;
            int v00 = __shfl_sync(FULL, res[0][0], src), v01 = __shfl_sync(FULL, res[0][1], src);
            int v10 = __shfl_sync(FULL, res[1][0], src), v11 = __shfl_sync(FULL, res[1][1], src);
            lab = mt ? (h ? v11 : v10) : (h ? v01 : v00);
        }
        if (lane < len && lab < 0) {
            und++;
            const float* xr = tile + lane * RS;
            float bd = INFINITY; int bj = 0;
            for (int j = 0; j < KC; j++) {
                float s = 0.f;
                for (int d = 0; d < D; d++) { float u = xr[d] - cs[j * D + d]; s = fmaf(u, u, s); }
                if (s < bd) { bd = s; bj = j; }
            }
            lab = bj;
        }
        if (lane >= len) lab = -1;
#pragma unroll 1
        for (int j = 0; j < KC; j++) {
            unsigned m = __ballot_sync(FULL, lab == j);
            if (lane == 0) wc[j] += (float)__popc(m);
            float ax = 0.f, ay = 0.f;
            while (m) {
                int p = __ffs(m) - 1;
                m &= m - 1;
                float2 v = *(const float2*)&tile[p * RS + 2 * lane];
                ax += v.x; ay += v.y;
            }
            float2* b = (float2*)&wb[j * D + 2 * lane];
            float2 o = *b; o.x += ax; o.y += ay; *b = o;
        }
        __syncwarp();
    }
    if (und) atomicAdd(undecided, und);
    __syncthreads();
    for (int i = threadIdx.x; i < COLS; i += NT) {
        float s = 0.f;
        for (int w = 0; w < NW; w++) s += (tile - warp * wsz + w * wsz + WT * RS)[i];
        part[(long long)blockIdx.x * COLS + i] = s;
    }
}

// Warp tiles of 16 positions, two lanes a position (lane 2p + h takes the float4 chunks
// 2i + h of position p's row: the pair's loads in different banks), row stride RS5 = D + 8
// (a quarter warp's eight loads in eight banks); the pair's dot products summed by one shuffle.
#define WT5 16
#define RS5 (D + 8)
extern "C" __global__ void __launch_bounds__(NT, MINB)
km_pair(const float* __restrict__ X, const float* __restrict__ C, float* __restrict__ part,
        long long n, long long per)
{
    extern __shared__ float4 sm4[];
    float* sm = (float*)sm4;
    float* cs = sm;
    float* cn = cs + KC * D;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int p = lane >> 1, h = lane & 1;
    const int wsz = WT5 * RS5 + KC * D + 16;
    float* tile = cn + 16 + warp * wsz;
    float* wb = tile + WT5 * RS5;
    float* wc = wb + KC * D;
    for (int i = threadIdx.x; i < KC * D; i += NT) cs[i] = C[i];
    for (int i = lane; i < KC * D + 16; i += 32) wb[i] = 0.f;
    __syncthreads();
    if (threadIdx.x < KC) {
        float s = 0.f;
        for (int d = 0; d < D; d++) s = fmaf(cs[threadIdx.x * D + d], cs[threadIdx.x * D + d], s);
        cn[threadIdx.x] = s;
    }
    __syncthreads();
    float cmax = 0.f;
    for (int j = 0; j < KC; j++) cmax = fmaxf(cmax, cn[j]);
    const long long start = (long long)blockIdx.x * per;
    const long long end = min(start + per, n);
    for (long long t0 = start + warp * WT5; t0 < end; t0 += NW * WT5) {
        const int len = (int)min((long long)WT5, end - t0);
        const float4* src = (const float4*)(X + t0 * D);
#pragma unroll
        for (int i = 0; i < WT5 * D / 4 / 32; i++) {
            int f = i * 32 + lane;
            int r = f / (D / 4), c = f % (D / 4);
            if (r < len) *(float4*)&tile[r * RS5 + c * 4] = src[f];
        }
        __syncwarp();
#if FREE
        int lab = (h == 0 && p < len) ? (int)((t0 + p) % KC) : -1;
#else
        const float* xr = tile + min(p, len - 1) * RS5 + 4 * h;
        const float* cr = cs + 4 * h;
        float dot[KC];
#pragma unroll
        for (int j = 0; j < KC; j++) dot[j] = 0.f;
        float xn = 0.f;
#pragma unroll 4
        for (int i = 0; i < D / 8; i++) {
            float4 x = *(const float4*)&xr[8 * i];
            xn = fmaf(x.x, x.x, fmaf(x.y, x.y, fmaf(x.z, x.z, fmaf(x.w, x.w, xn))));
#pragma unroll
            for (int j = 0; j < KC; j++) {
                float4 c = *(const float4*)&cr[j * D + 8 * i];
                dot[j] = fmaf(x.x, c.x, fmaf(x.y, c.y, fmaf(x.z, c.z, fmaf(x.w, c.w, dot[j]))));
            }
        }
        xn += __shfl_xor_sync(FULL, xn, 1);
        float best = INFINITY, second = INFINITY;
        int bj = 0;
#pragma unroll
        for (int j = 0; j < KC; j++) {
            float dj = dot[j] + __shfl_xor_sync(FULL, dot[j], 1);
            float e = fmaf(-2.f, dj, cn[j]);
            if (e < best) { second = best; best = e; bj = j; }
            else if (e < second) second = e;
        }
        float bound = 1.0e-5f * (xn + cmax) + 1e-30f;
        if (!(second - best > bound)) {
            const float* xq = tile + min(p, len - 1) * RS5;
            float bd = INFINITY; bj = 0;
            for (int j = 0; j < KC; j++) {
                float s = 0.f;
                for (int d = 0; d < D; d++) { float t = xq[d] - cs[j * D + d]; s = fmaf(t, t, s); }
                if (s < bd) { bd = s; bj = j; }
            }
        }
        int lab = (h == 0 && p < len) ? bj : -1;
#endif
#pragma unroll 1
        for (int j = 0; j < KC; j++) {
            unsigned m = __ballot_sync(FULL, lab == j);
            if (lane == 0) wc[j] += (float)__popc(m);
            float ax = 0.f, ay = 0.f;
            while (m) {
                int q = (__ffs(m) - 1) >> 1;
                m &= m - 1;
                float2 v = *(const float2*)&tile[q * RS5 + 2 * lane];
                ax += v.x; ay += v.y;
            }
            float2* b = (float2*)&wb[j * D + 2 * lane];
            float2 o = *b; o.x += ax; o.y += ay; *b = o;
        }
        __syncwarp();
    }
    __syncthreads();
    for (int i = threadIdx.x; i < COLS; i += NT) {
        float s = 0.f;
        for (int w = 0; w < NW; w++) s += (cn + 16 + w * wsz + WT5 * RS5)[i];
        part[(long long)blockIdx.x * COLS + i] = s;
    }
}

// Warp tiles of 32 positions (as km_tiles, rows staged), the centres and their norms in
// constant memory: every dot-product FMA takes its centre element from the constant bank
// (a uniform operand, no load instruction).
__constant__ float ccent[KC * D];
__constant__ float cnorm[16];
// The dot products of a row (shared memory) with the constant centres, in a function of its
// own so that the compiler cannot hoist the 640 constant loads out of the tile loop.
__device__ __noinline__ float const_dots(const float* xr, float* dot) {
    float d[KC];
#pragma unroll
    for (int j = 0; j < KC; j++) d[j] = 0.f;
    float xn = 0.f;
#pragma unroll
    for (int d4 = 0; d4 < D / 4; d4++) {
        float4 x = *(const float4*)&xr[4 * d4];
        xn = fmaf(x.x, x.x, fmaf(x.y, x.y, fmaf(x.z, x.z, fmaf(x.w, x.w, xn))));
#pragma unroll
        for (int j = 0; j < KC; j++) {
            const int o = j * D + 4 * d4;
            d[j] = fmaf(x.x, ccent[o], fmaf(x.y, ccent[o + 1], fmaf(x.z, ccent[o + 2], fmaf(x.w, ccent[o + 3], d[j]))));
        }
    }
#pragma unroll
    for (int j = 0; j < KC; j++) dot[j] = d[j];
    return xn;
}
extern "C" __global__ void __launch_bounds__(NT)
km_const(const float* __restrict__ X, float* __restrict__ part, long long n, long long per)
{
    extern __shared__ float4 sm4[];
    float* sm = (float*)sm4;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wsz = WT * RS + KC * D + 16;
    float* tile = sm + warp * wsz;
    float* wb = tile + WT * RS;
    float* wc = wb + KC * D;
    for (int i = lane; i < KC * D + 16; i += 32) wb[i] = 0.f;
    float cmax = 0.f;
#pragma unroll
    for (int j = 0; j < KC; j++) cmax = fmaxf(cmax, cnorm[j]);
    const long long start = (long long)blockIdx.x * per;
    const long long end = min(start + per, n);
    for (long long t0 = start + warp * WT; t0 < end; t0 += NW * WT) {
        const int len = (int)min((long long)WT, end - t0);
        const float4* src = (const float4*)(X + t0 * D);
#pragma unroll
        for (int i = 0; i < WT * D / 4 / 32; i++) {
            int f = i * 32 + lane;
            int r = f / (D / 4), c = f % (D / 4);
            if (r < len) *(float4*)&tile[r * RS + c * 4] = src[f];
        }
        __syncwarp();
        const float* xr = tile + min(lane, len - 1) * RS;
        float dot[KC];
        float xn = const_dots(xr, dot);
        float best = INFINITY, second = INFINITY;
        int bj = 0;
#pragma unroll
        for (int j = 0; j < KC; j++) {
            float e = fmaf(-2.f, dot[j], cnorm[j]);
            if (e < best) { second = best; best = e; bj = j; }
            else if (e < second) second = e;
        }
        float bound = 1.0e-5f * (xn + cmax) + 1e-30f;
        if (!(second - best > bound)) {
            float bd = INFINITY; bj = 0;
            for (int j = 0; j < KC; j++) {
                float s = 0.f;
                for (int d = 0; d < D; d++) { float t = xr[d] - ccent[j * D + d]; s = fmaf(t, t, s); }
                if (s < bd) { bd = s; bj = j; }
            }
        }
        int lab = lane < len ? bj : -1;
#pragma unroll 1
        for (int j = 0; j < KC; j++) {
            unsigned m = __ballot_sync(FULL, lab == j);
            if (lane == 0) wc[j] += (float)__popc(m);
            float ax = 0.f, ay = 0.f;
            while (m) {
                int p = __ffs(m) - 1;
                m &= m - 1;
                float2 v = *(const float2*)&tile[p * RS + 2 * lane];
                ax += v.x; ay += v.y;
            }
            float2* b = (float2*)&wb[j * D + 2 * lane];
            float2 o = *b; o.x += ax; o.y += ay; *b = o;
        }
        __syncwarp();
    }
    __syncthreads();
    for (int i = threadIdx.x; i < COLS; i += NT) {
        float s = 0.f;
        for (int w = 0; w < NW; w++) s += (sm + w * wsz + WT * RS)[i];
        part[(long long)blockIdx.x * COLS + i] = s;
    }
}

extern "C" __global__ void km_final(const float* __restrict__ part, float* __restrict__ out,
                                    float* __restrict__ counts, int blocks)
{
    const int col = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (col >= COLS) return;
    float s = 0.f;
    for (int b = lane; b < blocks; b += 32) s += part[(long long)b * COLS + col];
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(FULL, s, o);
    if (lane == 0) {
        if (col < KC * D) {
            out[col] = s;  // sums; divided below by a second pass over the counts
        } else {
            counts[col - KC * D] = s;
        }
    }
}
'''

def build(nt, stage, ppl=1, free=0, minb=1):
    opts = ("-std=c++17", f"-DNT={nt}", f"-DSTAGE={stage}", f"-DPPL={ppl}", f"-DFREE={free}", f"-DMINB={minb}")
    mod = cp.RawModule(code=SRC, options=opts)
    try:
        name = {3: "km_ppl", 4: "km_mma", 5: "km_pair", 6: "km_const"}.get(stage, "km_tiles")
        if stage == 6:
            return mod, mod.get_function(name), mod.get_function("km_final")
        return mod.get_function(name), mod.get_function("km_final")
    except Exception as e:
        print(f"compile failed (NT={nt}, STAGE={stage}): {e}", flush=True)
        raise


def run(N=1 << 20, D=64, K=10):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, D), dtype=np.float32)
    C = X[rng.choice(N, K, replace=False)].copy()
    Xc, Cc = cp.asarray(X), cp.asarray(C)
    # reference labels (float64), sums, counts
    d = ((X.astype(np.float64)[:, None, :] - C.astype(np.float64)[None]) ** 2).sum(2)
    lab = d.argmin(1)
    srt = np.sort(d, 1)
    tie = (srt[:, 1] - srt[:, 0]) < 1e-3
    cnt_ref = np.bincount(lab, minlength=K).astype(np.float64)
    sums_ref = np.zeros((K, D)); np.add.at(sums_ref, lab, X.astype(np.float64))
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms = props["multiProcessorCount"]
    print(f"device {props['name'].decode()} sms {sms}; near ties {tie.sum()}", flush=True)
    src = cp.empty_like(Xc); dst = cp.empty_like(Xc)
    a = cp.empty(1 << 26, cp.float32); b = cp.empty_like(a)
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    def time_it(fn, reps=50):
        for _ in range(5): fn()
        cp.cuda.runtime.deviceSynchronize()
        ts = []
        for _ in range(reps):
            ev0.record(); fn(); ev1.record(); ev1.synchronize()
            ts.append(cp.cuda.get_elapsed_time(ev0, ev1))
        ws = []
        for _ in range(25):
            cp.cuda.runtime.deviceSynchronize(); t = time.perf_counter(); fn(); cp.cuda.runtime.deviceSynchronize()
            ws.append((time.perf_counter() - t) * 1e3)
        return statistics.median(ts), statistics.median(ws)
    ct, cw = time_it(lambda: cp.copyto(b, a))
    print(f"copy 2^26 float32: events {ct:.4f} ms, wall {cw:.4f}", flush=True)
    # (stage, threads, blocks a multiprocessor, positions a lane, labels free)
    configs = [(1, 128, (4,), 1, 0), (6, 128, (4,), 1, 0), (6, 256, (2,), 1, 0),
               (6, 512, (1,), 1, 0), (6, 64, (8,), 1, 0), (1, 256, (2,), 1, 0),
               (6, 96, (5,), 1, 0), (6, 160, (3,), 1, 0)]
    for stage, nt, bps, ppl, free in configs:
            wt = 32 * (ppl if stage in (3, 4) else stage)
            smem = 4 * (K * D + 16 + (nt // 32) * ((wt * (D + 4)) + K * D + 16))
            if stage == 5:
                smem = 4 * (K * D + 16 + (nt // 32) * (16 * (D + 8) + K * D + 16))
            if stage == 6:
                smem = 4 * ((nt // 32) * ((32 * (D + 4)) + K * D + 16))
            if stage == 4:
                smem += 4 * 2 * (D // 8) * 32 * 4
            built = build(nt, stage, ppl, free, max(bps) if stage == 5 else 1)
            if stage == 6:
                mod, kt, kf = built
                cn_h = np.zeros(16, np.float32); cn_h[:K] = (C.astype(np.float32) ** 2).sum(1)
                # norms as the other kernels compute them: a float32 fma chain in order
                for j in range(K):
                    acc = np.float32(0)
                    for d_ in range(D):
                        acc = np.float32(np.fma(C[j, d_], C[j, d_], acc)) if hasattr(np, "fma") else np.float32(acc + C[j, d_] * C[j, d_])
                    cn_h[j] = acc
                g1 = mod.get_global("ccent"); g1.copy_from_host(C.ctypes.data, C.nbytes)
                g2 = mod.get_global("cnorm"); g2.copy_from_host(cn_h.ctypes.data, cn_h.nbytes)
            else:
                kt, kf = built
            kt.max_dynamic_shared_size_bytes = smem
            occ = None
            for blocks_per_sm in bps:
                if smem * blocks_per_sm > 227 * 1024 or nt * blocks_per_sm > 2048:
                    continue
                B = sms * blocks_per_sm
                per = -(-N // B); per = -(-per // 32) * 32
                part = cp.empty((B, K * D + K), cp.float32)
                out = cp.empty((K, D), cp.float32); cnt = cp.empty(K, cp.float32)
                und = cp.zeros(1, cp.uint32)
                def go():
                    args = (Xc, Cc, part, cp.int64(N), cp.int64(per)) + ((und,) if stage == 4 else ())
                    if stage == 6:
                        args = (Xc, part, cp.int64(N), cp.int64(per))
                    kt((B,), (nt,), args, shared_mem=smem)
                    kf(((K * D + K + 7) // 8,), (256,), (part, out, cnt, cp.int32(B)))
                try:
                    go(); cp.cuda.runtime.deviceSynchronize()
                except Exception as e:
                    print(f"stage {stage} nt {nt} B {B}: FAILED {e}", flush=True); continue
                und_n = int(und.get()[0]); und[...] = 0
                ok_c = int(np.abs(cnt.get().astype(np.int64) - cnt_ref.astype(np.int64)).sum())
                err = np.abs(out.get() - sums_ref).max() / np.abs(sums_ref).max()
                t, w = time_it(go)
                print(f"stage {stage} ppl {ppl} free {free} nt {nt:4d} blocks {B:5d} ({blocks_per_sm}/SM) smem {smem:6d}: "
                      f"events {t:.4f} ms wall {w:.4f} ms; counts off by {ok_c} sums rel err {err:.2e}; undecided {und_n}",
                      flush=True)

if __name__ == "__main__":
    run()
