#!/usr/bin/env python3
"""colsum: print the sum of one column of a CSV file.

usage: colsum.py FILE COLUMN

FILE is a CSV file whose first line is a header row; COLUMN is a header name.
The sum is printed with two decimals. Exits with status 2 if the column
does not exist.
"""
import sys


def column_sum(path, column):
    with open(path) as fh:
        header = fh.readline().split(",")
        if column not in header:
            raise KeyError(column)
        idx = header.index(column)
        total = 0.0
        for line in fh:
            if not line.strip():
                continue
            cells = line.split(",")
            total += float(cells[idx])
    return total


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        total = column_sum(argv[1], argv[2])
    except KeyError:
        print(f"colsum: unknown column {argv[2]!r}", file=sys.stderr)
        return 2
    print(f"{total:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
