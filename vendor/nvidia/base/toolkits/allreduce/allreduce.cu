/* nvidia's allreduce toolkit (vendors/toolkits.py): NCCL all-reduce bus bandwidth over the node's GPUs, one process
 * driving them all (ncclCommInitAll), nccl-tests' convention as perfplay's torch allreduce counts it.
 *
 *   usage: allreduce WARMUP ITERATIONS BYTES [BYTES...]    (BYTES: the message, a multiple of 4: fp32 sum)
 *
 * Per message size S: a send and a receive buffer on each of the n visible GPUs (n >= 2), one stream each; WARMUP
 * untimed all-reduces, every stream synchronized, then ITERATIONS all-reduces (each a group of the n calls) timed on
 * the host's monotonic clock until every stream is synchronized. t = seconds per all-reduce; algbw = S / t;
 * busbw = algbw x 2(n-1)/n, the figure against the GPU's interconnect peak. One result line each:
 *
 *   PERFPLAY_RESULT kind='all_reduce fp32' achieved=<busbw B/s> bytes=S iterations=<n> seconds=<t> algbw=<B/s>
 *
 * Written in the C subset that nvcc compiles as C++ (tests/unit/test_nvidia_toolkits.py checks it parses as C).
 * Exits 1 on bad arguments or fewer than two GPUs, 2 on a CUDA or NCCL error (named on stderr).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define CHECK_CUDA(call)                                                                   \
    do {                                                                                   \
        cudaError_t status_ = (call);                                                      \
        if (status_ != cudaSuccess) {                                                      \
            fprintf(stderr, "allreduce: %s: %s\n", #call, cudaGetErrorString(status_));    \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)
#define CHECK_NCCL(call)                                                                   \
    do {                                                                                   \
        ncclResult_t status_ = (call);                                                     \
        if (status_ != ncclSuccess) {                                                      \
            fprintf(stderr, "allreduce: %s: %s\n", #call, ncclGetErrorString(status_));    \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

enum { MAX_GPUS = 64 };

static long long parse(const char *text) {
    char *end = NULL;
    long long value = strtoll(text, &end, 10);
    return (*text != '\0' && *end == '\0' && value >= 0) ? value : -1; /* -1: not an integer >= 0 */
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void all_reduce(int n, ncclComm_t *comms, cudaStream_t *streams, void **send, void **recv, size_t count) {
    CHECK_NCCL(ncclGroupStart());
    for (int i = 0; i < n; i++) {
        CHECK_NCCL(ncclAllReduce(send[i], recv[i], count, ncclFloat, ncclSum, comms[i], streams[i]));
    }
    CHECK_NCCL(ncclGroupEnd());
}

static void synchronize(int n, cudaStream_t *streams) {
    for (int i = 0; i < n; i++) {
        CHECK_CUDA(cudaSetDevice(i));
        CHECK_CUDA(cudaStreamSynchronize(streams[i]));
    }
}

int main(int argc, char **argv) {
    int n = 0;
    ncclComm_t comms[MAX_GPUS];
    cudaStream_t streams[MAX_GPUS];
    void *send[MAX_GPUS], *recv[MAX_GPUS];
    if (argc < 4) {
        fprintf(stderr, "usage: allreduce WARMUP ITERATIONS BYTES [BYTES...] (BYTES a multiple of 4)\n");
        return 1;
    }
    long long warmup = parse(argv[1]), iterations = parse(argv[2]);
    if (warmup < 0 || iterations < 1) {
        fprintf(stderr, "allreduce: WARMUP is an integer >= 0 and ITERATIONS >= 1\n");
        return 1;
    }
    for (int arg = 3; arg < argc; arg++) {
        long long size = parse(argv[arg]);
        if (size < 4 || size % 4) {
            fprintf(stderr, "allreduce: BYTES must be a positive multiple of 4, not '%s'\n", argv[arg]);
            return 1;
        }
    }
    CHECK_CUDA(cudaGetDeviceCount(&n));
    if (n < 2 || n > MAX_GPUS) {
        fprintf(stderr, "allreduce: needs 2 to %d visible GPUs, sees %d\n", MAX_GPUS, n);
        return 1;
    }
    CHECK_NCCL(ncclCommInitAll(comms, n, NULL));
    for (int i = 0; i < n; i++) {
        CHECK_CUDA(cudaSetDevice(i));
        CHECK_CUDA(cudaStreamCreate(&streams[i]));
    }
    for (int arg = 3; arg < argc; arg++) {
        size_t size = (size_t)parse(argv[arg]);
        for (int i = 0; i < n; i++) {
            CHECK_CUDA(cudaSetDevice(i));
            CHECK_CUDA(cudaMalloc(&send[i], size));
            CHECK_CUDA(cudaMalloc(&recv[i], size));
            CHECK_CUDA(cudaMemset(send[i], 0, size)); /* zeros: the sums stay finite */
        }
        for (long long k = 0; k < warmup; k++) all_reduce(n, comms, streams, send, recv, size / 4);
        synchronize(n, streams);
        double start = now();
        for (long long k = 0; k < iterations; k++) all_reduce(n, comms, streams, send, recv, size / 4);
        synchronize(n, streams);
        double seconds = (now() - start) / (double)iterations;
        double algbw = (double)size / seconds;
        printf("PERFPLAY_RESULT kind='all_reduce fp32' achieved=%.6e bytes=%zu iterations=%lld seconds=%.6e "
               "algbw=%.6e\n", algbw * 2.0 * (n - 1) / n, size, iterations, seconds, algbw);
        fflush(stdout);
        for (int i = 0; i < n; i++) {
            CHECK_CUDA(cudaSetDevice(i));
            CHECK_CUDA(cudaFree(send[i]));
            CHECK_CUDA(cudaFree(recv[i]));
        }
    }
    for (int i = 0; i < n; i++) {
        CHECK_CUDA(cudaSetDevice(i));
        CHECK_CUDA(cudaStreamDestroy(streams[i]));
        CHECK_NCCL(ncclCommDestroy(comms[i]));
    }
    return 0;
}
