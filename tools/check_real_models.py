#!/usr/bin/env python3
"""Runs `irun run` on every model tools/convert_real_models.py wrote and compares each output
with OpenVINO's (expected.npz, within 1e-4 relative + absolute) and with eager PyTorch
(torch.npz, reported as the largest difference).

    venv/bin/python tools/check_real_models.py [DIR] [--irun target/release/irun]
"""
import argparse
import subprocess
import tempfile
from pathlib import Path

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default=str(Path(__file__).parent / "out" / "real"))
    ap.add_argument("--irun", default="target/release/irun")
    args = ap.parse_args()
    ok = True
    for d in sorted(Path(args.dir).iterdir()):
        if not (d / "expected.npz").exists():
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.npz"
            for threads in (1, 2):
                r = subprocess.run([args.irun, "run", str(d / "model.xml"), "--inputs", str(d / "inputs.npz"),
                                    "--outputs", str(out), "--threads", str(threads)], capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"{d.name}: irun failed: {r.stderr.strip()}")
                    ok = False
                    break
                got = np.load(out)
                want = np.load(d / "expected.npz")
                for k in want.files:
                    g, w = got[k], want[k]
                    close = g.shape == w.shape and np.allclose(g, w, rtol=1e-4, atol=1e-4)
                    diff = float(np.max(np.abs(g.astype(np.float64) - w))) if g.shape == w.shape else float("inf")
                    ok &= close
                    print(f"{d.name} [{threads} thread(s)] {k}: {'ok' if close else 'MISMATCH'} (max |irun - OpenVINO| = {diff:.2e})")
                if threads == 1 and (d / "torch.npz").exists():
                    t = np.load(d / "torch.npz")
                    for i, k in enumerate(want.files[: len(t.files)]):
                        tv = t[f"output_{i}"]
                        if tv.shape == got[k].shape:
                            print(f"{d.name} {k}: max |irun - torch| = {float(np.max(np.abs(got[k] - tv))):.2e}")
    print("all match" if ok else "some outputs differ")


if __name__ == "__main__":
    main()
