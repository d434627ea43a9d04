// Batch exp, bit-identical to the C library's exp (posfuse_exp.h). posfuse's own code; the
// method and its constants are those of the exp in glibc >= 2.28 and ARM's optimized-routines
// (Szabolcs Nagy, 2018): exp(x) = 2^(k/N) · exp(r), N = 128, x = k·ln2/N + r, |r| <= ln2/(2N),
// exp(r) − 1 by a degree-5 polynomial, 2^(k/N) from a table of H[k]·(1 + T[k]). The operation
// order (which products are fused) follows the FMA variant's machine code (glibc 2.36, x86-64,
// read with objdump); docs/refine.md ("The 95 % radius: exp in batches") says why posfuse needs the same bits.
#include "posfuse_exp.h"
#include <math.h>
#include <stdint.h>
#include <string.h>
#pragma STDC FP_CONTRACT OFF

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <immintrin.h>

// 2^(k/128) = H[k]·(1 + T[k]): tab[2k] = bits of T[k] (the relative error of H[k], rounded),
// tab[2k+1] = bits of H[k] (2^(k/128) rounded) minus k << 45. Generated from that definition by
// scripts/exp-table.py (60-digit decimal arithmetic); the test FastExpTests checks every entry
// through the exp it gives.
static const uint64_t tab[256] = {
    0x0000000000000000ULL, 0x3ff0000000000000ULL, 0x3c9b3b4f1a88bf6eULL, 0x3feff63da9fb3335ULL,
    0xbc7160139cd8dc5dULL, 0x3fefec9a3e778061ULL, 0xbc905e7a108766d1ULL, 0x3fefe315e86e7f85ULL,
    0x3c8cd2523567f613ULL, 0x3fefd9b0d3158574ULL, 0xbc8bce8023f98efaULL, 0x3fefd06b29ddf6deULL,
    0x3c60f74e61e6c861ULL, 0x3fefc74518759bc8ULL, 0x3c90a3e45b33d399ULL, 0x3fefbe3ecac6f383ULL,
    0x3c979aa65d837b6dULL, 0x3fefb5586cf9890fULL, 0x3c8eb51a92fdeffcULL, 0x3fefac922b7247f7ULL,
    0x3c3ebe3d702f9cd1ULL, 0x3fefa3ec32d3d1a2ULL, 0xbc6a033489906e0bULL, 0x3fef9b66affed31bULL,
    0xbc9556522a2fbd0eULL, 0x3fef9301d0125b51ULL, 0xbc5080ef8c4eea55ULL, 0x3fef8abdc06c31ccULL,
    0xbc91c923b9d5f416ULL, 0x3fef829aaea92de0ULL, 0x3c80d3e3e95c55afULL, 0x3fef7a98c8a58e51ULL,
    0xbc801b15eaa59348ULL, 0x3fef72b83c7d517bULL, 0xbc8f1ff055de323dULL, 0x3fef6af9388c8deaULL,
    0x3c8b898c3f1353bfULL, 0x3fef635beb6fcb75ULL, 0xbc96d99c7611eb26ULL, 0x3fef5be084045cd4ULL,
    0x3c9aecf73e3a2f60ULL, 0x3fef54873168b9aaULL, 0xbc8fe782cb86389dULL, 0x3fef4d5022fcd91dULL,
    0x3c8a6f4144a6c38dULL, 0x3fef463b88628cd6ULL, 0x3c807a05b0e4047dULL, 0x3fef3f49917ddc96ULL,
    0x3c968efde3a8a894ULL, 0x3fef387a6e756238ULL, 0x3c875e18f274487dULL, 0x3fef31ce4fb2a63fULL,
    0x3c80472b981fe7f2ULL, 0x3fef2b4565e27cddULL, 0xbc96b87b3f71085eULL, 0x3fef24dfe1f56381ULL,
    0x3c82f7e16d09ab31ULL, 0x3fef1e9df51fdee1ULL, 0xbc3d219b1a6fbffaULL, 0x3fef187fd0dad990ULL,
    0x3c8b3782720c0ab4ULL, 0x3fef1285a6e4030bULL, 0x3c6e149289cecb8fULL, 0x3fef0cafa93e2f56ULL,
    0x3c834d754db0abb6ULL, 0x3fef06fe0a31b715ULL, 0x3c864201e2ac744cULL, 0x3fef0170fc4cd831ULL,
    0x3c8fdd395dd3f84aULL, 0x3feefc08b26416ffULL, 0xbc86a3803b8e5b04ULL, 0x3feef6c55f929ff1ULL,
    0xbc924aedcc4b5068ULL, 0x3feef1a7373aa9cbULL, 0xbc9907f81b512d8eULL, 0x3feeecae6d05d866ULL,
    0xbc71d1e83e9436d2ULL, 0x3feee7db34e59ff7ULL, 0xbc991919b3ce1b15ULL, 0x3feee32dc313a8e5ULL,
    0x3c859f48a72a4c6dULL, 0x3feedea64c123422ULL, 0xbc9312607a28698aULL, 0x3feeda4504ac801cULL,
    0xbc58a78f4817895bULL, 0x3feed60a21f72e2aULL, 0xbc7c2c9b67499a1bULL, 0x3feed1f5d950a897ULL,
    0x3c4363ed60c2ac11ULL, 0x3feece086061892dULL, 0x3c9666093b0664efULL, 0x3feeca41ed1d0057ULL,
    0x3c6ecce1daa10379ULL, 0x3feec6a2b5c13cd0ULL, 0x3c93ff8e3f0f1230ULL, 0x3feec32af0d7d3deULL,
    0x3c7690cebb7aafb0ULL, 0x3feebfdad5362a27ULL, 0x3c931dbdeb54e077ULL, 0x3feebcb299fddd0dULL,
    0xbc8f94340071a38eULL, 0x3feeb9b2769d2ca7ULL, 0xbc87deccdc93a349ULL, 0x3feeb6daa2cf6642ULL,
    0xbc78dec6bd0f385fULL, 0x3feeb42b569d4f82ULL, 0xbc861246ec7b5cf6ULL, 0x3feeb1a4ca5d920fULL,
    0x3c93350518fdd78eULL, 0x3feeaf4736b527daULL, 0x3c7b98b72f8a9b05ULL, 0x3feead12d497c7fdULL,
    0x3c9063e1e21c5409ULL, 0x3feeab07dd485429ULL, 0x3c34c7855019c6eaULL, 0x3feea9268a5946b7ULL,
    0x3c9432e62b64c035ULL, 0x3feea76f15ad2148ULL, 0xbc8ce44a6199769fULL, 0x3feea5e1b976dc09ULL,
    0xbc8c33c53bef4da8ULL, 0x3feea47eb03a5585ULL, 0xbc845378892be9aeULL, 0x3feea34634ccc320ULL,
    0xbc93cedd78565858ULL, 0x3feea23882552225ULL, 0x3c5710aa807e1964ULL, 0x3feea155d44ca973ULL,
    0xbc93b3efbf5e2228ULL, 0x3feea09e667f3bcdULL, 0xbc6a12ad8734b982ULL, 0x3feea012750bdabfULL,
    0xbc6367efb86da9eeULL, 0x3fee9fb23c651a2fULL, 0xbc80dc3d54e08851ULL, 0x3fee9f7df9519484ULL,
    0xbc781f647e5a3ecfULL, 0x3fee9f75e8ec5f74ULL, 0xbc86ee4ac08b7db0ULL, 0x3fee9f9a48a58174ULL,
    0xbc8619321e55e68aULL, 0x3fee9feb564267c9ULL, 0x3c909ccb5e09d4d3ULL, 0x3feea0694fde5d3fULL,
    0xbc7b32dcb94da51dULL, 0x3feea11473eb0187ULL, 0x3c94ecfd5467c06bULL, 0x3feea1ed0130c132ULL,
    0x3c65ebe1abd66c55ULL, 0x3feea2f336cf4e62ULL, 0xbc88a1c52fb3cf42ULL, 0x3feea427543e1a12ULL,
    0xbc9369b6f13b3734ULL, 0x3feea589994cce13ULL, 0xbc805e843a19ff1eULL, 0x3feea71a4623c7adULL,
    0xbc94d450d872576eULL, 0x3feea8d99b4492edULL, 0x3c90ad675b0e8a00ULL, 0x3feeaac7d98a6699ULL,
    0x3c8db72fc1f0eab4ULL, 0x3feeace5422aa0dbULL, 0xbc65b6609cc5e7ffULL, 0x3feeaf3216b5448cULL,
    0x3c7bf68359f35f44ULL, 0x3feeb1ae99157736ULL, 0xbc93091fa71e3d83ULL, 0x3feeb45b0b91ffc6ULL,
    0xbc5da9b88b6c1e29ULL, 0x3feeb737b0cdc5e5ULL, 0xbc6c23f97c90b959ULL, 0x3feeba44cbc8520fULL,
    0xbc92434322f4f9aaULL, 0x3feebd829fde4e50ULL, 0xbc85ca6cd7668e4bULL, 0x3feec0f170ca07baULL,
    0x3c71affc2b91ce27ULL, 0x3feec49182a3f090ULL, 0x3c6dd235e10a73bbULL, 0x3feec86319e32323ULL,
    0xbc87c50422622263ULL, 0x3feecc667b5de565ULL, 0x3c8b1c86e3e231d5ULL, 0x3feed09bec4a2d33ULL,
    0xbc91bbd1d3bcbb15ULL, 0x3feed503b23e255dULL, 0x3c90cc319cee31d2ULL, 0x3feed99e1330b358ULL,
    0x3c8469846e735ab3ULL, 0x3feede6b5579fdbfULL, 0xbc82dfcd978e9db4ULL, 0x3feee36bbfd3f37aULL,
    0x3c8c1a7792cb3387ULL, 0x3feee89f995ad3adULL, 0xbc907b8f4ad1d9faULL, 0x3feeee07298db666ULL,
    0xbc55c3d956dcaebaULL, 0x3feef3a2b84f15fbULL, 0xbc90a40e3da6f640ULL, 0x3feef9728de5593aULL,
    0xbc68d6f438ad9334ULL, 0x3feeff76f2fb5e47ULL, 0xbc91eee26b588a35ULL, 0x3fef05b030a1064aULL,
    0x3c74ffd70a5fddcdULL, 0x3fef0c1e904bc1d2ULL, 0xbc91bdfbfa9298acULL, 0x3fef12c25bd71e09ULL,
    0x3c736eae30af0cb3ULL, 0x3fef199bdd85529cULL, 0x3c8ee3325c9ffd94ULL, 0x3fef20ab5fffd07aULL,
    0x3c84e08fd10959acULL, 0x3fef27f12e57d14bULL, 0x3c63cdaf384e1a67ULL, 0x3fef2f6d9406e7b5ULL,
    0x3c676b2c6c921968ULL, 0x3fef3720dcef9069ULL, 0xbc808a1883ccb5d2ULL, 0x3fef3f0b555dc3faULL,
    0xbc8fad5d3ffffa6fULL, 0x3fef472d4a07897cULL, 0xbc900dae3875a949ULL, 0x3fef4f87080d89f2ULL,
    0x3c74a385a63d07a7ULL, 0x3fef5818dcfba487ULL, 0xbc82919e2040220fULL, 0x3fef60e316c98398ULL,
    0x3c8e5a50d5c192acULL, 0x3fef69e603db3285ULL, 0x3c843a59ac016b4bULL, 0x3fef7321f301b460ULL,
    0xbc82d52107b43e1fULL, 0x3fef7c97337b9b5fULL, 0xbc892ab93b470dc9ULL, 0x3fef864614f5a129ULL,
    0x3c74b604603a88d3ULL, 0x3fef902ee78b3ff6ULL, 0x3c83c5ec519d7271ULL, 0x3fef9a51fbc74c83ULL,
    0xbc8ff7128fd391f0ULL, 0x3fefa4afa2a490daULL, 0xbc8dae98e223747dULL, 0x3fefaf482d8e67f1ULL,
    0x3c8ec3bc41aa2008ULL, 0x3fefba1bee615a27ULL, 0x3c842b94c3a9eb32ULL, 0x3fefc52b376bba97ULL,
    0x3c8a64a931d185eeULL, 0x3fefd0765b6e4540ULL, 0xbc8e37bae43be3edULL, 0x3fefdbfdad9cbe14ULL,
    0x3c77893b4d91cd9dULL, 0x3fefe7c1819e90d8ULL, 0x3c5305c14160cc89ULL, 0x3feff3c22b8f71f1ULL,
};

