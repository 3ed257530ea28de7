"""More corpora for the approximate counter, each document labelled with the source it came from.

``evaluation_docs()`` is what ``fit_approximate.py`` fits and evaluates on by leaving whole sources out: the
documents of ``corpus.build`` (each of its kinds and splits one source), and

- ``cldr``: babel's CLDR locale data, one document per locale and category (language names, territory names,
  calendar words, currency names): text in every script a CLDR locale is written in (Ethiopic, Syriac, Thaana,
  Cherokee, Yi, Khmer, Myanmar, Tibetan...). Each category is a source;
- ``ui``: Django's translation catalogues (``django/conf/locale/<lang>/LC_MESSAGES/django.po`` and those of
  ``django.contrib`` apps): real sentences of user interfaces in about a hundred languages, translated by people
  (Greek, Georgian, Armenian, Amharic, every Indic script, Khmer, Burmese...). Each catalogue (core, admin,
  auth, humanize, admindocs, gis) is a source (catalogues in Latin script left out), so a language's text from
  one catalogue is estimated by weights fitted on the others;
- ``lorem``: faker's per-locale word lists made into paragraphs (Greek, Armenian, Hebrew, Thai, Bengali...);
- ``data``: what agents carry in tool outputs, generated (base64, hex digests, UUIDs, JWTs, URLs, CSV of numbers,
  logs with timestamps, real Python stack traces, box-drawing diagrams, minified JSON) or read from installed
  packages (``RECORD`` files: CSV of paths and base64 hashes; JSON files shipped in packages); every generator
  and every package file type is a source;
- ``random``: adversarial strings per script, characters drawn uniformly from the assigned code points of the
  script's blocks (``unicodedata``), with and without spaces; one source per script group. Not used by the
  estimate (no one writes them); safe mode must bound them.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import random
import sys
import sysconfig
import traceback
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from corpus import SPLITS, Doc, build, package_dir

from ctxwin.counters._approximate.scripts import GROUPS, script_counts

_DOC_BYTES = 4_000
# Script groups after Latin-1 and Latin extended (``GROUPS`` starts with those two).
_LATIN_GROUPS = 2
_VIETNAMESE = GROUPS.index("vietnamese")


def _pieces(words: list[str], separator: str, rng: random.Random, limit: int = 4) -> Iterator[str]:
    """Up to ``limit`` documents of words joined by ``separator``, each up to a random size below ``_DOC_BYTES``."""
    start = 0
    for _ in range(limit):
        if start >= len(words):
            return
        size, end, n = rng.randint(150, _DOC_BYTES), start, 0
        while end < len(words) and n < size:
            n += len(words[end].encode()) + len(separator)
            end += 1
        yield separator.join(words[start:end])
        start = end


def _other_scripts(text: str) -> bool:
    """Whether most of ``text`` is in scripts other than Latin, or it is Vietnamese (or Yoruba): at least one character
    in ten a tone-marked vowel of U+1E80-1EFF, which the "vietnamese" group prices apart from other accented letters."""
    counts = script_counts(text, text.encode())
    return sum(counts[_LATIN_GROUPS:]) * 2 > len(text) or counts[_VIETNAMESE] * 10 > len(text)


def _cldr_docs() -> Iterator[Doc]:
    try:
        from babel import Locale, localedata
    except ImportError:
        return
    rng = random.Random("cldr")
    identifiers = sorted(i for i in localedata.locale_identifiers() if i.count("_") == 0 or ("_" in i
                         and i.split("_")[1].istitle() and len(i.split("_")[1]) == 4 and i.count("_") == 1))
    for identifier in identifiers:
        locale = Locale.parse(identifier)
        categories: dict[str, list[str]] = {
            "cldr-languages": list(locale.languages.values()),
            "cldr-territories": list(locale.territories.values()),
            "cldr-calendar": [str(v) for width in ("wide", "abbreviated") for kind in ("months", "days")
                              for v in dict(getattr(locale, kind).get("format", {}).get(width, {})).values()],
            "cldr-currencies": list(locale.currencies.values()),
        }
        for source, words in categories.items():
            for text in _pieces([w for w in words if w], rng.choice((", ", " ", "\n")), rng, 2):
                # Names in Latin script are not what people write (and the corpus has Latin prose): other scripts only.
                if _other_scripts(text):
                    yield Doc("cldr", source, text)


# Django's catalogues used, each a source: the directory holding ``locale/`` under the ``django`` package.
_DJANGO_CATALOGUES = {"core": "conf", "admin": "contrib/admin", "auth": "contrib/auth",
                      "humanize": "contrib/humanize", "admindocs": "contrib/admindocs", "gis": "contrib/gis"}


def po_messages(path: Path) -> list[str]:
    """The translated messages (``msgstr``, plural forms too) of a gettext ``.po`` file, header left out."""
    messages: list[str] = []
    current: list[str] | None = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("msgstr"):
            current = [line.partition(" ")[2]]
            messages.append("")
        elif line.startswith('"') and current is not None:
            current.append(line)
        else:
            current = None
        if current is not None:
            messages[-1] = "".join(json.loads(piece) for piece in current if piece.startswith('"'))
    return [m for m in messages if m and not m.startswith("Project-Id-Version")]


def _po_docs() -> Iterator[Doc]:
    try:
        import django
    except ImportError:
        return
    root = Path(django.__file__).parent
    rng = random.Random("django-po")
    for name, folder in _DJANGO_CATALOGUES.items():
        for catalogue in sorted((root / folder / "locale").glob("*/LC_MESSAGES/*.po")):
            messages = po_messages(catalogue)
            rng.shuffle(messages)
            for text in _pieces(messages, rng.choice((" ", "\n")), rng, 2):
                # Latin-script languages have prose sources of their own (chatterbot-corpus); UI text in them, dense
                # in placeholders, would set the ASCII bounds of safe mode.
                if _other_scripts(text):
                    yield Doc("ui", f"django-{name}", text)


# Other packages' gettext catalogues, each package a source: (source, package, glob of its catalogues). Plone's
# ``plonelocales.po`` (language and country names, like CLDR's) is left out.
_PACKAGE_CATALOGUES = (
    ("plone", "plone.app.locales", "locales/*/LC_MESSAGES/[!p]*.po"),
    ("plone", "plone.app.locales", "locales/*/LC_MESSAGES/plone.po"),
    ("sphinx", "sphinx", "locale/*/LC_MESSAGES/sphinx.po"),
    ("allauth", "allauth", "locale/*/LC_MESSAGES/django.po"),
)
# Documents per catalogue and language of those packages (Plone's Hindi and Tamil catalogues hold 300 KB).
_PACKAGE_SAMPLES = 4


def _package_po_docs() -> Iterator[Doc]:
    """UI sentences of other packages' catalogues (Plone, Sphinx, django-allauth): Thai, Tamil, Hindi, Kannada,
    Telugu, Bengali, Burmese, Georgian... translated by other people than Django's translators. Messages without
    a non-ASCII character are left out (in these catalogues, untranslated message ids such as
    ``help_navigation_root``)."""
    for source, package, pattern in _PACKAGE_CATALOGUES:
        root = package_dir(package)
        if root is None:
            continue
        rng = random.Random(f"{source}-po")
        for catalogue in sorted(root.glob(pattern)):
            messages = [m for m in po_messages(catalogue) if not m.isascii()]
            rng.shuffle(messages)
            for text in _pieces(messages, rng.choice((" ", "\n")), rng, _PACKAGE_SAMPLES):
                if _other_scripts(text):
                    yield Doc("ui", source, text)


# The share of the speakers of a script's most spoken language that a language of the script needs to be taken.
_SPEAKERS_SHARE = 1 / 20


def _udhr_docs() -> Iterator[Doc]:
    """Running prose: the sample text that gflanguages (Google Fonts' language data) holds for each language, the
    opening of the Universal Declaration of Human Rights in that language (0.5-2 KB), one document per language not
    written in Latin script. Of each script, the most spoken language and those with at least ``_SPEAKERS_SHARE``
    of its speakers (Devanagari: Hindi, Marathi, Bhojpuri; Han: Mandarin, Wu, Cantonese): minority languages cost
    more per character than the major languages of their script (in o200k_base, Hindi costs a fifth less than the
    other Devanagari languages), and they would be most of the Cyrillic, Arabic and Devanagari documents."""
    try:
        import gflanguages
    except ImportError:
        return
    by_script: dict[str, list[tuple[int, str]]] = {}
    for _, language in sorted(gflanguages.LoadLanguages().items()):
        text = language.sample_text.specimen_16
        if text and _other_scripts(text):
            counts = script_counts(text, text.encode())
            script = GROUPS[max(range(len(GROUPS)), key=counts.__getitem__)]
            by_script.setdefault(script, []).append((language.population, text))
    for languages in by_script.values():
        most = max(population for population, _ in languages)
        taken = [(population, text) for population, text in languages if population >= most * _SPEAKERS_SHARE]
        speakers = sum(math.sqrt(population + 1) for population, _ in taken)
        for population, text in taken:
            # The script's documents weigh in the fit as many as they are, shared by the square root of their
            # speakers (+1: gflanguages gives Syriac none): Hindi 1.8, Marathi 0.7, Bhojpuri 0.4.
            yield Doc("udhr", "gflanguages", text, len(taken) * math.sqrt(population + 1) / speakers)


def _lorem_docs() -> Iterator[Doc]:
    try:
        from faker import Faker
        from faker.providers import lorem
    except ImportError:
        return
    root = Path(lorem.__file__).parent
    for locale in sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file()):
        fake = Faker(locale)
        fake.seed_instance(7)
        for _ in range(4):
            yield Doc("lorem", "faker-lorem", "\n\n".join(fake.paragraphs(nb=fake.random_int(1, 12))))


def _stack_trace(rng: random.Random) -> str:
    """A real traceback from the standard library, a few frames deep."""
    import csv
    import io
    import json as json_module

    failures: list[Callable[[], object]] = [
        lambda: json_module.loads("{" * rng.randint(1, 5) + '"key": [1, 2,'),
        lambda: list(csv.reader(io.StringIO('a,"b\n'), strict=True)),
        lambda: int(f"12x{rng.randint(0, 999)}"),
        lambda: {"a": 1}[f"missing_{rng.randint(0, 99)}"],
    ]
    try:
        rng.choice(failures)()
    except Exception:
        return traceback.format_exc()
    return ""


def _box(rng: random.Random) -> str:
    """A box-drawing table, as CLIs and Markdown diagrams draw them."""
    widths = [rng.randint(4, 14) for _ in range(rng.randint(2, 6))]
    line = "┌" + "┬".join("─" * w for w in widths) + "┐"
    rows = [line]
    for _ in range(rng.randint(2, 20)):
        rows.append("│" + "│".join(f"{rng.choice(['ok', 'fail', str(rng.randint(0, 10**6))]):<{w}}"[:w]
                                     for w in widths) + "│")
    rows.append("└" + "┴".join("─" * w for w in widths) + "┘")
    return "\n".join(rows)


def _jwt(rng: random.Random) -> str:
    def part(data: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    claims = {"sub": str(uuid.UUID(int=rng.getrandbits(128))), "iat": rng.randint(10**9, 2 * 10**9),
              "scope": "read write", "iss": "https://auth.example.com/"}
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.{part(rng.randbytes(24).hex())}"


def _log_line(rng: random.Random) -> str:
    level = rng.choice(["INFO", "WARN", "ERROR", "DEBUG"])
    return (f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
            f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z {level} "
            f"[worker-{rng.randint(1, 64)}] request_id={uuid.UUID(int=rng.getrandbits(128))} "
            f"latency_ms={rng.random() * 900:.2f} path=/api/v{rng.randint(1, 3)}/items/{rng.getrandbits(32)}")


# Generators of data-like lines: (source, one line or block).
_DATA: dict[str, Callable[[random.Random], str]] = {
    "data-base64": lambda r: base64.b64encode(r.randbytes(r.randint(30, 600))).decode(),
    "data-hex": lambda r: f"{hashlib.sha256(r.randbytes(8)).hexdigest()}  dist/pkg-{r.randint(0, 99)}.whl",
    "data-uuid": lambda r: str(uuid.UUID(int=r.getrandbits(128))),
    "data-jwt": _jwt,
    "data-url": lambda r: (f"https://cdn{r.randint(1, 9)}.example.org/{r.choice(['img', 'v2/files', 'u'])}/"
                           f"{r.getrandbits(48):x}?token={base64.urlsafe_b64encode(r.randbytes(16)).decode()}"
                           f"&ts={r.randint(10**9, 2 * 10**9)}"),
    "data-csv": lambda r: ",".join(f"{r.uniform(-1e4, 1e4):.{r.randint(0, 6)}f}" for _ in range(r.randint(3, 12))),
    "data-log": _log_line,
    "data-traceback": _stack_trace,
    "data-box": _box,
    "data-minified-json": lambda r: json.dumps(
        {"id": str(uuid.UUID(int=r.getrandbits(128))), "sha": f"{r.getrandbits(160):040x}",
         "n": r.randint(0, 10**9), "tags": [f"t{r.randint(0, 99)}" for _ in range(r.randint(0, 5))]},
        separators=(",", ":")),
}


def _data_docs() -> Iterator[Doc]:
    for source, make in _DATA.items():
        rng = random.Random(source)
        for _ in range(30):
            size, lines, n = rng.randint(100, 6_000), [], 0
            while n < size:
                lines.append(make(rng))
                n += len(lines[-1]) + 1
            yield Doc("data", source, "\n".join(lines))
    yield from _package_data_docs()


def _package_data_docs() -> Iterator[Doc]:
    """``RECORD`` files (CSV: path, sha256 in base64, size) and JSON files from the interpreter's site-packages."""
    site = Path(sysconfig.get_paths()["purelib"])
    rng = random.Random("package-data")
    for source, pattern in (("pkg-record", "*.dist-info/RECORD"), ("pkg-json", "**/*.json")):
        paths = sorted(p for p in site.glob(pattern) if "ctxwin" not in str(p))
        for path in rng.sample(paths, min(40, len(paths))):
            text = path.read_text(encoding="utf-8", errors="replace")
            cut = text.encode()[: rng.randint(200, 12_000)].decode(errors="ignore")
            if len(cut) > 50:
                yield Doc("data", source, cut)


@functools.cache
def script_characters() -> dict[str, tuple[str, ...]]:
    """Assigned, visible characters (letters, marks, numbers, punctuation, symbols) of each script group."""
    chars: dict[str, list[str]] = {}
    for cp in [*range(0x80, 0xD800), *range(0xF900, 0x10000), *range(0x1F000, 0x1FB00), *range(0x20000, 0x20400)]:
        ch = chr(cp)
        if unicodedata.category(ch)[0] in "LMNPS":
            counts = script_counts(ch, ch.encode())
            chars.setdefault(next(g for g, n in zip(GROUPS, counts, strict=True) if n), []).append(ch)
    return {group: tuple(members) for group, members in chars.items()}


def _random_docs() -> Iterator[Doc]:
    for group, chars in script_characters().items():
        rng = random.Random(f"random-{group}")
        for i in range(8):
            n = int(10 ** rng.uniform(1, 3.2))
            spaced = i % 2 == 1
            text = "".join(rng.choice(chars) + (" " if spaced and rng.random() < 0.2 else "") for _ in range(n))
            yield Doc("random", f"random-{group}", text)


@functools.cache
def evaluation_docs() -> tuple[Doc, ...]:
    """Every document, labelled by source (``corpus.build``'s documents get ``<kind>-<split>``)."""
    docs = [Doc(d.kind, f"{d.kind}-{split}", d.text) for split in SPLITS for d in build(split)]
    for more in (_cldr_docs, _po_docs, _package_po_docs, _udhr_docs, _lorem_docs, _data_docs, _random_docs):
        docs += more()
    return tuple(d for d in docs if d.text.strip())
