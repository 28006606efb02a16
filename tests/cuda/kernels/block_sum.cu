// A block-wide tree sum in __shared__ memory with __syncthreads between the steps; thread 0
// adds the block's sum to the total with atomicAdd. Every thread of the block runs the same
// number of loop steps (rounded up to whole blocks), so each reaches every __syncthreads.
#define BLOCK_MAX 256

extern "C" __global__ void block_sum(long long n, const long long* __restrict__ x,
                                     long long* __restrict__ total,
                                     long long* __restrict__ per_step) {
    __shared__ long long partial[BLOCK_MAX];
    const long long stride = (long long)blockDim.x * (long long)gridDim.x;
    const long long rounded = (n + stride - 1) / stride * stride;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < rounded;
         i += stride) {
        partial[threadIdx.x] = i < n ? x[i] : 0;
        __syncthreads();
        for (unsigned int half = blockDim.x / 2; half > 0; half >>= 1) {
            if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            atomicAdd((unsigned long long*)total, (unsigned long long)partial[0]);
            per_step[i / blockDim.x] = partial[0];
        }
        __syncthreads();
    }
}
