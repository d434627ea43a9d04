import CFastExp
import Foundation
import Testing

/// `posfuse_exp_batch` (Sources/Positioning/CFastExp): exp over an array that must give the C
/// library's exp bit for bit (the 95 % radius depends on it: `CovarianceRadiusTests`). The
/// reference is Foundation's `exp`, the same C library function, called one value at a time.
@Suite struct FastExpTests {
    /// Seeded inputs over every range the four-wide path and its fallback see: the radius's
    /// exponents (−r²/(2h) ∈ [−745, 0]), both signs up to overflow, each of the 128 table slots
    /// with values just beside its knot, the range ends (|x| = 2^−54, 512), tiny, huge, ±0, ±∞,
    /// NaN; in place and into another array; lengths that are not a multiple of four.
    @Test func batchIsBitIdenticalToExp() {
        var state: UInt64 = 0x2545F4914F6CDD1D
        func next() -> UInt64 { state ^= state << 13; state ^= state >> 7; state ^= state << 17; return state }
        func uniform() -> Double { Double(next() >> 11) * 0x1p-53 }
        let ln2N = M_LN2 / 128
        var x: [Double] = [0, -0.0, .infinity, -.infinity, .nan, 0x1p-54, -0x1p-54, 0x1.fffffffffffffp-55,
                           511.99999999999994, -511.99999999999994, 512, -512, 709.78, -745.1, 1e-300, -1e300]
        for k in -128..<128 { for d in [-1e-9, 0, 1e-9] { x.append(Double(k) * ln2N + d) } }
        for i in 0..<1_000_000 {
            switch i % 5 {
            case 0: x.append(-745 * uniform())
            case 1: x.append(-8 * uniform())
            case 2: x.append((uniform() - 0.5) * 1500)
            case 3: x.append(Double(bitPattern: next()))
            default: x.append(-exp(40 * uniform() - 30))
            }
        }
        for length in [x.count, 7, 3] {
            let input = Array(x.prefix(length))
            var out = [Double](repeating: 0, count: length)
            input.withUnsafeBufferPointer { i in out.withUnsafeMutableBufferPointer { o in posfuse_exp_batch(i.baseAddress!, o.baseAddress!, length) } }
            var inPlace = input
            inPlace.withUnsafeMutableBufferPointer { b in posfuse_exp_batch(b.baseAddress!, b.baseAddress!, length) }
            var mismatches = 0
            for j in 0..<length {
                let reference = exp(input[j]).bitPattern
                if out[j].bitPattern != reference || inPlace[j].bitPattern != reference {
                    mismatches += 1
                    if mismatches <= 5 { Issue.record("exp(\(input[j])): \(exp(input[j])) vs \(out[j]) / \(inPlace[j])") }
                }
            }
            #expect(mismatches == 0, "length \(length): \(mismatches) values differ from exp")
        }
        // Which path ran (informative: on a CPU without AVX2 and FMA both are exp itself).
        print("FastExpTests: four-wide path \(posfuse_exp_batch_is_vectorized() == 1 ? "on" : "off")")
    }
}
