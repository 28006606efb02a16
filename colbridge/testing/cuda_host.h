// Test-only stand-ins for the CUDA built-ins, so the very same kernel text NVRTC compiles
// also compiles with g++ and runs on the CPU.
//
// A launch runs the blocks of the grid one after another; the threads of a block run at the
// same time on real OS threads, so a data race really happens (and ThreadSanitizer sees it)
// and `atomicAdd` must really be atomic. Warps are emulated: the 32 lanes of a warp meet in
// every warp primitive (`__ballot_sync`, `__shfl_*_sync`, `__syncwarp`, ...) and the block
// meets in `__syncthreads`. Misuse that CUDA leaves undefined is reported instead of
// computing something: a lane named in a mask that has returned from the kernel, lanes of a
// warp waiting in different primitives or with different masks, a shuffle reading a lane
// outside the mask, a block that is not a whole number of warps, threads that all wait and
// can never be released. The report ends the launch with an error message.
//
// `__shared__` variables become `static` ones: blocks run one at a time, so one static
// array is the shared memory of the block that runs. Launches of one compiled kernel are
// serialised for the same reason.
//
// The header has two halves. What a kernel uses (indices, atomics, the warp primitives'
// entry points) and a small template that hands the kernel's arguments over are all a
// kernel's translation unit compiles. The runtime (the launch, its threads, barriers, warp
// primitives, reports) is compiled once, with `CB_HOST_RUNTIME_IMPL` defined, into an object
// that every kernel's library links: instantiating the thread machinery (std::thread, locks,
// condition variables) in every kernel made each build about five times slower. The launch
// is type-erased for that: it takes the kernel as a plain function pointer and a trampoline,
// `cb_invoke<A...>`, that unpacks the arguments. The runtime's symbols are hidden, so each
// kernel's library keeps its own copy and two loaded kernels never share one.
#ifndef COLBRIDGE_CUDA_HOST_H
#define COLBRIDGE_CUDA_HOST_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CB_HOST_RUNTIME_IMPL
#include <chrono>
#include <condition_variable>
#include <functional>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static

// after the system headers: only the shim's own declarations are hidden
#pragma GCC visibility push(hidden)

struct cb_dim3 {
    unsigned int x, y, z;
};

// Every launch thread has its own indices; the sizes are per thread too, so two launches of
// different kernels from two host threads do not share anything.
extern __thread cb_dim3 threadIdx;
extern __thread cb_dim3 blockIdx;
extern __thread cb_dim3 blockDim;
extern __thread cb_dim3 gridDim;

static const int warpSize = 32;

