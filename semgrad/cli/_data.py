"""``semgrad data get``: download the paper's data sets (BBH, GSM8K, LIAR) from their public sources.

Each file comes from a pinned commit of its source repository and is checked against the sha256 listed here
before it takes its final name: it is written to ``<name>.part`` first, a download cut short resumes from
where it stopped (an HTTP ``Range`` request), and a file whose checksum differs is deleted, never kept. The
data directory then holds ``bbh/<task>.json``, ``gsm8k/{train,test}.jsonl`` and ``liar/{train,valid,test}.tsv``,
the layout ``--data-dir`` reads.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import attrs

from ._flags import HelpWithDefaults, add_command

__all__ = ["DATASETS", "SOURCES", "DownloadError", "FileSource", "add_parser", "command", "get"]

#: Bytes in a megabyte, as the progress bar counts them.
_MEGABYTE = 1_000_000


class DownloadError(Exception):
    """A data file could not be downloaded, or what arrived is not the file listed."""


@attrs.frozen
class FileSource:
    """One file of a data set: where it comes from, where it goes under the data directory, and its sha256."""

    url: str
    path: str
    sha256: str


_BBH = "https://raw.githubusercontent.com/suzgunmirac/BIG-Bench-Hard/9ee07bd481feebf959a6b59d61ea57bdcf30964d/bbh"
_GSM8K = (
    "https://raw.githubusercontent.com/openai/grade-school-math/3101c7d5072418e28b9008a6636bde82a006892c"
    "/grade_school_math/data"
)
_LIAR = (
    "https://raw.githubusercontent.com/nishitpatel01/Fake_News_Detection/880a2782ab627c10e4f9cf98c3d753d48439a9d1"
    "/liar_dataset"
)
_BBH_SHA256 = {
    "boolean_expressions": "ea6c754ec005e2d3f2d085d349a740f593b5764f32ea4638ffed4cfc0061b12a",
    "causal_judgement": "6e8bca44dd402008ed41c07a3d0a1d5e7b03db7001a7e002fcdf4c60985ea081",
    "date_understanding": "0148d4ac5fca05b2f82373e5fef7208e15363b9c6079493034d77b3dab496bf5",
    "disambiguation_qa": "cf06df9ebf911b883671cb1b35d3fbd1a1c306b19b9e9a012407e596c85fe8c6",
    "dyck_languages": "3f9badedf15c2be1ce53d94fdf016299bb30ba231ef087ab9f51a7ed6d0bdc25",
    "formal_fallacies": "4c1adb664821157faade1d4153685403afcc02648f3c180a608a18f17f589629",
    "geometric_shapes": "07be68a124420caa2ebc0b2c858ad79fc55c5c8806170e496e1e17ebfb11f31c",
    "hyperbaton": "b6d7f55c75f5d02f2987a4f3123802dfa093872089a56a334144aae8a7264fdc",
    "logical_deduction_five_objects": "d2df31394b903b7f0e085d42a69572a092987856eac076799017d70ef266fa8f",
    "logical_deduction_seven_objects": "2896c7e3482eea318dd37bcc370d24ec3cc91e8374c1784287b5dbd38a529e33",
    "logical_deduction_three_objects": "e590fae72e3a6041fbd23bd8ff6b74baf44ca563f6ba40a041c55e7b867c1681",
    "movie_recommendation": "a8b53a87ee21a865b7248e694f388a9b8f7cf6b839b11d44796a2dd3fc088983",
    "multistep_arithmetic_two": "c9d5a6433c9b78256422a15c78463949c8bec8d85607aa28b52d7234ad4a8595",
    "navigate": "b7944dfd3c81da5c4815bd75b00d6fa3c64140823498e78ed496f4c3d36f7f0d",
    "object_counting": "8acef14dbbdd40d2326ef7755750b6b5fe919fef06276af1bab3f1c297f022ff",
    "penguins_in_a_table": "bb87ee449698eee51215e025a453b1bcb2f5e6589c2063b2c79e68b8f0655228",
    "reasoning_about_colored_objects": "0a8850cf95166020fce7a78244026ceedd7ea839302471512b4f8744e85a6a49",
    "ruin_names": "b6f723aef2bafdd4c7bfc3c7e0329c7e8a8279391a609969c8ed76c9319f5f7f",
    "salient_translation_error_detection": "becf3eb8dd53c821a555ecd5c1334ecd93eb25f980e63be963c518e7138de5da",
    "snarks": "54a0661fe2de06167645a4965e6bcf963c4ba307e76262a7c750998b0e3d0d0e",
    "sports_understanding": "63ca262858f6176864515cd8cf53cdaa40839ebecc155b726d77930855d167bf",
    "temporal_sequences": "92a1189faaa84aacc4c405aaa13f13f48c2992eb884772eedb622505252baef5",
    "tracking_shuffled_objects_five_objects": "2063a46a4fb484236ed4310523606543a3e1dd4a4dc34eda65d407910ece25a5",
    "tracking_shuffled_objects_seven_objects": "b59fd05b850c37cf57cb514ae1e6975c00b1638ade2291722056b2af3c54084d",
    "tracking_shuffled_objects_three_objects": "546cc7bf10c6a01a6a4c17ae28a4966485f21f29fd5d111f37858ec78e354f6b",
    "web_of_lies": "3e60323f8514a107fdb4edf35f8832a9171c5a09c0eaa47823559de905e8ab8b",
    "word_sorting": "2a6132d2c99f00d0d2eb1113ac6b4a918bd969d863c48749210d969713db8d43",
}
_SHA256 = {
    "gsm8k/train.jsonl": "17f347dc51477c50d4efb83959dbb7c56297aba886e5544ee2aaed3024813465",
    "gsm8k/test.jsonl": "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14",
    "liar/train.tsv": "23ef8cb7ff57b25c941100d0744039cebc595d65a67ea190f72b330a658d8c36",
    "liar/valid.tsv": "8dd3d7ed1a11e78ed7df090c9eddb0f91147f895850c78d49dd7b4e88fd09a16",
    "liar/test.tsv": "ee41e2c741e0019216952625145af8c4aa8c8d3057ec68284b134267bb845e6f",
}

#: The files of each data set, pinned to a commit of its public source and checked by sha256.
SOURCES: Mapping[str, tuple[FileSource, ...]] = {
    "bbh": tuple(FileSource(f"{_BBH}/{task}.json", f"bbh/{task}.json", sha) for task, sha in _BBH_SHA256.items()),
    "gsm8k": (
        FileSource(f"{_GSM8K}/train.jsonl", "gsm8k/train.jsonl", _SHA256["gsm8k/train.jsonl"]),
        FileSource(f"{_GSM8K}/test.jsonl", "gsm8k/test.jsonl", _SHA256["gsm8k/test.jsonl"]),
    ),
    "liar": tuple(
        FileSource(f"{_LIAR}/{f}.tsv", f"liar/{f}.tsv", _SHA256[f"liar/{f}.tsv"]) for f in ("train", "valid", "test")
    ),
}
DATASETS = ("bbh", "gsm8k", "liar")

#: What each data set's terms are, printed after it arrives.
TERMS = {
    "bbh": "BIG-Bench Hard (Suzgun et al.), MIT license",
    "gsm8k": "GSM8K (Cobbe et al.), MIT license",
    "liar": "LIAR (Wang, 2017): no open license; for research use only, the original sources keep the copyright",
}

_CHUNK = 64 * 1024
_TIMEOUT = 60.0


def add_parser(commands: Any) -> None:
    """Add ``data`` (with its one action, ``get``) to the subcommands."""
    data = add_command(commands, "data", help="download the paper's data sets (BBH, GSM8K, LIAR)")
    data.set_defaults(func=command)
    actions = data.add_subparsers(dest="action", required=True)
    get_parser = add_command(
        actions,
        "get",
        help="download data sets into a data directory, checksummed and resumable",
        description=(
            "Download BBH, GSM8K or LIAR from their public sources (pinned commits on GitHub) into DIR, "
            "checking each file's sha256; run it again to resume a download that was cut short. "
            "Then: semgrad run bbh:navigate --data-dir DIR."
        ),
        formatter_class=HelpWithDefaults,
    )
    get_parser.add_argument("datasets", nargs="+", choices=DATASETS, metavar="{bbh,gsm8k,liar}")
    get_parser.add_argument("--dir", default="data", help="the data directory (bbh/, gsm8k/ and liar/ go in it)")
    get_parser.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    """Download each data set named on the command line."""
    directory = Path(args.dir)
    for name in dict.fromkeys(args.datasets):
        get(name, directory)
        print(f"{name}: {len(SOURCES[name])} files in {directory / name} ({TERMS.get(name, '')})")
    return 0


def get(
    name: str,
    directory: Path,
    *,
    sources: Mapping[str, tuple[FileSource, ...]] | None = None,
    attempts: int = 3,
    progress: IO[str] | None = None,
) -> tuple[Path, ...]:
    """Download the data set `name` into `directory` and return its files' paths.

    A file already there with the listed checksum is kept; a partial download (``.part``) is resumed.

    Raises:
        DownloadError: The server could not be reached `attempts` times in a row, a file arrived with another
            checksum (its download is deleted), or a file in the way has another checksum.
    """
    table = SOURCES if sources is None else sources
    if name not in table:
        raise DownloadError(f"unknown data set {name!r}; choose from {', '.join(table)}")
    stream = sys.stderr if progress is None else progress
    return tuple(_get_file(source, directory, attempts, stream) for source in table[name])


def _get_file(source: FileSource, directory: Path, attempts: int, progress: IO[str]) -> Path:
    final = directory / source.path
    if final.is_file():
        if _sha256(final) == source.sha256:
            print(f"{source.path}: already there, checksum ok", file=progress)
            return final
        raise DownloadError(
            f"{final} exists but is not the listed file (its sha256 differs); move it away and run again"
        )
    final.parent.mkdir(parents=True, exist_ok=True)
    part = final.with_name(final.name + ".part")
    for attempt in range(1, attempts + 1):
        try:
            _download(source, part, progress)
            break
        except (OSError, http.client.HTTPException) as error:
            reason = getattr(error, "reason", None) or error
            if attempt == attempts:
                have = part.stat().st_size if part.exists() else 0
                raise DownloadError(
                    f"{source.url}: {reason} ({have} bytes kept in {part}; run the same command again to resume)"
                ) from None
            print(f"\n{source.path}: {reason}; resuming (attempt {attempt + 1} of {attempts})", file=progress)
    digest = _sha256(part)
    if digest != source.sha256:
        part.unlink()
        raise DownloadError(
            f"{source.url}: checksum mismatch (sha256 {digest}, expected {source.sha256}); the download was deleted"
        )
    os.replace(part, final)
    return final


def _download(source: FileSource, part: Path, progress: IO[str]) -> None:
    """Fetch `source` into `part`, continuing from its current size when the server honours a Range request."""
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(source.url, headers={"User-Agent": "semgrad-data-get"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=_TIMEOUT)  # noqa: S310 - the URLs are our own table's
    except urllib.error.HTTPError as error:
        if error.code == 416 and have:  # nothing left to fetch: the part is whole (the checksum decides)
            return
        raise DownloadError(f"{source.url}: HTTP {error.code} {error.reason}") from None
    with response:
        resumed = have and response.status == 206
        if not resumed:
            have = 0
        length = response.headers.get("Content-Length")
        total = have + int(length) if length and length.isdigit() else None
        with part.open("ab" if resumed else "wb") as out:
            line = _Progress(source.path, have, total, progress)
            while chunk := response.read(_CHUNK):
                out.write(chunk)
                line.advance(len(chunk))
            line.done()
        if total is not None and part.stat().st_size < total:
            raise ConnectionResetError(f"the connection closed after {part.stat().st_size} of {total} bytes")


class _Progress:
    """One progress line on stderr per file: rewritten in place on a terminal, printed once when it is done."""

    def __init__(self, name: str, have: int, total: int | None, stream: IO[str]) -> None:
        self.name, self.have, self.total, self.stream = name, have, total, stream
        self.live = bool(getattr(stream, "isatty", lambda: False)())
        self.shown = 0.0

    def text(self) -> str:
        done = f"{self.have / _MEGABYTE:.2f} MB"
        if not self.total:
            return f"{self.name}: {done}"
        share = min(self.have / max(self.total, 1), 1.0)
        bar = "#" * round(20 * share)
        return f"{self.name}: [{bar:-<20}] {done} of {self.total / _MEGABYTE:.2f} MB ({int(100 * share)}%)"

    def advance(self, n: int) -> None:
        self.have += n
        now = time.monotonic()
        if self.live and now - self.shown >= 0.1:
            self.shown = now
            self.stream.write(f"\r{self.text()}")
            self.stream.flush()

    def done(self) -> None:
        self.stream.write(f"\r{self.text()}\n" if self.live else f"{self.text()}\n")
        self.stream.flush()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
