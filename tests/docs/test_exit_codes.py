"""docs/exit-codes.md's table says what src/agentmill/exit_codes.py defines: every code, no other."""

import re

from agentmill import exit_codes
from tests.docs.doc_blocks import ROOT


def test_the_exit_code_table_lists_exactly_the_defined_codes():
    text = (ROOT / "docs" / "exit-codes.md").read_text()
    table = {int(m.group(1)) for m in re.finditer(r"^\| (\d+) \|", text, re.MULTILINE)}
    defined = {v for k, v in vars(exit_codes).items() if k.isupper() and isinstance(v, int)}
    assert table == defined
