import Foundation

extension GNSSErrorModel {
    /// The GNSS error model shipped with posfuse and applied by default by the `gnss` stage
    /// (option `error_model: shipped`), in the model file format (`error_model: FILE` reads the
    /// same JSON). Provenance (also in the file): fitted by `GNSSErrorModel.fit` on every
    /// truth-bearing GNSS recording of the development data — the GSDC 2020 drive
    /// 2020-05-14-US-MTV-1 (Pixel4 and Pixel4XLModded chipset NMEA, accuracy = HDOP · 3 m, against
    /// the NovAtel SPAN 1 Hz track) and the two Android GnssLogger demo logs of one static phone
    /// (2016-06-30, 2016-08-22, against the surveyed point), family `pseudoranges`; the reported
    /// velocity's σ_v, latency and error correlation from the drive's RMC speed and course (the
    /// GnssLogger logs report none). The test
    /// `shippedGNSSErrorModelReproduces` refits it (factors and error correlations) from those files and fails when this text
    /// differs (it prints the refitted JSON). docs/radio.md, "The shipped GNSS error model".
    public static let shippedJSON = """
    {
      "day_spread_log_sd" : 0.5305796835408232,
      "families" : {
        "Pixel4" : {
          "correlation" : {
            "bias_fraction" : 0.886455501833533,
            "correlation_time_s" : 89.68254147216297
          },
          "factor" : 1.6018338368360467,
          "fixes" : 1737,
          "recordings" : 1,
          "velocity_correlation_integral" : 5.2107163937435175,
          "velocity_fixes" : 1737,
          "velocity_latency_s" : 0.5,
          "velocity_sigma_mps" : 0.3656846224259939
        },
        "Pixel4XL" : {
          "correlation" : {
            "bias_fraction" : 0.9623746805384614,
            "correlation_time_s" : 218.15192124220593
          },
          "factor" : 3.0049351441505956,
          "fixes" : 1743,
          "recordings" : 1,
          "velocity_correlation_integral" : 5.160336225477025,
          "velocity_fixes" : 1743,
          "velocity_latency_s" : 0.4,
          "velocity_sigma_mps" : 0.41916977327316574
        },
        "pseudoranges" : {
          "correlation" : {
            "bias_fraction" : 0.9882982369900166,
            "correlation_time_s" : 124.33523732322618
          },
          "factor" : 1.9333669518853478,
          "fixes" : 423,
          "recordings" : 2
        }
      },
      "pooled" : {
        "correlation" : {
          "bias_fraction" : 0.9553424507990043,
          "correlation_time_s" : 129.46410114673577
        },
        "factor" : 2.2224925913172777,
        "fixes" : 3903,
        "recordings" : 4,
        "velocity_correlation_integral" : 5.3893821708337235,
        "velocity_fixes" : 3480,
        "velocity_latency_s" : 0.5,
        "velocity_sigma_mps" : 0.40601174765613485
      },
      "provenance" : "GNSSErrorModel.fit on gsdc2020/2020-05-14-US-MTV-1 (Pixel4, Pixel4XLModded vs SPAN_Pixel4_1Hz) and gnsslogger-static (2 logs, family pseudoranges, static truth 37.422578,-122.081678,-28); day spread from the pseudoranges pair; error correlation (bias fraction, correlation time) from the fixes' error autocorrelation at lags 1-60 s; reported velocity (RMC speed and course) noise, latency and error autocorrelation against the SPAN track's 1 s differences"
    }
    """

    /// `shippedJSON` decoded (a decoding failure is a build defect the tests catch).
    public static let shipped: GNSSErrorModel = try! decode(Data(shippedJSON.utf8))
}
