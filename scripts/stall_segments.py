"""Issue 16 measurement: a training kernel's per-instruction ncu page cut at its barriers.

    python3 scripts/stall_segments.py FILE.csv[.gz] BLOCK_STEPS

Reads the per-SASS-instruction source page that ``scripts/fused_stalls.py`` writes
(``stalls-cuda-g<G>[-defs]-source-sass.csv[.gz]``: one row per instruction, in address order), cuts it
after every block barrier (``BAR.SYNC``) and cluster barrier (``UCGABAR_*``), and prints per segment
that has work: its first and last instruction, the warp instructions executed and the shared-memory
wavefronts (actual and ncu's ideal) per block-step (the counts divided by BLOCK_STEPS, which is
G x 158 for a whole training of one task), the stall samples, and the five most frequent stall reasons
as shares of the segment's samples. A bad file or BLOCK_STEPS is one line on stderr and exit 2. A
measurement for the issue's notes; nothing reads its output.
"""

from __future__ import annotations

import collections
import csv
import gzip
import math
import sys
from pathlib import Path

BARRIERS = ("BAR.SYNC", "UCGABAR")
MIN_INSTRUCTIONS = 50   # per block-step: segments below this are barrier tails, not phases


def number(cell: str) -> float:
    """A counter cell as a float: ``"1,234"`` → 1234.0; ``""`` and ``"-"`` → 0.0.

    Raises:
        ValueError: the cell is not a number.
    """
    cell = cell.replace(",", "").strip()
    return float(cell) if cell not in ("", "-") else 0.0


def segments(rows: list[list[str]], block_steps: float) -> list[dict]:
    """The segments of a source page (header row first) as dicts; see the module docstring.

    Raises:
        KeyError: a column the page must have is missing.
        ValueError: the page has no header or no instruction rows, a row is shorter than the header, or a
            counter cell is not a number.
    """
    if len(rows) < 2:
        raise ValueError("no header and instruction rows")
    header, data = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(header)}
    stalls = [n for n in header if n.startswith("stall_") and "Not Issued" not in n]
    need = ("Source", "Instructions Executed", "L1 Wavefronts Shared", "L1 Wavefronts Shared Ideal",
            "Warp Stall Sampling (All Samples)")
    for name in need:
        if name not in col:
            raise KeyError(name)
    out, start, acc, reasons = [], 0, collections.Counter(), collections.Counter()
    for i, row in enumerate(data):
        if len(row) < len(header):
            raise ValueError(f"instruction row {i} has {len(row)} cells, the header {len(header)}")
        acc["instructions"] += number(row[col["Instructions Executed"]]) / block_steps
        acc["wavefronts"] += number(row[col["L1 Wavefronts Shared"]]) / block_steps
        acc["ideal"] += number(row[col["L1 Wavefronts Shared Ideal"]]) / block_steps
        acc["samples"] += number(row[col["Warp Stall Sampling (All Samples)"]])
        for name in stalls:
            reasons[name[len("stall_"):]] += number(row[col[name]])
        source = row[col["Source"]].strip()
        if any(b in source for b in BARRIERS) or i == len(data) - 1:
            total = sum(reasons.values()) or 1.0
            out.append({"first": start, "last": i, "ends_with": source.split()[0] if source else "",
                        **{k: acc[k] for k in ("instructions", "wavefronts", "ideal", "samples")},
                        "reasons": [(k, v / total) for k, v in reasons.most_common(5) if v]})
            start, acc, reasons = i + 1, collections.Counter(), collections.Counter()
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: scripts/stall_segments.py FILE.csv[.gz] BLOCK_STEPS", file=sys.stderr)
        return 2
    path = Path(argv[0])
    try:
        block_steps = float(argv[1])
        if not math.isfinite(block_steps) or block_steps <= 0:
            raise ValueError
    except ValueError:
        print(f"error: BLOCK_STEPS {argv[1]!r} is not a positive number (G x 158 for one task)", file=sys.stderr)
        return 2
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", newline="") as handle:
            rows = [r for r in csv.reader(handle)]
        # fused_stalls.py's page starts with a "Kernel Name" line, then the header
        rows = rows[1:] if rows and rows[0] and rows[0][0] == "Kernel Name" else rows
        found = segments(rows, block_steps)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        print(f"error: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    except KeyError as exc:
        print(f"error: {path} has no column {exc}; pass the -source-sass.csv page of scripts/fused_stalls.py",
              file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"error: {path} is not a whole source page ({exc}); pass the -source-sass.csv page of "
              "scripts/fused_stalls.py", file=sys.stderr)
        return 2
    for seg in found:
        if seg["instructions"] < MIN_INSTRUCTIONS:
            continue
        reasons = " ".join(f"{k}={v:.2f}" for k, v in seg["reasons"])
        print(f"{seg['first']:5d}-{seg['last']:5d} {seg['ends_with']:24s} instructions={seg['instructions']:7.0f} "
              f"wavefronts={seg['wavefronts']:6.0f} ideal={seg['ideal']:6.0f} samples={seg['samples']:5.0f}  {reasons}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
