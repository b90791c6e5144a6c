"""Write `data_manifest/sample-2000-seed0.json`: the expected files of the bundled sample corpus.

    .venv/bin/python bench/sample_corpus_manifest.py [--dir data/sample]

The sample is `parquet-agent corpus build --rows 2000 --seed 0 --out data/sample`. Without
`--dir` the script builds it into a temporary folder. The manifest lists every Parquet file
with exact rows, row groups, bytes, content hash and `rows_digest` (the (file_stem, md5) pairs,
which stay equal if only the Parquet writer changes), plus the totals. Regenerate it whenever
the synthetic generator changes on purpose; `corpus verify data/sample --manifest
data_manifest/sample-2000-seed0.json` then says exactly what a local copy differs in.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import pyarrow
import pyarrow.parquet as pq

from parquet_agent.corpus.snapshot import file_content_hash
from parquet_agent.corpus.verify import rows_digest

ROWS, SEED = 2000, 0
OUT = Path(__file__).resolve().parents[1] / "data_manifest" / f"sample-{ROWS}-seed{SEED}.json"


def expected_manifest(folder: Path) -> dict:
    paths = sorted(folder.glob("*.parquet"))
    files = []
    for p in paths:
        meta = pq.ParquetFile(p).metadata
        files.append({
            "name": p.name,
            "rows": meta.num_rows,
            "row_groups": meta.num_row_groups,
            "bytes": p.stat().st_size,
            "content_hash": file_content_hash(p),
            "rows_digest": rows_digest(p),
        })
    origin = json.loads((folder / "manifest.json").read_text())["origin"]
    return {
        "schema_version": 1,
        "kind": "sample",
        "name": f"sample-{ROWS}-seed{SEED}",
        "description": f"The bundled sample: `parquet-agent corpus build --rows {ROWS} --seed {SEED} "
        "--out data/sample`. rows, row_groups and rows_digest depend only on the generator; bytes "
        "and content_hash also on the Parquet writer (see writer).",
        "generator": {k: origin.get(k) for k in ("generator", "generator_version", "rows", "seed")},
        "writer": {"pyarrow": pyarrow.__version__, "created_by": pq.ParquetFile(paths[0]).metadata.created_by},
        "totals": {
            "files": len(files),
            "rows": sum(f["rows"] for f in files),
            "bytes": sum(f["bytes"] for f in files),
        },
        "files": files,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", help="an existing build of the sample (default: build one now)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    if args.dir:
        data = expected_manifest(Path(args.dir))
    else:
        from parquet_agent.corpus.synthetic import build_corpus

        with tempfile.TemporaryDirectory() as tmp:
            build_corpus(Path(tmp) / "sample", rows=ROWS, seed=SEED)
            data = expected_manifest(Path(tmp) / "sample")
    Path(args.out).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {data['totals']['rows']:,} rows in {data['totals']['files']} files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
