#!/usr/bin/env python3
"""Run `irun info --json` on every converted model under DIR (as written by
convert_onnx_suite.py / convert_torch_models.py) and compare with OpenVINO's view (ov_view.json):
op histogram, input names/shapes/element types, output names/element types.

    venv/bin/python tools/compare_info.py tools/out/onnx [--irun target/release/irun]
"""
import json
import os
import subprocess
import sys


def main():
    root = sys.argv[1]
    irun = sys.argv[sys.argv.index("--irun") + 1] if "--irun" in sys.argv else "target/release/irun"
    dirs = sorted(d for d in os.listdir(root) if os.path.exists(os.path.join(root, d, "model.xml")))
    read = 0
    mismatches = []
    for d in dirs:
        xml = os.path.join(root, d, "model.xml")
        p = subprocess.run([irun, "info", "--json", xml], capture_output=True, text=True)
        if p.returncode != 0:
            mismatches.append(f"{d}: exit {p.returncode}: {p.stderr.strip()[:300]}")
            continue
        read += 1
        ours = json.loads(p.stdout)
        with open(os.path.join(root, d, "ov_view.json")) as f:
            ov = json.load(f)
        problems = []
        if ours["ops"] != ov["ops"]:
            problems.append(f"ops {ours['ops']} != {ov['ops']}")
        for kind, fields in (("inputs", ("names", "shape", "element_type")), ("outputs", ("names", "element_type"))):
            if len(ours[kind]) != len(ov[kind]):
                problems.append(f"{kind}: {len(ours[kind])} != {len(ov[kind])}")
                continue
            for i, (a, b) in enumerate(zip(ours[kind], ov[kind])):
                for k in fields:
                    if a[k] != b[k]:
                        problems.append(f"{kind}[{i}].{k}: {a[k]} != {b[k]}")
        if problems:
            mismatches.append(f"{d}: " + "; ".join(problems))
    print(f"{len(dirs)} IR files written by OpenVINO; irun info read {read}; {len(dirs) - len(mismatches)} match OpenVINO exactly")
    for m in mismatches[:50]:
        print("  MISMATCH", m)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
