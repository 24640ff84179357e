"""Format check for wav2vec2 data (standard library only: the host preflight runs it).

FlagPerf's layout (training/benchmarks/wav2vec2/pytorch/scripts/generate_filelists.sh, NVIDIA's wav2vec2 recipe):
LibriSpeech's FLAC files and one fairseq manifest per subset at the top of data_dir:
    <data_dir>/train-full-960.tsv   the training utterances (train-clean-100, -360 and train-other-500 together)
    <data_dir>/dev-other.tsv        the held-out utterances
A manifest's first line is the folder the audio paths are relative to; each further line is
"<path>\\t<samples>": a 16 kHz mono FLAC (or WAV) file and its length in samples. A relative folder is taken from
data_dir. The transcripts (.wrd, .ltr) beside them are not read: pretraining uses the audio only.
"""

from __future__ import annotations

from pathlib import Path

TRAIN_MANIFEST, VALID_MANIFEST = "train-full-960.tsv", "dev-other.tsv"  # FlagPerf's train_subset, valid_subset
SAMPLE_RATE = 16_000
FILES_CHECKED = 100  # a manifest's first audio files the check looks for (the rank opens the others)
LAYOUT = (f"{TRAIN_MANIFEST} and {VALID_MANIFEST}: fairseq manifests, the audio folder on the first line, then "
          f"'<path>\\t<samples>' a line for each 16 kHz mono FLAC of LibriSpeech")


def audio_root(manifest: Path, first_line: str) -> Path:
    """The folder a manifest's audio paths are relative to: its first line, relative to the manifest's folder when
    not absolute."""
    root = Path(first_line.strip())
    return root if root.is_absolute() else manifest.parent / root


def read_manifest(manifest: Path) -> tuple[Path, list[tuple[str, int]]]:
    """(audio folder, [(relative path, samples)]); ValueError naming the file and line when malformed."""
    try:
        lines = manifest.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ValueError(f"{manifest}: missing; expected {LAYOUT}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{manifest}: not readable UTF-8 text ({exc}); expected {LAYOUT}") from None
    if not lines or not lines[0].strip():
        raise ValueError(f"{manifest}: no audio folder on its first line; expected {LAYOUT}")
    rows = []
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        fields = line.rstrip("\n").split("\t")
        if len(fields) != 2 or not fields[1].strip().isdigit():
            raise ValueError(f"{manifest}: line {number} is {line[:80]!r}; expected '<path>\\t<samples>'")
        rows.append((fields[0], int(fields[1])))
    return audio_root(manifest, lines[0]), rows


def manifest_problems(manifest: Path, min_samples: int) -> list[str]:
    try:
        root, rows = read_manifest(manifest)
    except ValueError as exc:
        return [str(exc)]
    if not root.is_dir():
        return [f"{manifest}: its audio folder {root} is not a directory"]
    kept = [path for path, samples in rows if samples >= min_samples]
    if not kept:
        return [f"{manifest}: no utterance of at least min_sample_size {min_samples} samples ({len(rows)} listed)"]
    missing = [path for path in kept[:FILES_CHECKED] if not (root / path).is_file()]
    return [f"{manifest}: {len(missing)} of its first {min(len(kept), FILES_CHECKED)} audio files are missing "
            f"under {root} (the first: {missing[0]})"] if missing else []


def check_data_dir(data_dir: str | None, params: dict) -> list[str]:
    """Problems with a wav2vec2 data dir, each naming the file and the expected layout; [] when fine."""
    if params.get("synthetic"):
        return []
    if not data_dir:
        return [f"wav2vec2 needs data_dir with {LAYOUT}, or synthetic: true"]
    root = Path(data_dir)
    if not root.is_dir():
        return [f"{data_dir}: not a directory; expected {LAYOUT}"]
    return (manifest_problems(root / TRAIN_MANIFEST, int(params.get("min_sample_size", 0)))
            + manifest_problems(root / VALID_MANIFEST, 0))
