import Foundation

/// The target a libFuzzer run exercises: `POSFUSE_FUZZ_TARGET=<name>` (see `--list`).
nonisolated(unsafe) var selected: FuzzTarget? = nil

#if FUZZING
// Built by scripts/fuzz/build.sh with `-sanitize=fuzzer`. SwiftPM links an executable's entry
// point as `<module>_main` (aliased to `main`), so that function hands control to libFuzzer's
// driver, which calls `LLVMFuzzerTestOneInput` for every input.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<Int32>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

@_cdecl("posfuse_fuzz_main")
public func posfuseFuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var c = argc
    var v = argv
    return LLVMFuzzerRunDriver(&c, &v) { data, size in
        guard let data else { return 0 }
        return fuzzOne(data, size)
    }
}

/// libFuzzer calls this for every input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    if selected == nil {
        guard let name = ProcessInfo.processInfo.environment["POSFUSE_FUZZ_TARGET"], let t = target(named: name) else {
            FileHandle.standardError.write(Data("set POSFUSE_FUZZ_TARGET to one of: \(allTargets.map(\.name).joined(separator: " "))\n".utf8))
            exit(2)
        }
        selected = t
    }
    guard size <= maxInput else { return 0 }
    try? selected!.run(Data(bytes: data, count: size))
    return 0
}
#else
/// Without libFuzzer (a plain `swift build`): runs files through a target, e.g. the seed
/// corpus or a crash input: `posfuse-fuzz <target> <file or folder>...`; `--list` names the
/// targets. Exit 0 when every input passed its oracle (a failure stops the process).
@main struct FuzzMain {
    static func main() throws {
        let args = Array(CommandLine.arguments.dropFirst())
        if args.first == "--list" || args.isEmpty {
            print(allTargets.map(\.name).joined(separator: "\n"))
            return
        }
        guard let t = target(named: args[0]) else {
            FileHandle.standardError.write(Data("unknown target \(args[0])\n".utf8)); exit(64)
        }
        var n = 0
        for p in args.dropFirst() {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: p, isDirectory: &isDir) else { continue }
            let files = isDir.boolValue
                ? try FileManager.default.contentsOfDirectory(atPath: p).sorted().map { (p as NSString).appendingPathComponent($0) }
                : [p]
            for f in files {
                guard let d = FileManager.default.contents(atPath: f), d.count <= maxInput else { continue }
                try? t.run(d)
                n += 1
            }
        }
        print("\(t.name): \(n) inputs passed")
    }
}
#endif