static inline double __longlong_as_double(long long bits) {
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static inline long long __double_as_longlong(double d) {
    long long bits;
    memcpy(&bits, &d, sizeof bits);
    return bits;
}

static inline float __int_as_float(int bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline int __float_as_int(float f) {
    int bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

// -- bit tricks ---------------------------------------------------------------------------

static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
static inline int __clzll(long long x) {
    return x == 0 ? 64 : __builtin_clzll((unsigned long long)x);
}

// -- atomics (real ones: the threads of a block run at the same time) ----------------------

#define CB_ATOMIC_INT(T)                                                               \
    static inline T atomicAdd(T* address, T v) {                                       \
        return __atomic_fetch_add(address, v, __ATOMIC_SEQ_CST);                       \
    }                                                                                  \
    static inline T atomicSub(T* address, T v) {                                       \
        return __atomic_fetch_sub(address, v, __ATOMIC_SEQ_CST);                       \
    }                                                                                  \
    static inline T atomicOr(T* address, T v) {                                        \
        return __atomic_fetch_or(address, v, __ATOMIC_SEQ_CST);                        \
    }                                                                                  \
    static inline T atomicAnd(T* address, T v) {                                       \
        return __atomic_fetch_and(address, v, __ATOMIC_SEQ_CST);                       \
    }                                                                                  \
    static inline T atomicXor(T* address, T v) {                                       \
        return __atomic_fetch_xor(address, v, __ATOMIC_SEQ_CST);                       \
    }                                                                                  \
    static inline T atomicExch(T* address, T v) {                                      \
        return __atomic_exchange_n(address, v, __ATOMIC_SEQ_CST);                      \
    }                                                                                  \
    static inline T atomicCAS(T* address, T compare, T v) {                            \
        __atomic_compare_exchange_n(address, &compare, v, false, __ATOMIC_SEQ_CST,     \
                                    __ATOMIC_SEQ_CST);                                 \
        return compare;                                                                \
    }                                                                                  \
    static inline T atomicMin(T* address, T v) {                                       \
        T old = __atomic_load_n(address, __ATOMIC_SEQ_CST);                            \
        while (v < old && !__atomic_compare_exchange_n(address, &old, v, false,        \
                                                       __ATOMIC_SEQ_CST,               \
                                                       __ATOMIC_SEQ_CST)) {            \
        }                                                                              \
        return old;                                                                    \
    }                                                                                  \
    static inline T atomicMax(T* address, T v) {                                       \
        T old = __atomic_load_n(address, __ATOMIC_SEQ_CST);                            \
        while (v > old && !__atomic_compare_exchange_n(address, &old, v, false,        \
                                                       __ATOMIC_SEQ_CST,               \
                                                       __ATOMIC_SEQ_CST)) {            \
        }                                                                              \
        return old;                                                                    \
    }

CB_ATOMIC_INT(int)
CB_ATOMIC_INT(unsigned int)
CB_ATOMIC_INT(long long)
CB_ATOMIC_INT(unsigned long long)
#undef CB_ATOMIC_INT

// float and double: a compare-and-swap loop on the value (GCC's generic atomics)
template <typename F>
static inline F cb_atomic_float_add(F* address, F v) {
    F old;
    __atomic_load(address, &old, __ATOMIC_SEQ_CST);
    F next;
    do {
        next = old + v;
    } while (!__atomic_compare_exchange(address, &old, &next, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST));
    return old;
}

static inline float atomicAdd(float* address, float v) { return cb_atomic_float_add(address, v); }
static inline double atomicAdd(double* address, double v) {
    return cb_atomic_float_add(address, v);
}

static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// -- barriers and warp primitives (the runtime does the work) ------------------------------

enum cb_op {
    CB_NONE = 0,
    CB_SYNCWARP,
    CB_BALLOT,
    CB_ANY,
    CB_ALL,
    CB_SHFL,
    CB_SHFL_UP,
    CB_SHFL_DOWN,
    CB_SHFL_XOR,
};

// One warp-wide exchange: every lane of `mask` brings `value` (and a parameter) and takes
// away what the primitive `op` gives it.
unsigned long long cb_warp_collective(int op, unsigned int mask, unsigned long long value,
                                      long long param, int width);

void __syncthreads();

static inline void __syncwarp(unsigned int mask = 0xffffffffu) {
    cb_warp_collective(CB_SYNCWARP, mask, 0, 0, 32);
}

static inline unsigned int __ballot_sync(unsigned int mask, int predicate) {
    return (unsigned int)cb_warp_collective(CB_BALLOT, mask, predicate != 0, 0, 32);
}

static inline int __any_sync(unsigned int mask, int predicate) {
    return (int)cb_warp_collective(CB_ANY, mask, predicate != 0, 0, 32);
}

static inline int __all_sync(unsigned int mask, int predicate) {
    return (int)cb_warp_collective(CB_ALL, mask, predicate != 0, 0, 32);
}

// Shuffles move the value's bit pattern; the overloads are CUDA's (int, unsigned int,
// long long, unsigned long long, float, double).
template <typename T>
static inline T cb_shuffle(int op, unsigned int mask, T var, long long param, int width) {
    static_assert(sizeof(T) <= 8, "shuffled values are at most 8 bytes");
    unsigned long long bits = 0;
    memcpy(&bits, &var, sizeof(T));
    bits = cb_warp_collective(op, mask, bits, param, width);
    T out;
    memcpy(&out, &bits, sizeof(T));
    return out;
}

#define CB_SHUFFLES(T)                                                                     \
    static inline T __shfl_sync(unsigned int mask, T var, int src_lane, int width = 32) {  \
        return cb_shuffle<T>(CB_SHFL, mask, var, src_lane, width);                         \
    }                                                                                      \
    static inline T __shfl_up_sync(unsigned int mask, T var, unsigned int delta,           \
                                   int width = 32) {                                       \
        return cb_shuffle<T>(CB_SHFL_UP, mask, var, delta, width);                         \
    }                                                                                      \
    static inline T __shfl_down_sync(unsigned int mask, T var, unsigned int delta,         \
                                     int width = 32) {                                     \
        return cb_shuffle<T>(CB_SHFL_DOWN, mask, var, delta, width);                       \
    }                                                                                      \
    static inline T __shfl_xor_sync(unsigned int mask, T var, int lane_mask,               \
                                    int width = 32) {                                      \
        return cb_shuffle<T>(CB_SHFL_XOR, mask, var, lane_mask, width);                    \
    }

CB_SHUFFLES(int)
CB_SHUFFLES(unsigned int)
CB_SHUFFLES(long long)
CB_SHUFFLES(unsigned long long)
CB_SHUFFLES(float)
CB_SHUFFLES(double)
#undef CB_SHUFFLES

// -- launches ------------------------------------------------------------------------------

typedef void (*cb_fn)();
// Calls `kernel` (really a `void (*)(A...)`) with `*(A*)args[k]` as its k-th argument.
typedef void (*cb_invoker)(cb_fn kernel, void** args);

// Run `kernel` on `grid` blocks of `threads` threads; `args[k]` points at the k-th argument,
// as with cuLaunchKernel. Returns 0, or 1 with a message in `error`.
int cb_launch(cb_invoker invoke, cb_fn kernel, unsigned int grid, unsigned int threads,
              void** args, char* error, size_t error_size);

// The stand-alone program's main (below): `pointer[k]` tells whether parameter k is a pointer.
int cb_main(cb_invoker invoke, cb_fn kernel, size_t count, const bool* pointer, int argc,
            char** argv);

template <size_t... I>
struct cb_indices {};
template <size_t N, size_t... I>
struct cb_make_indices : cb_make_indices<N - 1, N - 1, I...> {};
template <size_t... I>
struct cb_make_indices<0, I...> {
    typedef cb_indices<I...> type;
};

template <typename... A, size_t... I>
static void cb_call(void (*kernel)(A...), void** args, cb_indices<I...>) {
    kernel(*static_cast<A*>(args[I])...);
}

template <typename... A>
static void cb_invoke(cb_fn kernel, void** args) {
    cb_call(reinterpret_cast<void (*)(A...)>(kernel), args,
            typename cb_make_indices<sizeof...(A)>::type());
}

template <typename... A>
static int cb_host_launch(void (*kernel)(A...), unsigned int grid, unsigned int threads,
                          void** args, char* error, size_t error_size) {
    return cb_launch(cb_invoke<A...>, reinterpret_cast<cb_fn>(kernel), grid, threads, args,
                     error, error_size);
}

template <typename T>
struct cb_is_pointer {
    static const bool value = false;
};
template <typename T>
struct cb_is_pointer<T*> {
    static const bool value = true;
};

template <typename... A>
static int cb_host_main(void (*kernel)(A...), int argc, char** argv) {
    static const bool pointer[] = {cb_is_pointer<A>::value..., false};
    return cb_main(cb_invoke<A...>, reinterpret_cast<cb_fn>(kernel), sizeof...(A), pointer, argc,
                   argv);
}

// -- the runtime ---------------------------------------------------------------------------
//
// Compiled once into an object every kernel's library links, or into a stand-alone program
// together with its kernel (sanitizer builds).
#ifdef CB_HOST_RUNTIME_IMPL

__thread cb_dim3 threadIdx = {0, 0, 0};
__thread cb_dim3 blockIdx = {0, 0, 0};
__thread cb_dim3 blockDim = {1, 1, 1};
__thread cb_dim3 gridDim = {1, 1, 1};

// Thrown inside a launch thread to unwind it once a misuse has been reported.
struct cb_launch_failed {};

static const char* cb_op_name(int op) {
    switch (op) {
        case CB_SYNCWARP: return "__syncwarp";
        case CB_BALLOT: return "__ballot_sync";
        case CB_ANY: return "__any_sync";
        case CB_ALL: return "__all_sync";
        case CB_SHFL: return "__shfl_sync";
        case CB_SHFL_UP: return "__shfl_up_sync";
        case CB_SHFL_DOWN: return "__shfl_down_sync";
        case CB_SHFL_XOR: return "__shfl_xor_sync";
        default: return "(none)";
    }
}

struct cb_warp {
    int op = CB_NONE;             // the primitive the waiting lanes are in
    unsigned int mask = 0;        // and its mask
    unsigned int arrived = 0;     // lanes waiting in it
    unsigned int exited = 0;      // lanes that returned from the kernel
    unsigned long long generation = 0;
    unsigned long long value[32];  // what each lane brought (bit pattern)
    long long param[32];           // each lane's lane/delta/lane mask (shuffles)
    int width[32];
    unsigned long long out[32];    // what each lane takes away (written by the last lane)
};

struct cb_block {
    std::mutex m;
    std::condition_variable cv;  // __syncthreads() waits here
    // one per warp: a warp primitive wakes its own lanes, not every thread of the block
    std::unique_ptr<std::condition_variable[]> warp_cv;
    unsigned int threads = 0;
    unsigned int live = 0;     // threads that have not returned
    unsigned int blocked = 0;  // threads waiting in a barrier or warp primitive
    unsigned int bar_arrived = 0;
    unsigned long long bar_generation = 0;
    std::vector<cb_warp> warps;
    bool failed = false;
    std::string message;
};

static __thread cb_block* cb_this_block = nullptr;

static inline unsigned int cb_lane() { return threadIdx.x & 31u; }
static inline unsigned int cb_warp_id() { return threadIdx.x >> 5; }

static std::string cb_where() {
    char buf[96];
    snprintf(buf, sizeof buf, "thread %u (warp %u, lane %u) of block %u", threadIdx.x,
             cb_warp_id(), cb_lane(), blockIdx.x);
    return std::string(buf);
}

static std::string cb_hex(unsigned int mask) {
    char buf[16];
    snprintf(buf, sizeof buf, "0x%08x", mask);
    return std::string(buf);
}

// Record the first misuse of this launch, wake every waiting thread, unwind this one.
// A failure releases every waiting thread of the block, in barriers and in warp primitives.
static void cb_wake_all(cb_block* b) {
    b->cv.notify_all();
    for (size_t k = 0; k < b->warps.size(); ++k) b->warp_cv[k].notify_all();
}

[[noreturn]] static void cb_fail(std::unique_lock<std::mutex>& lock, const std::string& what) {
    cb_block* b = cb_this_block;
    if (!b->failed) {
        b->failed = true;
        b->message = what;
    }
    cb_wake_all(b);
    lock.unlock();
    throw cb_launch_failed();
}

// Wait for `released`; a thread about to wait when every other live thread waits too can
// never be released: that is a deadlock, reported instead of hanging the test run.
template <typename Pred>
static void cb_wait(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                    const char* in, Pred released) {
    cb_block* b = cb_this_block;
    b->blocked += 1;
    if (b->blocked == b->live) {
        cb_fail(lock, "deadlock: every thread of block " + std::to_string(blockIdx.x) +
                          " that has not returned waits (the last one, " + cb_where() +
                          ", in " + in + "); warp primitives or __syncthreads() were "
                          "reached by some threads and not by others");
    }
    cv.wait(lock, [&] { return b->failed || released(); });
    if (b->failed) {
        lock.unlock();
        throw cb_launch_failed();
    }
}

static void cb_need_whole_warps(std::unique_lock<std::mutex>& lock, const char* what) {
    if (blockDim.x % 32 != 0) {
        cb_fail(lock, std::string(what) + " in a block of " + std::to_string(blockDim.x) +
                          " threads: warp primitives need blocks of a whole number of warps "
                          "(a multiple of 32 threads)");
    }
}

// The last lane to arrive computes what each lane takes away; the others wait for it.
unsigned long long cb_warp_collective(int op, unsigned int mask, unsigned long long value,
                                      long long param, int width) {
    cb_block* b = cb_this_block;
    std::unique_lock<std::mutex> lock(b->m);
    const char* name = cb_op_name(op);
    cb_need_whole_warps(lock, name);
    const unsigned int lane = cb_lane();
    const unsigned int bit = 1u << lane;
    cb_warp& w = b->warps[cb_warp_id()];
    if (!(mask & bit)) {
        cb_fail(lock, cb_where() + " calls " + name + " with mask " + cb_hex(mask) +
                          ", which does not name its own lane");
    }
    if (mask & w.exited) {
        cb_fail(lock, cb_where() + " calls " + name + " with mask " + cb_hex(mask) +
                          " but lanes " + cb_hex(mask & w.exited) +
                          " have returned from the kernel; every lane named in the mask "
                          "must reach the primitive (round the loop's trip count up to whole "
                          "warps)");
    }
    if (width <= 0 || width > 32 || (width & (width - 1)) != 0) {
        cb_fail(lock, cb_where() + " calls " + name + " with width " + std::to_string(width) +
                          " (a power of two from 1 to 32)");
    }
    if (w.arrived != 0 && (w.op != op || w.mask != mask)) {
        cb_fail(lock, cb_where() + " calls " + name + " with mask " + cb_hex(mask) +
                          " while lanes " + cb_hex(w.arrived) + " of its warp wait in " +
                          cb_op_name(w.op) + " with mask " + cb_hex(w.mask));
    }
    w.op = op;
    w.mask = mask;
    w.value[lane] = value;
    w.param[lane] = param;
    w.width[lane] = width;
    w.arrived |= bit;
    if (w.arrived == mask) {
        // the last lane: compute every lane's answer, release the others
        unsigned long long votes = 0;
        for (unsigned int l = 0; l < 32; ++l) {
            if ((mask >> l) & 1u) votes |= (w.value[l] != 0 ? 1ull : 0ull) << l;
        }
        for (unsigned int l = 0; l < 32; ++l) {
            if (!((mask >> l) & 1u)) continue;
            const unsigned int wd = (unsigned int)w.width[l];
            const unsigned int base = l & ~(wd - 1u);
            long long src = l;
            switch (op) {
                case CB_BALLOT: w.out[l] = votes; continue;
                case CB_ANY: w.out[l] = votes != 0; continue;
                case CB_ALL: w.out[l] = votes == (unsigned long long)mask; continue;
                case CB_SYNCWARP: w.out[l] = 0; continue;
                case CB_SHFL: src = base + ((unsigned long long)w.param[l] % wd); break;
                case CB_SHFL_UP:
                    src = (l - base) >= (unsigned long long)w.param[l] ? l - w.param[l] : l;
                    break;
                case CB_SHFL_DOWN:
                    src = (l - base) + (unsigned long long)w.param[l] < wd ? l + w.param[l] : l;
                    break;
                case CB_SHFL_XOR:
                    src = (long long)(l ^ (unsigned int)w.param[l]);
                    // a later group of `width` lanes is out of reach: the lane keeps its value
                    if (src >= (long long)(base + wd)) src = l;
                    break;
                default: break;
            }
            if (src < 0 || src > 31 || !((mask >> src) & 1u)) {
                w.arrived = 0;
                cb_fail(lock, std::string(name) + " in warp " + std::to_string(cb_warp_id()) +
                                  " of block " + std::to_string(blockIdx.x) + ": lane " +
                                  std::to_string(l) + " reads lane " + std::to_string(src) +
                                  ", which is not in the mask " + cb_hex(mask));
            }
            w.out[l] = w.value[src];
        }
        w.arrived = 0;
        w.op = CB_NONE;
        w.generation += 1;
        b->blocked -= (unsigned int)__builtin_popcount(mask) - 1u;
        b->warp_cv[cb_warp_id()].notify_all();
        return w.out[lane];
    }
    const unsigned long long generation = w.generation;
    cb_wait(lock, b->warp_cv[cb_warp_id()], name, [&] { return w.generation != generation; });
    return w.out[lane];
}

void __syncthreads() {
    cb_block* b = cb_this_block;
    std::unique_lock<std::mutex> lock(b->m);
    if (b->live != b->threads) {
        cb_fail(lock, cb_where() + " reaches __syncthreads() after " +
                          std::to_string(b->threads - b->live) +
                          " thread(s) of its block returned from the kernel; every thread "
                          "of the block must reach it");
    }
    b->bar_arrived += 1;
    if (b->bar_arrived == b->threads) {
        b->bar_arrived = 0;
        b->bar_generation += 1;
        b->blocked -= b->threads - 1;
        b->cv.notify_all();
        return;
    }
    const unsigned long long generation = b->bar_generation;
    cb_wait(lock, b->cv, "__syncthreads()", [&] { return b->bar_generation != generation; });
}

// A thread has returned from the kernel: waiting lanes or threads that counted on it can
// never be released.
static void cb_thread_returned() {
    cb_block* b = cb_this_block;
    std::unique_lock<std::mutex> lock(b->m);
    if (b->failed) return;
    b->live -= 1;
    const unsigned int bit = 1u << cb_lane();
    cb_warp& w = b->warps[cb_warp_id()];
    w.exited |= bit;
    if (w.arrived != 0 && (w.mask & bit)) {
        cb_fail(lock, cb_where() + " returned from the kernel while lanes " + cb_hex(w.arrived) +
                          " of its warp wait for it in " + cb_op_name(w.op) + " with mask " +
                          cb_hex(w.mask) + " (round the loop's trip count up to whole warps)");
    }
    if (b->bar_arrived != 0) {
        cb_fail(lock, cb_where() + " returned from the kernel while " +
                          std::to_string(b->bar_arrived) +
                          " thread(s) of its block wait in __syncthreads()");
    }
    if (b->live != 0 && b->blocked == b->live) {
        cb_fail(lock, "deadlock: after " + cb_where() +
                          " returned, every other thread of its block waits");
    }
}

// -- the launch ----------------------------------------------------------------------------

static void cb_run_thread(cb_invoker invoke, cb_fn kernel, void** args, cb_block* block,
                          unsigned int b, unsigned int t, unsigned int grid,
                          unsigned int threads) {
    cb_this_block = block;
    threadIdx = {t, 0, 0};
    blockIdx = {b, 0, 0};
    blockDim = {threads, 1, 1};
    gridDim = {grid, 1, 1};
    try {
        invoke(kernel, args);
        cb_thread_returned();
    } catch (const cb_launch_failed&) {
        // reported in block->message
    } catch (const std::exception& exc) {
        std::unique_lock<std::mutex> lock(block->m);
        if (!block->failed) {
            block->failed = true;
            block->message = std::string("C++ exception in a launch thread: ") + exc.what();
        }
        cb_wake_all(block);
    }
}

// -- the launch threads, kept between launches ------------------------------------------
//
// Creating and joining a block's OS threads took most of a launch (8 ms for 64 threads, 25 ms
// for 256), and a generated scan or reduction launches several kernels in a row. So the
// threads stay: a pool of them, thread `t` running the task's `t`-th part, each leaving once
// no launch has needed it for `CB_POOL_IDLE_MS` (a test run loads hundreds of libraries, each
// with a pool of its own: idle pools must not pile up). Launches are serialised, so one task
// runs at a time; a thread's `alive` flag is set and cleared under the pool's lock, so a
// thread never leaves while the task it should run is being posted.
#ifndef CB_POOL_IDLE_MS
#define CB_POOL_IDLE_MS 500
#endif

struct cb_pool {
    std::mutex m;
    std::condition_variable work_cv;  // a task was posted (`generation` moved on)
    std::condition_variable done_cv;  // every part of the task has returned
    std::vector<bool> alive;          // a thread is there for part `t`
    const std::function<void(unsigned int)>* task = nullptr;
    unsigned int parts = 0;
    unsigned int finished = 0;
    unsigned long long generation = 0;
};

// Never destroyed: idle threads may still wait on it while the process exits.
static cb_pool* cb_the_pool() {
    static cb_pool* pool = new cb_pool();
    return pool;
}

static void cb_pool_thread(cb_pool* p, unsigned int t, unsigned long long seen) {
    std::unique_lock<std::mutex> lock(p->m);
    for (;;) {
        if (!p->work_cv.wait_for(lock, std::chrono::milliseconds(CB_POOL_IDLE_MS),
                                 [&] { return p->generation != seen; })) {
            p->alive[t] = false;  // the next launch that needs part `t` starts a thread
            return;
        }
        seen = p->generation;
        if (t >= p->parts) continue;  // a launch of fewer threads than the pool holds
        const std::function<void(unsigned int)>* task = p->task;
        lock.unlock();
        (*task)(t);
        lock.lock();
        if (++p->finished == p->parts) p->done_cv.notify_all();
    }
}

// Runs `task(0)` ... `task(parts - 1)` at once, each on a thread of its own; returns at once.
static void cb_pool_start(unsigned int parts, const std::function<void(unsigned int)>* task) {
    cb_pool* p = cb_the_pool();
    std::lock_guard<std::mutex> lock(p->m);
    if (p->alive.size() < parts) p->alive.resize(parts, false);
    for (unsigned int t = 0; t < parts; ++t) {
        if (!p->alive[t]) {
            p->alive[t] = true;
            std::thread(cb_pool_thread, p, t, p->generation).detach();
        }
    }
    p->task = task;
    p->parts = parts;
    p->finished = 0;
    p->generation += 1;
    p->work_cv.notify_all();
}

// Waits until every part of the task `cb_pool_start` posted has returned.
static void cb_pool_wait() {
    cb_pool* p = cb_the_pool();
    std::unique_lock<std::mutex> lock(p->m);
    p->done_cv.wait(lock, [&] { return p->finished == p->parts; });
    p->task = nullptr;
}

// One OS thread per thread of a block, reused block after block and launch after launch: the
// threads of a block run at once (barriers and warp primitives need that), and blocks run one
// after another.
int cb_launch(cb_invoker invoke, cb_fn kernel, unsigned int grid, unsigned int threads,
              void** args, char* error, size_t error_size) {
    // static __shared__ arrays are per kernel, and each kernel's library has its own runtime
    static std::mutex one_launch_at_a_time;
    std::lock_guard<std::mutex> serial(one_launch_at_a_time);
    if (grid == 0 || threads == 0) return 0;
    // A lock for each step: `m` hands out the next block, `gate_m` holds every thread until
    // all have taken it, `done_m` counts their ends. A thread that has finished the block
    // (and waits under `m` for the next) thus hands its writes to no thread of the block
    // still at the gate; ThreadSanitizer would miss the races between them.
    std::mutex m;
    std::mutex gate_m;
    std::mutex done_m;
    std::condition_variable start_cv;
    std::condition_variable gate_cv;
    std::condition_variable done_cv;
    std::unique_ptr<cb_block> block;
    unsigned int running = 0;    // block `running - 1` runs; 0: none yet
    unsigned int started = 0;    // threads that have taken the running block
    unsigned int finished = 0;   // threads of the running block that have returned
    bool stop = false;
    auto worker = [&](unsigned int t) {
        unsigned int seen = 0;
        for (;;) {
            cb_block* current = nullptr;
            {
                std::unique_lock<std::mutex> lock(m);
                start_cv.wait(lock, [&] { return stop || running != seen; });
                if (stop) return;
                seen = running;
                current = block.get();
            }
            {
                std::unique_lock<std::mutex> gate(gate_m);
                if (++started == threads) {
                    gate_cv.notify_all();
                } else {
                    gate_cv.wait(gate, [&] { return started == threads; });
                }
            }
            cb_run_thread(invoke, kernel, args, current, seen - 1, t, grid, threads);
            std::lock_guard<std::mutex> lock(done_m);
            if (++finished == threads) done_cv.notify_one();
        }
    };
    const std::function<void(unsigned int)> task = worker;
    cb_pool_start(threads, &task);
    int status = 0;
    for (unsigned int b = 0; b < grid && status == 0; ++b) {
        auto next = std::make_unique<cb_block>();
        next->threads = threads;
        next->live = threads;
        next->warps.resize((threads + 31) / 32);
        next->warp_cv.reset(new std::condition_variable[next->warps.size()]);
        {
            std::lock_guard<std::mutex> counting(done_m);
            finished = 0;
        }
        {
            std::lock_guard<std::mutex> gate(gate_m);
            started = 0;
        }
        {
            std::lock_guard<std::mutex> lock(m);
            block = std::move(next);
            running = b + 1;
        }
        start_cv.notify_all();
        {
            std::unique_lock<std::mutex> counting(done_m);
            done_cv.wait(counting, [&] { return finished == threads; });
        }
        if (block->failed) {
            snprintf(error, error_size, "block %u of %u (%u threads): %s", b, grid, threads,
                     block->message.c_str());
            status = 1;
        }
    }
    {
        std::lock_guard<std::mutex> lock(m);
        stop = true;
    }
    start_cv.notify_all();
    cb_pool_wait();
    return status;
}

// -- a stand-alone program (sanitizer builds) ------------------------------------------------
//
// `prog GRID BLOCK ARGS OUT` reads the arguments from the file ARGS (per parameter, in order:
// a pointer is a little-endian uint64 byte count and that many bytes, copied into a buffer
// of exactly that size so a sanitizer sees every byte past its end; a scalar is 8 bytes
// holding the value in its own type), launches, and writes every pointer's buffer to OUT
// (the byte count and the bytes). Exit status 3 reports a misuse, with the message on stderr.

static bool cb_read_exact(FILE* f, void* dst, size_t n) {
    return n == 0 || fread(dst, 1, n, f) == n;
}

int cb_main(cb_invoker invoke, cb_fn kernel, size_t count, const bool* pointer, int argc,
            char** argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s GRID BLOCK ARGS OUT\n", argv[0]);
        return 2;
    }
    const unsigned int grid = (unsigned int)strtoul(argv[1], nullptr, 10);
    const unsigned int block = (unsigned int)strtoul(argv[2], nullptr, 10);
    FILE* in = fopen(argv[3], "rb");
    if (!in) {
        fprintf(stderr, "cannot open %s\n", argv[3]);
        return 2;
    }
    std::vector<unsigned long long> slots(count + 1, 0);
    std::vector<void*> pointers(count + 1, nullptr);
    std::vector<void*> owned;
    std::vector<unsigned long long> sizes;
    for (size_t k = 0; k < count; ++k) {
        bool ok = true;
        if (pointer[k]) {
            unsigned long long n = 0;
            ok = cb_read_exact(in, &n, sizeof n);
            void* p = ok && n ? malloc((size_t)n) : nullptr;
            ok = ok && (n == 0 || cb_read_exact(in, p, (size_t)n));
            owned.push_back(p);
            sizes.push_back(n);
            memcpy(&slots[k], &p, sizeof p);
        } else {
            ok = cb_read_exact(in, &slots[k], sizeof slots[k]);
        }
        if (!ok) {
            fprintf(stderr, "short argument file %s\n", argv[3]);
            return 2;
        }
    }
    fclose(in);
    for (size_t k = 0; k < count; ++k) pointers[k] = &slots[k];
    char error[4096] = {0};
    const int failed = cb_launch(invoke, kernel, grid, block, pointers.data(), error, sizeof error);
    FILE* out = fopen(argv[4], "wb");
    if (!out) {
        fprintf(stderr, "cannot open %s\n", argv[4]);
        return 2;
    }
    for (size_t k = 0; k < owned.size(); ++k) {
        fwrite(&sizes[k], sizeof sizes[k], 1, out);
        if (sizes[k]) fwrite(owned[k], 1, (size_t)sizes[k], out);
        free(owned[k]);
    }
    fclose(out);
    if (failed) {
        fprintf(stderr, "%s\n", error);
        return 3;
    }
    return 0;
}

#endif  // CB_HOST_RUNTIME_IMPL

#pragma GCC visibility pop

// The library's entry point, `cb_host_<kernel>`, taking the launch's arguments as `cb_launch`.
#define CB_HOST_ENTRY(kernel)                                                              \
    extern "C" int cb_host_##kernel(unsigned int grid, unsigned int block, void** args,    \
                                    char* error, size_t error_size) {                      \
        return cb_host_launch(kernel, grid, block, args, error, error_size);               \
    }

// A stand-alone program launching `kernel` (it needs the runtime in the same translation
// unit: define CB_HOST_RUNTIME_IMPL before including this header).
#define CB_HOST_MAIN(kernel) \
    int main(int argc, char** argv) { return cb_host_main(kernel, argc, argv); }

#endif  // COLBRIDGE_CUDA_HOST_H
