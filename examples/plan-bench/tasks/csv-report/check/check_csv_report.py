"""Acceptance check: report.csv for the shipped data, and report.py on data it never saw
(quoted commas, a return, a tie in revenue)."""

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SHIPPED = """region,units,revenue
east,52,166.20
west,38,121.80
south,42,111.70
north,19,60.10
TOTAL,151,459.80
"""

OTHER = '''date,region,product,units,unit_price
2026-03-01,b,"Cable, 2 m",3,2.00
2026-03-01,a,Plug,2,3.00
2026-03-02,c,"Lamp, ""desk""",1,0.10
2026-03-02,c,Plug,-1,3.00
'''

OTHER_REPORT = """region,units,revenue
a,2,6.00
b,3,6.00
c,0,-2.90
TOTAL,5,9.10
"""


def rows(text):
    return [line.strip() for line in text.strip().splitlines()]


class Check(unittest.TestCase):
    def test_the_shipped_report(self):
        self.assertEqual(rows(Path("report.csv").read_text()), rows(SHIPPED))

    def test_the_script_on_other_data(self):
        with tempfile.TemporaryDirectory() as home:
            source, target = Path(home) / "in.csv", Path(home) / "out.csv"
            source.write_text(OTHER)
            ran = subprocess.run(
                [sys.executable, "-B", "report.py", str(source), str(target)],
                capture_output=True,
                text=True,
            )
            self.assertEqual(ran.returncode, 0, ran.stderr)
            self.assertEqual(rows(target.read_text()), rows(OTHER_REPORT))
