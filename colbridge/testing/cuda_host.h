// Test-only stand-ins for the CUDA built-ins that colbridge's generated kernels use,
// so the very same kernel text compiles with g++ and runs on the CPU.
//
// The launch grid is emulated sequentially: `cb_host_launch` sets blockIdx/threadIdx
// for every (block, thread) pair in turn and calls the kernel. Generated kernels
// never synchronise threads or share memory, so a sequential launch computes what a
// parallel one does.
#ifndef COLBRIDGE_CUDA_HOST_H
#define COLBRIDGE_CUDA_HOST_H

#include <math.h>
#include <string.h>

#include <cstddef>
#include <utility>

#define __global__
#define __device__
#define __forceinline__ inline

struct cb_dim3 {
    unsigned int x, y, z;
};

static cb_dim3 threadIdx = {0, 0, 0};
static cb_dim3 blockIdx = {0, 0, 0};
static cb_dim3 blockDim = {1, 1, 1};
static cb_dim3 gridDim = {1, 1, 1};

static inline double __longlong_as_double(long long bits) {
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static inline float __int_as_float(int bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long v) {
    unsigned long long old = *address;
    *address = old + v;
    return old;
}

// Launch `kernel` on a grid of `grid` blocks of `block` threads; `args[k]` points at the
// k-th argument, as with cuLaunchKernel.
template <typename... A, std::size_t... I>
static void cb_host_call(void (*kernel)(A...), void** args, std::index_sequence<I...>) {
    kernel(*static_cast<A*>(args[I])...);
}

template <typename... A>
static void cb_host_launch(void (*kernel)(A...), unsigned int grid, unsigned int block,
                           void** args) {
    gridDim.x = grid;
    blockDim.x = block;
    for (unsigned int b = 0; b < grid; ++b) {
        for (unsigned int t = 0; t < block; ++t) {
            blockIdx.x = b;
            threadIdx.x = t;
            cb_host_call(kernel, args, std::index_sequence_for<A...>{});
        }
    }
}

#define CB_HOST_ENTRY(kernel)                                                         \
    extern "C" void cb_host_##kernel(unsigned int grid, unsigned int block, void** args) { \
        cb_host_launch(kernel, grid, block, args);                                    \
    }

#endif  // COLBRIDGE_CUDA_HOST_H
