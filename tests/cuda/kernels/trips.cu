// How many steps of a one-row-per-thread grid-stride loop each thread takes.
extern "C" __global__ void trips(long long n, unsigned int* __restrict__ steps) {
    const long long stride = (long long)blockDim.x * (long long)gridDim.x;
    const long long me = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int count = 0;
    for (long long i = me; i < n; i += stride) ++count;
    steps[me] = count;
}
