"""test_schema.py: the runners write exactly the columns docs/measurements.md documents (the tables of
its "Layer measurements" and "Network measurements" sections), which measure/measurements.c reads."""

import os
import re
import unittest

import _common  # noqa: F401 - puts runners/ on sys.path
import layer_runner
import network_runner

DOC = os.path.join(_common.REPO, "docs", "measurements.md")


def doc_columns(section):
    """Backticked names in the first cell of the first table after the heading `## section`."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## " + re.escape(section) + r"\s*$", text, re.M)
    if not m:
        raise AssertionError(f"{DOC}: no section '## {section}'")
    cols, in_table = [], False
    for line in text[m.end():].splitlines():
        if line.startswith("|"):
            in_table = True
            cell = line.split("|")[1].strip()
            if cell in ("column",) or set(cell) <= set("-: "):
                continue
            cols += re.findall(r"`([a-z_]+)`", cell)
        elif in_table:
            break
    return cols


class SchemaTest(unittest.TestCase):
    def test_layer_columns_should_match_the_document(self):
        self.assertEqual(sorted(layer_runner.LAYER_COLUMNS), sorted(doc_columns("Layer measurements")))
        self.assertEqual(len(set(layer_runner.LAYER_COLUMNS)), len(layer_runner.LAYER_COLUMNS))

    def test_network_columns_should_match_the_document(self):
        self.assertEqual(sorted(network_runner.NET_COLUMNS),
                         sorted(doc_columns("Network measurements")))
        self.assertEqual(len(set(network_runner.NET_COLUMNS)), len(network_runner.NET_COLUMNS))


if __name__ == "__main__":
    unittest.main()
