// An inclusive prefix sum within each warp with __shfl_up_sync, and each warp's total
// broadcast from lane 31 with __shfl_sync; sub-warp segments of 8 lanes with width 8.
extern "C" __global__ void warp_scan(long long n, const long long* __restrict__ x,
                                     long long* __restrict__ scan,
                                     long long* __restrict__ total,
                                     long long* __restrict__ scan8) {
    const long long stride = (long long)blockDim.x * (long long)gridDim.x;
    const long long rounded = (n + 31) / 32 * 32;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < rounded;
         i += stride) {
        const unsigned int lane = threadIdx.x & 31;
        const long long v = i < n ? x[i] : 0;
        long long s = v;
        for (unsigned int d = 1; d < 32; d <<= 1) {
            const long long up = __shfl_up_sync(0xffffffffu, s, d);
            if (lane >= d) s += up;
        }
        long long s8 = v;
        for (unsigned int d = 1; d < 8; d <<= 1) {
            const long long up = __shfl_up_sync(0xffffffffu, s8, d, 8);
            if ((lane & 7) >= d) s8 += up;
        }
        const long long warp_total = __shfl_sync(0xffffffffu, s, 31);
        if (i < n) {
            scan[i] = s;
            scan8[i] = s8;
            total[i] = warp_total;
        }
    }
}