__attribute__((target("avx2,fma")))
static void exp4(const double *x, double *y, long n) {
    const __m256d invln2n = _mm256_set1_pd(0x1.71547652b82fep+7);      // N / ln 2
    const __m256d shift = _mm256_set1_pd(0x1.8p52);                     // rounds k·… to an integer in the low bits
    const __m256d negln2hi = _mm256_set1_pd(-0x1.62e42fefa0000p-8);     // −ln2/N, high part
    const __m256d negln2lo = _mm256_set1_pd(-0x1.cf79abc9e3b3ap-47);    // −ln2/N, low part
    const __m256d c2 = _mm256_set1_pd(0x1.ffffffffffdbdp-2), c3 = _mm256_set1_pd(0x1.555555555543cp-3);
    const __m256d c4 = _mm256_set1_pd(0x1.55555cf172b91p-5), c5 = _mm256_set1_pd(0x1.1111167a4d017p-7);
    const __m256i m127 = _mm256_set1_epi64x(127), m7ff = _mm256_set1_epi64x(0x7ff);
    // The main range: biased exponent of |x| in [0x3c9, 0x407], i.e. 2^-54 <= |x| < 512.
    const __m256i below = _mm256_set1_epi64x(0x3c9 - 1), above = _mm256_set1_epi64x(0x408);
    const double *t = (const double *)tab;
    long i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d v = _mm256_loadu_pd(x + i);
        __m256i top = _mm256_and_si256(_mm256_srli_epi64(_mm256_castpd_si256(v), 52), m7ff);
        int inRange = _mm256_movemask_pd(_mm256_castsi256_pd(
            _mm256_and_si256(_mm256_cmpgt_epi64(top, below), _mm256_cmpgt_epi64(above, top))));
        __m256d kd = _mm256_fmadd_pd(v, invln2n, shift);                // k in kd's low bits
        __m256i ki = _mm256_castpd_si256(kd);
        kd = _mm256_sub_pd(kd, shift);
        __m256d r = _mm256_fmadd_pd(kd, negln2hi, v);                   // r = x − k·ln2/N
        r = _mm256_fmadd_pd(kd, negln2lo, r);
        __m256i idx = _mm256_slli_epi64(_mm256_and_si256(ki, m127), 1);
        __m256d tail = _mm256_i64gather_pd(t, idx, 8);
        __m256i sbits = _mm256_add_epi64(_mm256_castpd_si256(_mm256_i64gather_pd(t + 1, idx, 8)),
                                         _mm256_slli_epi64(ki, 45));   // H[k mod N]·2^(k div N)
        __m256d p1 = _mm256_fmadd_pd(r, c3, c2);
        __m256d a = _mm256_add_pd(r, tail);
        __m256d r2 = _mm256_mul_pd(r, r);
        __m256d p2 = _mm256_fmadd_pd(r, c5, c4);
        __m256d b = _mm256_fmadd_pd(p1, r2, a);
        __m256d tmp = _mm256_fmadd_pd(_mm256_mul_pd(r2, r2), p2, b);   // T + exp(r) − 1
        __m256d scale = _mm256_castsi256_pd(sbits);
        __m256d out = _mm256_fmadd_pd(scale, tmp, scale);
        if (inRange != 0xf) {   // the C library for lanes outside the main range (from v: x may be y)
            double in[4], res[4];
            _mm256_storeu_pd(in, v); _mm256_storeu_pd(res, out);
            for (int j = 0; j < 4; j++) if (!(inRange & (1 << j))) res[j] = exp(in[j]);
            out = _mm256_loadu_pd(res);
        }
        _mm256_storeu_pd(y + i, out);
    }
    for (; i < n; i++) y[i] = exp(x[i]);
}

