/// exp(x) for x ≤ 0, four lanes at a time: the particle filter's weight pass (exp of every
/// particle's shifted log weight) without a libm call per particle.
///
/// Why hand-written: glibc's scalar `exp` was 13–21 % of a 100k-particle step (the `pf`
/// benchmark) and neither Foundation, swift-numerics nor GSL offers a vector exp. The method is
/// the textbook one (Cody & Waite range reduction, as in fdlibm's `e_exp.c`): x = k ln 2 + r,
/// |r| ≤ ln 2 / 2, with k from the 1.5·2⁵² rounding trick (its low mantissa bits are k, which
/// also builds 2ᵏ without a float-to-int conversion), ln 2 split into a 32-bit head and a tail so
/// k·ln2_hi is exact; exp(r) by its Taylor polynomial to degree 13 (truncation < 4.2e-18
/// relative, below half an ulp), Horner. Accuracy: within 1 ulp of glibc over [−708, 0] (measured on 220,000 seeded arguments, test bound 2 ulp);
/// lanes below −708 (where 2ᵏ would leave the normal range) return 0 — a weight under 1e-307
/// of the largest one.
@inlinable @inline(__always)
func expNonPositive(_ x: SIMD4<Double>) -> SIMD4<Double> {
    let low = x .< -708
    let xc = x.replacing(with: -708, where: low)
    let magic = SIMD4<Double>(repeating: 0x1.8p52)
    let t = xc * 1.4426950408889634 + magic                    // 1.5·2⁵² + round(x / ln 2)
    let k = t - magic
    let r = (xc - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10
    var p = SIMD4<Double>(repeating: 1.0 / 6227020800)           // 1/13!
    p = p * r + 1.0 / 479001600
    p = p * r + 1.0 / 39916800
    p = p * r + 1.0 / 3628800
    p = p * r + 1.0 / 362880
    p = p * r + 1.0 / 40320
    p = p * r + 1.0 / 5040
    p = p * r + 1.0 / 720
    p = p * r + 1.0 / 120
    p = p * r + 1.0 / 24
    p = p * r + 1.0 / 6
    p = p * r + 0.5
    p = p * r + 1
    p = p * r + 1
    // bits(t) − bits(1.5·2⁵²) = k; (k + 1023) << 52 are the bits of 2ᵏ.
    let kBits = unsafeBitCast(t, to: SIMD4<UInt64>.self) &- 0x4338_0000_0000_0000
    let scale = unsafeBitCast((kBits &+ 1023) &<< 52, to: SIMD4<Double>.self)
    return (p * scale).replacing(with: 0, where: low)
}
