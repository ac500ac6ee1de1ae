"""tools/zpp_report.py on made-up statistics files: the figures as printed (issue 46)."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import zpp_report  # noqa: E402


def one_file(off_node, plain, settings=None):
    comm = {"nranks": 4, "rank": 0, "calls": {}, "input_bytes": {}, "pass_through": {},
            "sent_bytes": {"inter_node": off_node}, "plain_off_node_bytes": plain,
            "hpz_hits": 0, "hpz_misses": 0, "hpz_verify_failures": 0}
    return {"settings": settings or {}, "communicators": [comm]}


class ReportFiguresTest(unittest.TestCase):
    def test_plain_saves_zero_percent_never_minus_zero(self):
        text = zpp_report.table(zpp_report.summarize([one_file(1000001, 1000000)]))
        self.assertIn("1.000 of plain, 0.0% saved", text)
        self.assertNotIn("-0.0%", text)

    def test_more_than_plain_is_a_negative_saving(self):
        text = zpp_report.table(zpp_report.summarize([one_file(1100000, 1000000)]))
        self.assertIn("1.100 of plain, -10.0% saved", text)


if __name__ == "__main__":
    unittest.main()
