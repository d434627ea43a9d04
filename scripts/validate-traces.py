#!/usr/bin/env python3
"""Validate every line of the bundled traces (or the files given) against
docs/trace-format.schema.json with the maintained `jsonschema` package
(pip install jsonschema). Exit 1 when any line violates the schema."""
import collections, glob, json, os, sys

import jsonschema

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
schema = json.load(open(os.path.join(root, "docs", "trace-format.schema.json")))
validator = jsonschema.Draft202012Validator(schema)
files = sys.argv[1:] or sorted(glob.glob(os.path.join(root, "Traces", "*", "trace.jsonl")))
failed = 0
for path in files:
    bad = collections.Counter()
    first = None
    with open(path) as f:
        for number, line in enumerate(f, 1):
            error = next(validator.iter_errors(json.loads(line)), None)
            if error is not None:
                bad[error.message[:120]] += 1
                first = first or f"{path}:{number}: {error.message[:200]}"
    print(f"{os.path.relpath(path, root)}: {number} lines, {sum(bad.values())} invalid")
    if bad:
        failed += 1
        print("  first:", first)
sys.exit(1 if failed else 0)
