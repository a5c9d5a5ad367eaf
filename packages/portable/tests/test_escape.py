"""pt2kit_portable.escape, the one rule by which a string from a record or a user's program enters
generated Python (capture's model files, minify's repros): one printable line whatever the text holds, and
inside a docstring a literal that reads back as the text itself."""

from __future__ import annotations

import ast

from pt2kit_portable import escape

# every character str.splitlines splits on, a docstring's own quotes, backslash sequences, NUL, a lone surrogate
HOSTILE = ('a\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"""\'\'\'"\\\\N{BULLET}\\x\\u12\\\t\x00\udc80'
           'open("PWNED","w")\\')


def test_escaped_text_is_one_line_in_a_comment_and_a_docstring_that_reads_back_as_the_text():
    for text in (HOSTILE, HOSTILE + '"', '"' + HOSTILE, "\\"):
        line = escape(text)
        assert len(line.splitlines()) == 1 and all(c.isprintable() or c == "\t" for c in line)
        assert ast.parse(f"# {line}\nx = 1").body[0].lineno == 2  # the comment ends where the line does
        doc = escape(text, string=True)
        assert len(doc.splitlines()) == 1
        tree = ast.parse(f'"""{doc}"""\nx = 1\n')
        assert [type(n).__name__ for n in tree.body] == ["Expr", "Assign"]
        assert tree.body[0].value.value == text  # the docstring holds exactly the text, nothing more
        assert ast.literal_eval(f'"{doc}"') == text


def test_plain_text_is_written_as_it_is():
    assert escape("model.py:12  y = x.relu()  # «é» \t tab") == "model.py:12  y = x.relu()  # «é» \t tab"
    assert escape('C:\\path "q"', string=True) == 'C:\\\\path \\"q\\"'
