/* nvidia's gemm toolkit (vendors/toolkits.py): dense matmul FLOP/s through cuBLAS (cublasGemmEx, tensor-op
 * algorithms), per precision, on one GPU; FLOPs = 2*M*N*K per call, as perfplay's torch gemm counts them.
 *
 *   usage: gemm DEVICE WARMUP ITERATIONS M N K PRECISION [PRECISION...]    (PRECISION: bf16, fp16, tf32)
 *
 * Per precision: A (MxK), B (KxN) and C (MxN) in column-major order on the device, A and B filled with small
 * exact values; WARMUP untimed calls, then ITERATIONS calls between two CUDA events on the default stream; one
 * result line each (seconds = per call):
 *
 *   PERFPLAY_RESULT kind=bf16 achieved=<FLOP/s> size=MxNxK iterations=<n> seconds=<s>
 *
 * bf16 and fp16 inputs accumulate in fp32 (CUBLAS_COMPUTE_32F), tf32 is fp32 data with CUBLAS_COMPUTE_32F_FAST_TF32.
 * Written in the C subset that nvcc compiles as C++ (tests/unit/test_nvidia_toolkits.py checks it parses as C).
 * Exits 1 on bad arguments, 2 on a CUDA or cuBLAS error (named on stderr).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#define CHECK_CUDA(call)                                                                   \
    do {                                                                                   \
        cudaError_t status_ = (call);                                                      \
        if (status_ != cudaSuccess) {                                                      \
            fprintf(stderr, "gemm: %s: %s\n", #call, cudaGetErrorString(status_));         \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)
#define CHECK_CUBLAS(call)                                                                 \
    do {                                                                                   \
        cublasStatus_t status_ = (call);                                                   \
        if (status_ != CUBLAS_STATUS_SUCCESS) {                                            \
            fprintf(stderr, "gemm: %s: cuBLAS status %d\n", #call, (int)status_);         \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

typedef struct {
    const char *name;
    cudaDataType_t type;
    cublasComputeType_t compute;
    size_t bytes;                 /* per element */
    unsigned int values[4];       /* bit patterns of 1, 0.5, 0.25, -0.5 in the element type */
} Precision;

static const Precision PRECISIONS[] = {
    {"bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, {0x3F80u, 0x3F00u, 0x3E80u, 0xBF00u}},
    {"fp16", CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, {0x3C00u, 0x3800u, 0x3400u, 0xB800u}},
    {"tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, {0x3F800000u, 0x3F000000u, 0x3E800000u, 0xBF000000u}},
};
static const int COUNT = (int)(sizeof(PRECISIONS) / sizeof(PRECISIONS[0]));

static long parse(const char *text) {
    char *end = NULL;
    long value = strtol(text, &end, 10);
    return (*text != '\0' && *end == '\0' && value >= 0) ? value : -1; /* -1: not an integer >= 0 */
}

/* A device buffer of `elements` elements of p, filled with p's values in turn. */
static void *filled(const Precision *p, size_t elements) {
    unsigned char *host = (unsigned char *)malloc(elements * p->bytes);
    void *device = NULL;
    if (host == NULL) {
        fprintf(stderr, "gemm: cannot allocate %zu bytes of host memory\n", elements * p->bytes);
        exit(2);
    }
    for (size_t i = 0; i < elements; i++) {
        unsigned int bits = p->values[i % 4];
        memcpy(host + i * p->bytes, &bits, p->bytes); /* little-endian: the low bytes are the element's */
    }
    CHECK_CUDA(cudaMalloc(&device, elements * p->bytes));
    CHECK_CUDA(cudaMemcpy(device, host, elements * p->bytes, cudaMemcpyHostToDevice));
    free(host);
    return device;
}

static void measure(cublasHandle_t handle, const Precision *p, int m, int n, int k, long warmup, long iterations) {
    void *a = filled(p, (size_t)m * k), *b = filled(p, (size_t)k * n), *c = NULL;
    const float alpha = 1.0f, beta = 0.0f;
    cudaEvent_t start, stop;
    float ms = 0.0f;
    CHECK_CUDA(cudaMalloc(&c, (size_t)m * n * p->bytes));
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    for (long i = 0; i < warmup; i++) {
        CHECK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a, p->type, m, b, p->type, k,
                                  &beta, c, p->type, m, p->compute, CUBLAS_GEMM_DEFAULT_TENSOR_OP));
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaEventRecord(start, 0));
    for (long i = 0; i < iterations; i++) {
        CHECK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a, p->type, m, b, p->type, k,
                                  &beta, c, p->type, m, p->compute, CUBLAS_GEMM_DEFAULT_TENSOR_OP));
    }
    CHECK_CUDA(cudaEventRecord(stop, 0));
    CHECK_CUDA(cudaEventSynchronize(stop));
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    double seconds = (double)ms / 1000.0 / (double)iterations;
    printf("PERFPLAY_RESULT kind=%s achieved=%.6e size=%dx%dx%d iterations=%ld seconds=%.6e\n", p->name,
           2.0 * m * n * k / seconds, m, n, k, iterations, seconds);
    fflush(stdout);
    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(stop));
    CHECK_CUDA(cudaFree(a));
    CHECK_CUDA(cudaFree(b));
    CHECK_CUDA(cudaFree(c));
}

int main(int argc, char **argv) {
    if (argc < 8) {
        fprintf(stderr, "usage: gemm DEVICE WARMUP ITERATIONS M N K PRECISION [PRECISION...] (bf16, fp16, tf32)\n");
        return 1;
    }
    long device = parse(argv[1]), warmup = parse(argv[2]), iterations = parse(argv[3]);
    long m = parse(argv[4]), n = parse(argv[5]), k = parse(argv[6]);
    if (device < 0 || warmup < 0 || iterations < 1 || m < 1 || n < 1 || k < 1 || m > 65536 || n > 65536 || k > 65536) {
        fprintf(stderr, "gemm: DEVICE and WARMUP are integers >= 0, ITERATIONS >= 1, M N K in 1..65536\n");
        return 1;
    }
    for (int arg = 7; arg < argc; arg++) {
        int known = 0;
        for (int i = 0; i < COUNT; i++) known |= strcmp(argv[arg], PRECISIONS[i].name) == 0;
        if (!known) {
            fprintf(stderr, "gemm: unknown precision '%s' (bf16, fp16, tf32)\n", argv[arg]);
            return 1;
        }
    }
    cublasHandle_t handle;
    CHECK_CUDA(cudaSetDevice((int)device));
    CHECK_CUBLAS(cublasCreate(&handle));
    for (int arg = 7; arg < argc; arg++) {
        for (int i = 0; i < COUNT; i++) {
            if (strcmp(argv[arg], PRECISIONS[i].name) == 0) {
                measure(handle, &PRECISIONS[i], (int)m, (int)n, (int)k, warmup, iterations);
            }
        }
    }
    CHECK_CUBLAS(cublasDestroy(handle));
    return 0;
}
