// Counts positive values: each thread counts its rows, then adds its count to the total
// with one atomicAdd, as the generated kernels count failed rows.
extern "C" __global__ void count_positive(long long n, const double* __restrict__ x,
                                          unsigned long long* __restrict__ total) {
    const long long stride = (long long)blockDim.x * (long long)gridDim.x;
    unsigned long long mine = 0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        mine += x[i] > 0.0;
    }
    if (mine) atomicAdd(total, mine);
}
