/* The test chip's memory_bandwidth toolkit: STREAM's copy (a = b) and triad (a = b + s*c) over arrays of doubles
 * past the host's caches, each size's kernels timed with clock_gettime(CLOCK_MONOTONIC) over `iterations` calls
 * after one untimed call, each figure printed as perfplay's result line (vendors/toolkits.py):
 *
 *   PERFPLAY_RESULT kind=copy achieved=<B/s> bytes=<bytes of one array> iterations=<n> seconds=<per call>
 *
 * bytes moved per call: copy 2 x the array (b read, a written), triad 3 x (b and c read, a written), STREAM's
 * convention. Usage: stream ITERATIONS BYTES [BYTES...]. Exits 1 on bad arguments or a wrong result, 2 when the
 * arrays cannot be allocated.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const double SCALAR = 3.0;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void copy(double *restrict a, const double *restrict b, size_t n) {
    for (size_t i = 0; i < n; i++) a[i] = b[i];
}

static void triad(double *restrict a, const double *restrict b, const double *restrict c, size_t n) {
    for (size_t i = 0; i < n; i++) a[i] = b[i] + SCALAR * c[i];
}

static int parse(const char *text, long long *out) {
    char *end;
    errno = 0;
    *out = strtoll(text, &end, 10);
    return errno == 0 && *end == '\0' && *out > 0;
}

static void report(const char *kind, size_t bytes, int moved, long long iterations, double seconds) {
    double per_call = seconds / (double)iterations;
    printf("PERFPLAY_RESULT kind=%s achieved=%.6e bytes=%zu iterations=%lld seconds=%.6e\n", kind,
           (double)moved * (double)bytes / per_call, bytes, iterations, per_call);
    fflush(stdout);
}

int main(int argc, char **argv) {
    long long iterations, size;
    if (argc < 3 || !parse(argv[1], &iterations)) {
        fprintf(stderr, "usage: %s ITERATIONS BYTES [BYTES...] (positive integers)\n", argv[0]);
        return 1;
    }
    for (int arg = 2; arg < argc; arg++) {
        if (!parse(argv[arg], &size) || size % (long long)sizeof(double)) {
            fprintf(stderr, "%s: BYTES must be a positive multiple of %zu, not '%s'\n", argv[0], sizeof(double),
                    argv[arg]);
            return 1;
        }
        size_t n = (size_t)size / sizeof(double);
        double *a = malloc((size_t)size), *b = malloc((size_t)size), *c = malloc((size_t)size);
        if (!a || !b || !c) {
            fprintf(stderr, "%s: cannot allocate three arrays of %lld bytes\n", argv[0], size);
            return 2;
        }
        for (size_t i = 0; i < n; i++) {  /* every page touched before the timing */
            a[i] = 0.0;
            b[i] = 1.0;
            c[i] = 2.0;
        }
        copy(a, b, n);
        double start = now();
        for (long long k = 0; k < iterations; k++) copy(a, b, n);
        double copy_s = now() - start;
        int ok = a[0] == 1.0 && a[n - 1] == 1.0;
        triad(a, b, c, n);
        start = now();
        for (long long k = 0; k < iterations; k++) triad(a, b, c, n);
        double triad_s = now() - start;
        ok = ok && a[0] == 1.0 + SCALAR * 2.0 && a[n / 2] == a[0] && a[n - 1] == a[0];
        free(a);
        free(b);
        free(c);
        if (!ok) {
            fprintf(stderr, "%s: the arrays do not hold what the kernels wrote\n", argv[0]);
            return 1;
        }
        report("copy", (size_t)size, 2, iterations, copy_s);
        report("triad", (size_t)size, 3, iterations, triad_s);
    }
    return 0;
}
