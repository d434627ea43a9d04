/// Speed of sound in air (`docs/models.md` §0):
/// c_s(T) = 331.3·√(1 + T/273.15) m/s with T in °C (343.2 m/s at 20 °C;
/// ∂c_s/∂T ≈ 0.6 m/s/K, i.e. 0.175 %/K of every range).
public enum SpeedOfSound {
    /// Default air temperature when a trace gives none, °C.
    public static let defaultTemperature = 20.0

    /// c_s in m/s for an air temperature in °C. Temperatures at or below absolute zero
    /// are clamped to a tiny positive speed rather than producing NaN.
    public static func metersPerSecond(celsius t: Double) -> Double {
        331.3 * max(1 + t / 273.15, 1e-12).squareRoot()
    }
}
