import Testing
@testable import Positioning

/// The stage option tables (`OptionTable`) are the one declaration of every option: each key a
/// table lists is read by its stage, and the table's defaults are what the stage uses.
@Suite struct OptionTableTests {
    /// A value of a type the option does not take, so a stage that reads the key must reject it.
    static func wrongType(_ spec: OptionSpec) -> ConfigValue {
        spec.kind == .map ? .list([]) : .map(["wrong": .bool(true)])
    }

    /// Every key of every table is read by the stage's parser: set to a value of the wrong type,
    /// building the stage fails with an error naming that key.
    @Test func everyTabledKeyIsRead() throws {
        var checked = 0
        for e in StageRegistry.entries {
            let table = e.options
            for spec in table.all {
                var values: [String: ConfigValue] = ["enabled": .bool(true), spec.key: Self.wrongType(spec)]
                // The smoother reads the ukf (pf) options only when it smooths a ukf (pf).
                if e.name == "smoother", FusionStage.Options.ukf.options.contains(spec) { values["filter"] = .string("ukf") }
                if e.name == "smoother", FusionStage.Options.pf.options.contains(spec) { values["filter"] = .string("pf") }
                // The bayes-only options are read with `method: bayes` (the default is wknn), the
                // cov_ keys other than cov_k with cov_k.
                if e.name == "fingerprint" {
                    if FingerprintStage.Options.bayesTable.options.contains(where: { $0.key == spec.key }),
                       !FingerprintStage.Options.table.options.contains(where: { $0.key == spec.key }) {
                        values["method"] = .string("bayes")
                    }
                    if spec.key.hasPrefix("cov_"), spec.key != "cov_k" { values["cov_k"] = .number(1) }
                }
                do {
                    _ = try e.make(StageOptions(name: e.name, values: values))
                    Issue.record("\(e.name).\(spec.key): a wrong type was accepted, so the stage does not read the key")
                } catch let err as ConfigurationError {
                    #expect(err.path.contains(spec.key), "\(e.name).\(spec.key): \(err)")
                }
                checked += 1
            }
        }
        #expect(checked > 60)
    }

    /// The defaults in the filter table are the filter's `Settings` defaults (parsing an empty
    /// section gives the same settings as `Settings(kind:)`).
    @Test func fusionDefaultsAreTheTables() throws {
        for kind in [FusionStage.Kind.ekf, .ukf, .pf] {
            let parsed = try FusionStage(kind: kind, options: StageOptions(name: kind.rawValue)).settings
            let plain = FusionStage.Settings(kind: kind)
            #expect(parsed.inflation == plain.inflation)
            #expect(parsed.inputs == plain.inputs && parsed.adaptiveAccuracy == plain.adaptiveAccuracy)
            #expect(parsed.headingSigma == plain.headingSigma && parsed.cvTurnRateSigma == plain.cvTurnRateSigma)
            #expect(parsed.motion.step == plain.motion.step)
            #expect(parsed.particles == plain.particles && parsed.seed == plain.seed)
            #expect(parsed.sigmaPoints.alpha == plain.sigmaPoints.alpha)
        }
        #expect(FusionStage.Settings(kind: .ekf).inflation[.gnss] == 1)
        #expect(FusionStage.Settings.defaultInflation[.gnss] == FusionStage.Options.whiteNoiseGNSSInflation)
        #expect(try WCLStage.make(StageOptions(name: "wcl")).estimator.exponent == WCLEstimator().exponent)
    }

    /// A choice outside its set is refused with the alternatives named.
    @Test func choiceOutsideItsSetIsRefused() {
        #expect(throws: ConfigurationError.self) {
            try FusionStage(kind: .ekf, options: StageOptions(name: "ekf", values: ["layout": .string("diagonal")]))
        }
        do {
            _ = try WCLStage.make(StageOptions(name: "wcl", values: ["weight_law": .string("cubic")]))
            Issue.record("weight_law cubic accepted")
        } catch let e as ConfigurationError {
            #expect(e.description == "wcl.weight_law: expected distance, power, amplitude or db, got cubic")
        } catch { Issue.record("\(error)") }
    }

    /// Numbers are written so that YAML reads them back as the same number.
    @Test func yamlTextOfNumbers() {
        #expect(ConfigValue.number(3e-5).yamlText == "3.0e-05")
        #expect(ConfigValue.number(299792458).yamlText == "299792458")
        #expect(ConfigValue.number(0.0001).yamlText == "0.0001")
        #expect(ConfigValue.number(-0.5).yamlText == "-0.5")
        #expect(ConfigValue.list([.string("gnss"), .string("cell-ta")]).yamlText == "[gnss, cell-ta]")
    }
}

/// The one rule for phone and object subjects.
@Suite struct SubjectTests {
    @Test func objectsAndPhones() {
        #expect(Subject("object:tower") == .object("tower"))
        #expect(Subject("phone-1") == .phone("phone-1"))
        #expect(Subject.object("tower").id == "object:tower")
        #expect(Subject(Subject.object("a:b").id) == .object("a:b"))
        #expect(Subject.isObject("object:x") && !Subject.isObject("objects") && !Subject.isObject("x-object:"))
        #expect(Subject("object:x").isObject && !Subject("x").isObject)
    }
}
