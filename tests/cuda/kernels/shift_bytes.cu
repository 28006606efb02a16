// Each byte of x plus one, one row per thread in a grid-stride loop.
extern "C" __global__ void shift_bytes(long long n, const unsigned char* __restrict__ x,
                                       unsigned char* __restrict__ out) {
    const long long stride = (long long)blockDim.x * (long long)gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = (unsigned char)(x[i] + 1);
    }
}
