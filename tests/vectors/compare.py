"""Checks that every language sent the shared session calls alike.

    python3 tests/vectors/compare.py DIR

DIR holds one file per language and link (python-embedded.tsv, …, go-remote.tsv),
each written by that suite from tests/vectors/sessions.json: a line per call with
its outcome, the record's request digest, the floor sent and the record's rule
id. All eight must be present and byte for byte the same: the same requests give
the same request digests and the same error codes in Python, Node, C and Go,
embedded and remote.
"""

import pathlib
import sys

LANGUAGES = ["python", "node", "c", "go"]
LINKS = ["embedded", "remote"]


def main() -> int:
    d = pathlib.Path(sys.argv[1])
    want = [f"{lang}-{link}" for lang in LANGUAGES for link in LINKS]
    missing = [n for n in want if not (d / f"{n}.tsv").is_file()]
    if missing:
        print(f"session vectors: no output from {missing} in {d}", file=sys.stderr)
        return 1
    texts = {n: (d / f"{n}.tsv").read_text() for n in want}
    first = texts[want[0]]
    lines = first.splitlines()
    if len(lines) < 2 or any(len(line.split("\t")) != 5 for line in lines):
        print(f"session vectors: {want[0]} is not one line of five fields per call:\n{first}", file=sys.stderr)
        return 1
    differ = [n for n in want if texts[n] != first]
    for n in differ:
        print(f"session vectors: {n} differs from {want[0]}:\n{texts[n]}\n--- {want[0]}:\n{first}", file=sys.stderr)
    if differ:
        return 1
    print(f"session vectors: {len(want)} outputs agree on {len(lines)} calls")
    return 0


if __name__ == "__main__":
    sys.exit(main())
