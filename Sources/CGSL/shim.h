#ifndef CGSL_SHIM_H
#define CGSL_SHIM_H
#include <gsl/gsl_errno.h>
#include <gsl/gsl_math.h>
#include <gsl/gsl_vector.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_statistics_double.h>
#include <gsl/gsl_sort_double.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_multimin.h>

/* Swift 6 strict concurrency: GSL's `GSL_VAR const T *name;` globals import as
   mutable vars, which Swift 6 mode rejects. Expose them through accessors. */
static inline const gsl_rng_type *cgsl_rng_mt19937(void) { return gsl_rng_mt19937; }
static inline const gsl_multifit_nlinear_type *cgsl_multifit_nlinear_trust(void) { return gsl_multifit_nlinear_trust; }
static inline const gsl_multifit_nlinear_trs *cgsl_multifit_nlinear_trs_lm(void) { return gsl_multifit_nlinear_trs_lm; }
static inline const gsl_multifit_nlinear_trs *cgsl_multifit_nlinear_trs_lmaccel(void) { return gsl_multifit_nlinear_trs_lmaccel; }
static inline const gsl_multimin_fminimizer_type *cgsl_multimin_fminimizer_nmsimplex2(void) { return gsl_multimin_fminimizer_nmsimplex2; }
#endif
