import ArgumentParser
import Foundation
import Replay

/// Replay traces (files, scenario folders or folders of them) into a `RunResults` for
/// regress/report. `epochs` keeps the per-epoch samples; `progress` draws a progress line.
func replaySuite(_ paths: [String], pipeline: String?, strict: Bool, epochs: Bool, progress: Bool) throws -> RunResults {
    // Interim: wired to the Replayer as soon as it lands on main (COORDINATION.md contract).
    throw ValidationError("replaying needs the Replayer, which is not on main yet: pass a `posfuse replay --json` output instead")
}
