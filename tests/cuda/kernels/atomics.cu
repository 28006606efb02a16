// Every thread of the grid updates the same few words with atomics (CUDA's overloads):
// sums of int, unsigned int, unsigned long long, float, double (float values are small
// integers so the sum is exact in any order), min and max of long long and unsigned long
// long, and the or of unsigned int and unsigned long long.
extern "C" __global__ void atomics(long long n, const long long* __restrict__ x,
                                   int* __restrict__ si, unsigned int* __restrict__ su,
                                   unsigned long long* __restrict__ sull,
                                   float* __restrict__ sf, double* __restrict__ sd,
                                   long long* __restrict__ mm,
                                   unsigned long long* __restrict__ umm,
                                   unsigned int* __restrict__ or32,
                                   unsigned long long* __restrict__ or64) {
    const long long stride = (long long)blockDim.x * (long long)gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const long long v = x[i];
        atomicAdd(si, (int)(v % 1000));
        atomicAdd(su, (unsigned int)(v & 0xff));
        atomicAdd(sull, (unsigned long long)v);
        atomicAdd(sf, (float)(v % 64));
        atomicAdd(sd, (double)v * 0.5);
        atomicMin(&mm[0], v);
        atomicMax(&mm[1], v);
        atomicMin(&umm[0], (unsigned long long)v);
        atomicMax(&umm[1], (unsigned long long)v);
        atomicOr(or32, 1u << (v & 31));
        atomicOr(or64, 1ull << (v & 63));
    }
}
