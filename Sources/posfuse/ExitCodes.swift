import ArgumentParser
import Foundation
import Positioning
import Replay

/// posfuse exit codes, the contract documented in `docs/cli.md` (sysexits.h numbering):
/// 0 success, 1 accuracy regression, 64 usage error, 65 bad data, 74 I/O error.
enum ExitStatus {
    static let success: Int32 = 0
    static let regression: Int32 = 1
    /// Usage errors: bad flags or arguments, an input path that does not exist or cannot be opened.
    static let usage: Int32 = 64
    /// Data errors: a malformed trace line (strict mode), header or side file.
    static let dataError: Int32 = 65
    /// I/O errors: a read or write that failed (disk full, device error, a lost database lock),
    /// an input that exists but cannot be read.
    static let ioError: Int32 = 74
}

/// Writes one line to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// Runs a subcommand body and turns library errors into the documented exit codes:
/// a `TraceDataError` prints `file:line: reason` on stderr and exits 65 (64 when the
/// input could not be opened at all, code `io` on line 0); argument-parser's own errors
/// (`ValidationError` → 64, `ExitCode`, `CleanExit`) pass through unchanged.
///
/// ```swift
/// func run() throws { try withExitCodes { … } }
/// ```
func withExitCodes<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let e as TraceDataError {
        printError(e.description)
        throw ExitCode(exitStatus(for: e))
    } catch let e as ScenarioError {
        printError(e.description)
        throw ExitCode(ExitStatus.dataError)
    } catch let e as ResultsDataError {
        printError(e.description)
        throw ExitCode(ExitStatus.dataError)
    } catch let e as ConfigurationError {
        printError(e.description)
        throw ExitCode(ExitStatus.dataError)
    } catch let e as ExitCode {
        throw e
    } catch let e as CleanExit {
        throw e
    } catch let e as ValidationError {
        throw e
    } catch let e as SystemError {
        printError(e.description)
        throw ExitCode(e.status)
    } catch {
        let e = SystemError(error)
        printError(e.description)
        throw ExitCode(e.status)
    }
}

/// The exit status for a data error (see `withExitCodes`): an input that does not exist is a
/// usage error (64), any other I/O failure 74, everything else bad data (65).
func exitStatus(for e: TraceDataError) -> Int32 {
    guard e.code == .io else { return ExitStatus.dataError }
    return e.line == 0 && !FileManager.default.fileExists(atPath: e.file) ? ExitStatus.usage : ExitStatus.ioError
}

/// Whether `path` is a scenario folder (holds a scenario.yaml).
func isScenarioFolder(_ path: String) -> Bool {
    FileManager.default.fileExists(atPath: (path as NSString).appendingPathComponent("scenario.yaml"))
}

/// Usage error (exit 64) naming the first of `paths` that is not a scenario folder.
func requireScenarioFolders(_ paths: [String], note: String = "") throws {
    for p in paths where !isScenarioFolder(p) { throw ValidationError("\(p): no scenario.yaml in this folder\(note)") }
}

/// Reads a `--pipeline` file for commands that replay through it: a file that cannot be read
/// is a usage error (exit 64); bad YAML or a bad option value prints `file: reason` and exits 65
/// (the stages are built once here, so a bad value is caught before any work).
func loadPipelineStages(_ path: String) throws -> [String: StageOptions] { try loadPipelineFile(path).stages }

/// The `--pipeline` file's text (stored with a replay's results) and its stage options.
func loadPipelineFile(_ path: String) throws -> (text: String, stages: [String: StageOptions]) {
    guard FileManager.default.fileExists(atPath: path) else { throw ValidationError("no such --pipeline file \(path)") }
    let text = try withExitCodes { try InputFile.text(URL(fileURLWithPath: path)) }
    do {
        let stages = try PipelineConfigLoader.parse(yaml: text, file: path)
        _ = try StageRegistry.pipeline(options: stages)
        return (text, stages)
    } catch let e as ConfigurationError {
        printError(e.path.hasPrefix(path) ? e.description : "\(path): \(e.description)")
        throw ExitCode(ExitStatus.dataError)
    }
}
