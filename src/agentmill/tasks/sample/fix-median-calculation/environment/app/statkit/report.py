"""Print a one-line summary for the numbers given on the command line."""
import sys

from stats import mean, median, value_range

if __name__ == "__main__":
    data = [float(x) for x in sys.argv[1:]]
    print(f"n={len(data)} mean={mean(data):.2f} median={median(data):.2f} range={value_range(data):.2f}")
    print("input order:", " ".join(f"{x:g}" for x in data))
