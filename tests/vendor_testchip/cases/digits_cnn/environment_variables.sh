# The test chip's tuning for digits_cnn, sourced before its ranks start (host runtime and container alike).
export TESTCHIP_KERNEL_CACHE=/tmp/testchip-kernels
