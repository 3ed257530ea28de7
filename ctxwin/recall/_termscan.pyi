# The C scanner of recall's terms (ctxwin/recall/_termscan.c); _terms.py holds the pure-Python one.

def term_counts(
    texts: list[str], terms: list[str], whole: list[bool], unspaced: tuple[tuple[int, int], ...], /
) -> list[tuple[int, ...] | None]: ...
