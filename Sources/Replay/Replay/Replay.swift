// The `Replay` library product: one import for everything around the estimation core.
// Each module below is its own SwiftPM target so that the arrows between them are enforced
// by the compiler (docs/architecture.md draws them). Code inside the package imports the
// module it needs; users of the package import `Replay`.
@_exported import TraceIO
@_exported import Storage
@_exported import Scoring
@_exported import Survey
@_exported import Interop
@_exported import Simulation
@_exported import Evaluation
@_exported import Regress
@_exported import Sweep
@_exported import Refine
