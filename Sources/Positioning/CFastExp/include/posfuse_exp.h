#ifndef POSFUSE_EXP_H
#define POSFUSE_EXP_H

/// y[i] = exp(x[i]) for 0 <= i < n, each the same double as the C library's exp(x[i]).
/// On x86-64 with AVX2 and FMA (the CPUs on which glibc's exp runs its FMA variant) four values
/// are computed at once by the same operations in the same order as that variant (exp.c: Szabolcs
/// Nagy's table method with N = 128, glibc >= 2.28); values outside its main range (|x| < 2^-54,
/// |x| >= 512, NaN, infinities) and every value on other CPUs go to exp() itself. A self-check
/// on first use compares the two on a fixed set of inputs and keeps exp() for everything if any
/// differs (another C library, another contraction of the FMA variant). x and y may alias.
void posfuse_exp_batch(const double *x, double *y, long n);

/// The sums of the 95 % radius's residual (Covariance2.circularRadius) over the nodes h[0..n):
/// with e_i = exp((-r * r) / (2 * h_i)), *acc = sum of (1 - e_i) and *dacc = sum of r / h_i * e_i
/// over the nodes with e_i > 0, each sum taken in node order from +0 with the operations written
/// here (no fused multiply-add), so the results are the doubles the same scalar loop gives; the
/// exponents, exp and the products are computed four at a time (posfuse_exp_batch's path).
void posfuse_radius_sums(const double *h, long n, double r, double *acc, double *dacc);

/// 1 when posfuse_exp_batch uses the four-wide path on this machine, else 0.
int posfuse_exp_batch_is_vectorized(void);

#endif
