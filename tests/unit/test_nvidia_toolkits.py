"""nvidia's base toolkits (vendor/nvidia/base/toolkits/: cuBLAS gemm, NCCL allreduce), which need a GPU to run:
their toolkit.yaml loads and resolves in the plan, their build and run argv are what nvcc and the rank get, and their
sources parse as C (cc -fsyntax-only) against the CUDA, cuBLAS and NCCL prototypes they call, written out here as the
libraries' headers declare them."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from case_runners.core.paths import project_root
from case_runners.plan.run_plan import make_plan
from case_runners.vendors.toolkits import load_toolkit
from process_helpers import SHORT_S

ROOT = project_root()

# The declarations the sources use, as cuda_runtime_api.h, library_types.h, cublas_api.h and nccl.h give them
# (CUDA 12/13, NCCL 2): a call with a wrong argument count or type fails the check.
HEADERS = {
    "library_types.h": """
        typedef enum cudaDataType_t { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 } cudaDataType;
        typedef cudaDataType cudaDataType_t;
    """,
    "cuda_runtime.h": """
        #include <stddef.h>
        #include <library_types.h>
        typedef enum cudaError { cudaSuccess = 0 } cudaError_t;
        typedef enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1 } cudaMemcpyKind;
        typedef struct CUevent_st *cudaEvent_t;
        typedef struct CUstream_st *cudaStream_t;
        const char *cudaGetErrorString(cudaError_t error);
        cudaError_t cudaSetDevice(int device);
        cudaError_t cudaGetDeviceCount(int *count);
        cudaError_t cudaDeviceSynchronize(void);
        cudaError_t cudaMalloc(void **devPtr, size_t size);
        cudaError_t cudaFree(void *devPtr);
        cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
        cudaError_t cudaMemset(void *devPtr, int value, size_t count);
        cudaError_t cudaEventCreate(cudaEvent_t *event);
        cudaError_t cudaEventDestroy(cudaEvent_t event);
        cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
        cudaError_t cudaEventSynchronize(cudaEvent_t event);
        cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
        cudaError_t cudaStreamCreate(cudaStream_t *pStream);
        cudaError_t cudaStreamDestroy(cudaStream_t stream);
        cudaError_t cudaStreamSynchronize(cudaStream_t stream);
    """,
    "cublas_v2.h": """
        #include <cuda_runtime.h>
        typedef struct cublasContext *cublasHandle_t;
        typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;
        typedef enum { CUBLAS_OP_N = 0 } cublasOperation_t;
        typedef enum { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 } cublasComputeType_t;
        typedef enum { CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99 } cublasGemmAlgo_t;
        cublasStatus_t cublasCreate(cublasHandle_t *handle);
        cublasStatus_t cublasDestroy(cublasHandle_t handle);
        cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                    int n, int k, const void *alpha, const void *A, cudaDataType Atype, int lda,
                                    const void *B, cudaDataType Btype, int ldb, const void *beta, void *C,
                                    cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                    cublasGemmAlgo_t algo);
    """,
    "nccl.h": """
        #include <cuda_runtime.h>
        typedef struct ncclComm *ncclComm_t;
        typedef enum { ncclSuccess = 0 } ncclResult_t;
        typedef enum { ncclFloat = 7 } ncclDataType_t;
        typedef enum { ncclSum = 0 } ncclRedOp_t;
        const char *ncclGetErrorString(ncclResult_t result);
        ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist);
        ncclResult_t ncclCommDestroy(ncclComm_t comm);
        ncclResult_t ncclGroupStart(void);
        ncclResult_t ncclGroupEnd(void);
        ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
    """,
}


def test_the_build_and_run_argv_are_nvcc_and_the_programs_flagperf_shapes(tmp_path):
    gemm = load_toolkit(ROOT, "nvidia", "gemm")
    assert gemm.build_argv(tmp_path) == ["nvcc", "-O3", "-o", f"{tmp_path}/gemm", "gemm.cu", "-lcublas"]
    assert gemm.run_argv(tmp_path, device=3, rank=3, local_rank=3, world_size=8, nproc=8) == [
        f"{tmp_path}/gemm", "3", "10", "1000", "8192", "8192", "8192", "bf16", "fp16", "tf32"]
    assert (gemm.unit, gemm.peak, gemm.runs_on) == ("FLOP/s", "peak_flops", "rank")
    allreduce = load_toolkit(ROOT, "nvidia", "allreduce")
    assert allreduce.build_argv(tmp_path) == ["nvcc", "-O3", "-o", f"{tmp_path}/allreduce", "allreduce.cu", "-lnccl"]
    assert allreduce.run_argv(tmp_path, device=0, rank=0, local_rank=0, world_size=8, nproc=8) == [
        f"{tmp_path}/allreduce", "20", "200", "268435456", "4294967296"]
    assert (allreduce.unit, allreduce.peak, allreduce.runs_on) == ("B/s", "interconnect_bytes_s", "node")


def test_the_plan_resolves_them_on_h100_and_refuses_the_node_toolkit_across_nodes():
    def errors(*cases: dict) -> list[str]:
        return make_plan({"task": "base", "vendor": "nvidia", "cases": list(cases)}, check=True)["errors"]

    assert errors({"case": "gemm", "hardware": "H100", "overrides": {"mode": "both", "precisions": ["bf16"]}},
                  {"case": "allreduce", "hardware": "H100", "nproc": 8, "overrides": {"mode": "toolkit"}}) == []
    (error,) = errors({"case": "allreduce", "hardware": "H100", "nnodes": 2, "nproc": 8,
                       "overrides": {"mode": "toolkit"}})
    assert "runs once per node for the node's devices (runs_on: node): run it on one node, got nnodes 2" in error
    (error,) = errors({"case": "memory_bandwidth", "hardware": "H100", "overrides": {"mode": "toolkit"}})
    assert error.startswith("vendor/nvidia/base/toolkits/memory_bandwidth/toolkit.yaml: is missing") and \
        "the toolkits of nvidia: allreduce, gemm" in error


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs the host's C compiler (CI installs it: .ci/)")
@pytest.mark.parametrize("benchmark, source", [("gemm", "gemm.cu"), ("allreduce", "allreduce.cu")])
def test_each_source_parses_as_c_against_the_libraries_prototypes(tmp_path, benchmark, source):
    for name, text in HEADERS.items():
        guard = name.replace(".", "_").upper()
        (tmp_path / name).write_text(f"#ifndef {guard}\n#define {guard}\n" +
                                     "\n".join(line.strip() for line in text.splitlines()) + "\n#endif\n")
    path = ROOT / "vendor" / "nvidia" / "base" / "toolkits" / benchmark / source
    done = subprocess.run(["cc", "-x", "c", "-std=gnu11", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                           "-I", str(tmp_path), str(path)],
                          capture_output=True, text=True, check=False, timeout=SHORT_S)
    assert done.returncode == 0, done.stderr
    broken = tmp_path / source
    broken.write_text(path.read_text().replace("&beta, c, p->type, m,", "&beta, c, m,")
                      .replace("ncclSum, comms[i], streams[i]", "ncclSum, streams[i]"))
    done = subprocess.run(["cc", "-x", "c", "-std=gnu11", "-fsyntax-only", "-Werror", "-I", str(tmp_path), str(broken)],
                          capture_output=True, text=True, check=False, timeout=SHORT_S)
    assert done.returncode != 0 and "argument" in done.stderr, "a call that drops an argument is caught"
