import Foundation

/// The batch scripts of `posfuse sweep STUDY --slurm` (`docs/sweep.md`, "Slurm"):
///
/// * `array.sbatch`: an `sbatch --array=1-N` job; task I runs `posfuse sweep STUDY --shard I/N`
///   into its own database `shard-I.sqlite` (shards share nothing, so they need no locking on
///   a network file system);
/// * `merge.sbatch`: submitted with `--dependency=afterok:<array job>`, it merges the shard
///   databases into the study database (`posfuse sweep merge`) and writes the summary
///   (`summary.txt`, `summary.json`, `summary.csv`) into the same folder.
///
/// Every path in the scripts is absolute: the nodes must see the same file system (the
/// usual cluster set-up: home or project directories shared by NFS/Lustre).
public struct SlurmScripts: Sendable {
    public var posfuse: String
    public var study: String
    public var database: String
    public var folder: String
    public var shards: Int
    public var cpusPerTask: Int
    public var name: String
    public var workingDirectory: String
    /// Extra `#SBATCH` lines (e.g. "--partition=short", "--time=01:00:00").
    public var sbatchOptions: [String]

    public init(posfuse: String, study: String, database: String, folder: String, shards: Int, cpusPerTask: Int,
                name: String, workingDirectory: String, sbatchOptions: [String] = []) {
        self.posfuse = posfuse; self.study = study; self.database = database; self.folder = folder
        self.shards = shards; self.cpusPerTask = cpusPerTask; self.name = name
        self.workingDirectory = workingDirectory; self.sbatchOptions = sbatchOptions
    }

    static func q(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    public func shardDatabase(_ i: Int) -> String { (folder as NSString).appendingPathComponent("shard-\(i).sqlite") }

    public var arrayScript: String {
        var s = "#!/bin/bash\n"
        s += "#SBATCH --job-name=\(jobName)-shard\n"
        s += "#SBATCH --array=1-\(shards)\n"
        s += "#SBATCH --cpus-per-task=\(cpusPerTask)\n"
        s += "#SBATCH --output=\((folder as NSString).appendingPathComponent("shard-%a.log"))\n"
        for o in sbatchOptions { s += "#SBATCH \(o)\n" }
        s += "# posfuse sweep: shard SLURM_ARRAY_TASK_ID of \(shards) of study \(name) (written by `posfuse sweep --slurm`).\n"
        s += "set -euo pipefail\n"
        s += "cd \(Self.q(workingDirectory))\n"
        s += "exec \(Self.q(posfuse)) sweep \(Self.q(study)) --shard \"${SLURM_ARRAY_TASK_ID}/\(shards)\" "
        s += "--db \(Self.q((folder as NSString).appendingPathComponent("shard-")))\"${SLURM_ARRAY_TASK_ID}.sqlite\" "
        s += "--jobs \"${SLURM_CPUS_PER_TASK:-1}\"\n"
        return s
    }

    public var mergeScript: String {
        let out = { (n: String) in Self.q((folder as NSString).appendingPathComponent(n)) }
        var s = "#!/bin/bash\n"
        s += "#SBATCH --job-name=\(jobName)-merge\n"
        s += "#SBATCH --cpus-per-task=1\n"
        s += "#SBATCH --output=\((folder as NSString).appendingPathComponent("merge.log"))\n"
        for o in sbatchOptions { s += "#SBATCH \(o)\n" }
        s += "# posfuse sweep: merge the \(shards) shard databases of study \(name) and summarise.\n"
        s += "set -euo pipefail\n"
        s += "cd \(Self.q(workingDirectory))\n"
        s += "\(Self.q(posfuse)) sweep merge --db \(Self.q(database))"
        for i in 1...shards { s += " \(Self.q(shardDatabase(i)))" }
        s += "\n"
        s += "\(Self.q(posfuse)) sweep \(Self.q(study)) --db \(Self.q(database)) --no-run --csv \(out("summary.csv")) > \(out("summary.txt"))\n"
        s += "\(Self.q(posfuse)) sweep \(Self.q(study)) --db \(Self.q(database)) --no-run --json > \(out("summary.json")).part\n"
        s += "mv \(out("summary.json")).part \(out("summary.json"))\n"
        return s
    }

    var jobName: String {
        "posfuse-" + String(name.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "_" })
    }

    /// Writes both scripts into `folder` (created if needed); returns their paths.
    public func write() throws -> (array: String, merge: String) {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let a = (folder as NSString).appendingPathComponent("array.sbatch")
        let m = (folder as NSString).appendingPathComponent("merge.sbatch")
        try arrayScript.write(toFile: a, atomically: true, encoding: .utf8)
        try mergeScript.write(toFile: m, atomically: true, encoding: .utf8)
        for p in [a, m] { try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: p) }
        return (a, m)
    }
}
