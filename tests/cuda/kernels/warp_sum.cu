// Per-warp sums with shuffles, for every type CUDA shuffles: a tree with __shfl_down_sync
// (lane 0 holds the sum) and a butterfly with __shfl_xor_sync (every lane holds it).
// One row per thread, trip count rounded up to whole warps; rows past n add zero.
template <typename T>
__device__ __forceinline__ void warp_sums(long long n, const T* __restrict__ x,
                                          T* __restrict__ down, T* __restrict__ butterfly) {
    const long long stride = (long long)blockDim.x * (long long)gridDim.x;
    const long long rounded = (n + 31) / 32 * 32;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < rounded;
         i += stride) {
        const T v = i < n ? x[i] : (T)0;
        T tree = v;
        for (int d = 16; d > 0; d >>= 1) tree += __shfl_down_sync(0xffffffffu, tree, d);
        T all = v;
        for (int m = 1; m < 32; m <<= 1) all += __shfl_xor_sync(0xffffffffu, all, m);
        const unsigned int lane = threadIdx.x & 31;
        if (lane == 0) down[i >> 5] = tree;
        // every lane holds the same butterfly sum: lane k writes it to slot k of its warp
        butterfly[i] = all;
    }
}

extern "C" __global__ void warp_sum_int(long long n, const int* __restrict__ x,
                                   int* __restrict__ down, int* __restrict__ butterfly) {
    warp_sums<int>(n, x, down, butterfly);
}

extern "C" __global__ void warp_sum_uint(long long n, const unsigned int* __restrict__ x,
                                   unsigned int* __restrict__ down, unsigned int* __restrict__ butterfly) {
    warp_sums<unsigned int>(n, x, down, butterfly);
}

extern "C" __global__ void warp_sum_ll(long long n, const long long* __restrict__ x,
                                   long long* __restrict__ down, long long* __restrict__ butterfly) {
    warp_sums<long long>(n, x, down, butterfly);
}

extern "C" __global__ void warp_sum_ull(long long n, const unsigned long long* __restrict__ x,
                                   unsigned long long* __restrict__ down, unsigned long long* __restrict__ butterfly) {
    warp_sums<unsigned long long>(n, x, down, butterfly);
}

extern "C" __global__ void warp_sum_float(long long n, const float* __restrict__ x,
                                   float* __restrict__ down, float* __restrict__ butterfly) {
    warp_sums<float>(n, x, down, butterfly);
}

extern "C" __global__ void warp_sum_double(long long n, const double* __restrict__ x,
                                   double* __restrict__ down, double* __restrict__ butterfly) {
    warp_sums<double>(n, x, down, butterfly);
}
