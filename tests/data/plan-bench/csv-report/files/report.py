"""python3 report.py INPUT.csv OUTPUT.csv: units and revenue per region, then a total."""

import csv
import sys
from collections import defaultdict
from decimal import Decimal


def report(source: str, target: str) -> None:
    units: dict[str, int] = defaultdict(int)
    revenue: dict[str, Decimal] = defaultdict(Decimal)
    with open(source, newline="") as handle:
        for row in csv.DictReader(handle):
            units[row["region"]] += int(row["units"])
            revenue[row["region"]] += int(row["units"]) * Decimal(row["unit_price"])
    regions = sorted(revenue, key=lambda region: (-revenue[region], region))
    with open(target, "w", newline="") as handle:
        out = csv.writer(handle, lineterminator="\n")
        out.writerow(["region", "units", "revenue"])
        for region in regions:
            out.writerow([region, units[region], f"{revenue[region]:.2f}"])
        out.writerow(["TOTAL", sum(units.values()), f"{sum(revenue.values()):.2f}"])


if __name__ == "__main__":
    report(sys.argv[1], sys.argv[2])
