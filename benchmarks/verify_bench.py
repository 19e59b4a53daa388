"""Benchmark: wall time of verifying every shipped archive, and the share spent hashing.

Run from the repository root: ``.venv/bin/python benchmarks/verify_bench.py [--repeat N]``.
Target (task brief): <= 10 s over all shipped evidence on a 2-core machine. Prints figures;
asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from verify.registry import discover_archives, verify_archive


def main() -> None:
    """Verify every archive under evidence/ N times and print wall time and hashing share."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evidence", type=Path, default=Path("evidence"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for k in range(args.repeat):
        t0 = time.perf_counter()
        reports = [verify_archive(p) for p in discover_archives(args.evidence)]
        wall = time.perf_counter() - t0
        hashing = sum(r.timings_s.get("hashing", 0.0) for r in reports)
        checks = sum(len(r.results) for r in reports)
        print(f"run {k}: {len(reports)} archives, {checks} verdicts, wall {wall:.3f} s, "
              f"hashing/decompressing {hashing:.3f} s ({100 * hashing / wall:.1f} %), "
              f"{'all passed' if all(r.ok for r in reports) else 'FAILURES'}")


if __name__ == "__main__":
    main()
