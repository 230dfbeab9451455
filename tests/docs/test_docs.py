"""README.md and docs/*.md's python blocks are collected from here by
tests/docs/conftest.py (pytest-markdown-docs); this file only anchors them
in the suite."""


def test_every_doc_file_is_collected():
    from tests.docs.conftest import DOCS, MarkdownTextFile
    assert MarkdownTextFile is not None, "pip install '.[test]' (pytest-markdown-docs)"
    assert any(p.name == "README.md" for p in DOCS) and len(DOCS) > 5