static int vectorSupported(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
static void exp4(const double *x, double *y, long n) { for (long i = 0; i < n; i++) y[i] = exp(x[i]); }
static int vectorSupported(void) { return 0; }
#endif

// 0 unknown, 1 four-wide, 2 exp() only. Two threads may both run the check: same answer.
static int mode = 0;

static int decide(void) {
    if (!vectorSupported()) return 2;
    // Every table index, both signs, the range ends, and values spread over [−745, 710].
    enum { M = 2048 };
    double x[M], y[M];
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < M; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        double u = (double)(s >> 11) * 0x1p-53;
        switch (i % 4) {
        case 0: x[i] = -745 * u; break;
        case 1: x[i] = 710 * u; break;
        case 2: x[i] = (i / 4 % 128) * 0x1.62e42fefa39efp-8 * (i % 8 < 4 ? -1 : 1) + (u - 0.5) * 0x1p-9; break;
        default: x[i] = (u - 0.5) * 16; break;
        }
    }
    x[0] = 0x1p-54; x[1] = -0x1p-54; x[2] = 511.9999; x[3] = -511.9999; x[4] = 512; x[5] = -512;
    exp4(x, y, M);
    for (int i = 0; i < M; i++) {
        double e = exp(x[i]);
        if (memcmp(&e, &y[i], sizeof e) != 0) return 2;
    }
    return 1;
}

