"""The corpus readers the approximate counter is calibrated on, on small files written here."""

from __future__ import annotations

from pathlib import Path

from corpus_more import po_messages


def test_po_messages_reads_translations_across_lines_and_plural_forms(tmp_path: Path) -> None:
    catalogue = tmp_path / "django.po"
    catalogue.write_text(
        'msgid ""\nmsgstr ""\n"Project-Id-Version: Django\\n"\n"Language: el\\n"\n\n'
        '#: forms.py:10\nmsgid "Enter a valid value."\nmsgstr "Εισάγετε μια έγκυρη τιμή."\n\n'
        'msgid ""\n"A long message "\n"on two lines."\nmsgstr ""\n"Ένα μεγάλο μήνυμα "\n"σε δύο γραμμές \\"εδώ\\"."\n\n'
        'msgid "%(count)d item"\nmsgid_plural "%(count)d items"\nmsgstr[0] "%(count)d στοιχείο"\n'
        'msgstr[1] "%(count)d στοιχεία"\n\nmsgid "Untranslated"\nmsgstr ""\n',
        encoding="utf-8",
    )
    assert po_messages(catalogue) == [
        "Εισάγετε μια έγκυρη τιμή.", 'Ένα μεγάλο μήνυμα σε δύο γραμμές "εδώ".', "%(count)d στοιχείο",
        "%(count)d στοιχεία",
    ]
