// One row per thread: the sign bits of x packed 32 to a word with __ballot_sync (lane 0
// writes the word) and counted with __popc and one atomicAdd per warp. The loop's trip
// count is rounded up to whole warps so every lane of a warp reaches the ballot together.
extern "C" __global__ void ballot_pack(long long n, const double* __restrict__ x,
                                       unsigned int* __restrict__ bits,
                                       unsigned long long* __restrict__ count) {
    const long long stride = (long long)blockDim.x * (long long)gridDim.x;
    const long long rounded = (n + 31) / 32 * 32;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < rounded;
         i += stride) {
        const bool positive = i < n && x[i] > 0.0;
        const unsigned int word = __ballot_sync(0xffffffffu, positive);
        if ((threadIdx.x & 31) == 0) {
            bits[i >> 5] = word;
            atomicAdd(count, (unsigned long long)__popc(word));
        }
    }
}