int posfuse_exp_batch_is_vectorized(void) {
    int m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);
    if (m == 0) { m = decide(); __atomic_store_n(&mode, m, __ATOMIC_RELEASE); }
    return m == 1;
}

void posfuse_exp_batch(const double *x, double *y, long n) {
    if (posfuse_exp_batch_is_vectorized()) exp4(x, y, n);
    else for (long i = 0; i < n; i++) y[i] = exp(x[i]);
}

// The residual's per-node values written once: x_i = (−r·r)/(2 h_i), and after exp
// t_i = r/h_i · e_i where e_i > 0 (else 0), for i in [from, n): the whole of the portable path
// and the tail of the four-wide one.
static void exponents1(const double *h, long from, long n, double r, double *x) {
    for (long i = from; i < n; i++) x[i] = (-r * r) / (2 * h[i]);
}
static void slopes1(const double *h, long from, long n, double r, const double *e, double *t) {
    for (long i = from; i < n; i++) t[i] = e[i] > 0 ? r / h[i] * e[i] : 0;
}

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
// The same, four at a time (the same IEEE operations per lane).
__attribute__((target("avx2,fma")))
static void exponents4(const double *h, long n, double r, double *x) {
    const __m256d num = _mm256_set1_pd(-r * r), two = _mm256_set1_pd(2);
    long i = 0;
    for (; i + 4 <= n; i += 4) _mm256_storeu_pd(x + i, _mm256_div_pd(num, _mm256_mul_pd(two, _mm256_loadu_pd(h + i))));
    exponents1(h, i, n, r, x);
}
__attribute__((target("avx2,fma")))
static void slopes4(const double *h, long n, double r, const double *e, double *t) {
    const __m256d rr = _mm256_set1_pd(r), zero = _mm256_setzero_pd();
    long i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d ev = _mm256_loadu_pd(e + i);
        __m256d v = _mm256_mul_pd(_mm256_div_pd(rr, _mm256_loadu_pd(h + i)), ev);
        _mm256_storeu_pd(t + i, _mm256_and_pd(v, _mm256_cmp_pd(ev, zero, _CMP_GT_OQ)));
    }
    slopes1(h, i, n, r, e, t);
}
#endif

void posfuse_radius_sums(const double *h, long n, double r, double *acc, double *dacc) {
    // Exponents, exp of all of them, the products r/h·e, then the two sums in node order. The
    // division and the product are IEEE operations in any width; the sums stay scalar.
    enum { B = 128 };
    double x[B], t[B];
    double a = 0, d = 0;
    int wide = posfuse_exp_batch_is_vectorized();
    for (long i0 = 0; i0 < n; i0 += B) {
        long m = n - i0 < B ? n - i0 : B;
        const double *hh = h + i0;
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
        if (wide) {
            exponents4(hh, m, r, x);
            exp4(x, x, m);
            slopes4(hh, m, r, x, t);
        } else
#endif
        {
            (void)wide;
            exponents1(hh, 0, m, r, x);
            posfuse_exp_batch(x, x, m);
            slopes1(hh, 0, m, r, x, t);
        }
        for (long i = 0; i < m; i++) {
            a += 1 - x[i];
            if (x[i] > 0) d += t[i];
        }
    }
    *acc = a; *dacc = d;
}
