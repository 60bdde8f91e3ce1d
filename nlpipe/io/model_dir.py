"""The model-directory format: the one writer and the one reader of ``config.json`` and of the
weight files beside it.

``config.json`` (format 2)::

    stage        the stage the model serves ("pos", "parse", ...); "also_stages": further ones
    arch         the versioned architecture, a key of nlpipe.registry.ARCHS ("biaffine.v1")
    format       2
    language     code of the training data's language ("en"; "und" when not given)
    labels       the label set, where the model keeps it in the config
    model        hyper-parameters: what a loader reads besides the weight files
    training     provenance, built by nlpipe.io.provenance.training_block:
                   data            {role: {"path", "sha256"[, "note"]}}, roles "train", "dev", "test"
                   command         the training command as typed ("nlpipe train pos ...")
                   nlpipe_version  the version that trained it
                   date            UTC, ISO 8601
                   scores          {"dev_<metric>": .., "test_<metric>": ..} (test when measured)
                 plus the trainer's own settings (seed, epochs, options, history, notes)

Format-1 directories (before the redesign of issue 23) are read too: :func:`read_config` upgrades
their config in memory (language "und", their training notes kept, data without sha256).

Weight files are plain: JSON, ``.npz`` (read with ``allow_pickle=False``), torch tensors (read with
``weights_only=True``), one word a line. Reading never runs code from a file, and reads only
regular files inside the model's folder (a file name in ``config.json`` or a symlink cannot point
elsewhere, to ``/dev/zero`` or a FIFO say), of at most :data:`MAX_FILE` bytes, whose arrays declare
no more than that either (:func:`_check_zip`); ``config.json`` is checked against a schema of
types and ranges (:func:`check_config`). Writes go to a
temporary file renamed into place, so an interrupted save leaves the previous file whole. Any
failure to read becomes one :class:`~nlpipe.errors.ModelError` naming the file.

A trainer builds its whole directory the same way (:func:`builds_model`, :func:`building`): in a
temporary folder beside the target, renamed over it at the end, so that a training run that is
interrupted or fails (in its last dev scoring, say) leaves the model it would replace whole.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import io
import json
import math
import os
import pickle
import re
import shutil
import signal
import stat
import tempfile
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, TypeVar, Union

from nlpipe.errors import ModelError, NlpipeError, out_of_memory
from nlpipe.io.outputs import TEMPORARY

MODEL_FORMAT = 2
READS_FORMATS = (1, 2)
CONFIG = "config.json"
UNDETERMINED = "und"     # ISO 639-2 "undetermined": a model trained without --lang
TRAINING_KEYS = ("data", "command", "nlpipe_version", "date", "scores")
DATA_ROLES = ("train", "dev", "test")
MAX_FILE = 1 << 30           # the largest model file read, and the most its arrays may unpack to
MAX_CONFIG = 16 << 20        # the largest config.json read
MAX_DEPTH = 32               # the deepest nesting of JSON objects and lists in a config
# config "model" entries that size a network: integers in a range (0 would divide by zero, 1e30
# would allocate without end)
SIZES = {"heads": (1, 1024), "layers": (1, 1024), "d_model": (1, 1 << 16), "ffn": (1, 1 << 18),
         "hidden": (1, 1 << 16), "width": (1, 1 << 16), "channels": (1, 1 << 16), "emb": (1, 1 << 16),
         "word_dim": (1, 1 << 16), "shape_dim": (0, 1 << 16), "affix_dim": (0, 1 << 16), "tag_dim": (0, 1 << 16),
         "arc_dim": (1, 1 << 16), "rel_dim": (1, 1 << 16), "pred_dim": (1, 1 << 16), "role_dim": (1, 1 << 16),
         "n_blocks": (1, 1024), "max_len": (1, 1 << 20), "pos_layer": (0, 1024), "parse_layer": (0, 1024),
         "templates": (0, 1 << 16), "second_templates": (0, 1 << 16), "dilations": (1, 1 << 16)}
# null where the model has no such part (no second pass, no affixes, no syntactic head)
OPTIONAL_SIZES = ("templates", "second_templates", "affix_dim", "shape_dim", "tag_dim", "pos_layer", "parse_layer")
# config "model" entries that name a file or folder of the model (joined to its folder by the loaders)
FILE_KEYS = ("punkt", "words", "rules", "chars", "multiwords", "weights", "second", "feats", "lemma")
# a language tag: "en", "und", "en-US", "zh_Hant"
_LANGUAGE = re.compile(r"[A-Za-z]{2,8}(?:[-_][A-Za-z0-9]{1,8})*")


# ---------------------------------------------------------------------------------------------
# config.json

def read_config(model_dir: Path, stage: Optional[str] = None) -> Dict[str, Any]:
    """Read and check ``config.json`` of a model directory (a format-1 one upgraded in memory);
    with ``stage``, refuse a model for another stage."""
    path = Path(model_dir) / CONFIG
    if not path.is_file():
        raise ModelError(f"{model_dir}: not a model directory (no {CONFIG})")
    _check_file(path, MAX_CONFIG)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ModelError(f"{path}: corrupt model configuration ({first_sentence(str(e))})") from None
    except RecursionError:
        raise ModelError(f"{path}: corrupt model configuration (nested too deeply)") from None
    if not isinstance(config, dict) or not isinstance(config.get("stage"), str) \
            or not isinstance(config.get("arch"), str):
        raise ModelError(f"{path}: not an nlpipe model configuration (no 'stage'/'arch')")
    fmt = config.get("format")
    if fmt not in READS_FORMATS:
        newer = isinstance(fmt, int) and fmt > MODEL_FORMAT
        raise ModelError(f"{path}: model format {fmt!r}, this nlpipe reads formats "
                         f"{', '.join(map(str, READS_FORMATS))}; "
                         + ("install a newer nlpipe" if newer else "retrain the model with this nlpipe"))
    if fmt == 1:
        config = upgrade_format_1(config)
    if not isinstance(config.get("language"), str) or not config["language"]:
        raise ModelError(f"{path}: no 'language' (a language code such as \"en\", or \"{UNDETERMINED}\")")
    for key, kind in (("model", dict), ("training", dict), ("labels", list), ("also_stages", list)):
        if key in config and not isinstance(config[key], kind):
            raise ModelError(f"{path}: '{key}' is not a JSON {'object' if kind is dict else 'list'}")
    check_config(config, str(path))
    # A model may serve further stages (LISA predicts predicates and roles): config "also_stages".
    if stage is not None and config["stage"] != stage and stage not in config.get("also_stages", []):
        raise ModelError(f"{model_dir}: a model for stage '{config['stage']}', not '{stage}'")
    return config


def check_config(config: Mapping[str, Any], path: str) -> None:
    """A :class:`ModelError` naming ``path`` and the entry where ``config`` breaks the schema:
    nesting deeper than :data:`MAX_DEPTH`, a number that is not finite, text that is not valid
    Unicode, a language that is not a language tag, ``also_stages`` or ``labels`` that are not
    lists of text, ``training.scores`` that are not numbers by name, a network size of
    :data:`SIZES` out of its range, or a file name in ``model`` that leaves the folder."""
    def bad(where: str, what: str) -> ModelError:
        return ModelError(f"{path}: '{where}' {what}")

    def walk(value: Any, where: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise bad(where, "is nested too deeply")
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise bad(where, "is not valid Unicode text (a lone surrogate)") from None
        elif isinstance(value, float) and not math.isfinite(value):
            raise bad(where, "is not a finite number")
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k, where, depth + 1)
                walk(v, f"{where}.{k}" if where else k, depth + 1)
        elif isinstance(value, list):
            for k, v in enumerate(value):
                walk(v, f"{where}[{k}]", depth + 1)

    walk(dict(config), "", 0)
    if not _LANGUAGE.fullmatch(config["language"]):
        raise bad("language", f"is not a language tag such as \"en\" or \"{UNDETERMINED}\"")
    for key in ("also_stages", "labels"):
        if not all(isinstance(v, str) for v in config.get(key) or []):
            raise bad(key, "is not a list of text")
    scores = (config.get("training") or {}).get("scores")
    if scores is not None and not (isinstance(scores, dict) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) or v is None for v in scores.values())):
        raise bad("training.scores", "is not an object of numbers")
    for key, value in (config.get("model") or {}).items():
        if key in SIZES and not (value is None and key in OPTIONAL_SIZES):
            low, high = SIZES[key]
            for v in value if isinstance(value, list) else [value]:
                if not (isinstance(v, int) and not isinstance(v, bool) and low <= v <= high):
                    raise bad(f"model.{key}", f"must be a whole number from {low} to {high}")
        elif key in FILE_KEYS and value is not None and not (
                isinstance(value, str) and value and not value.startswith(("/", "\\", "~"))
                and ".." not in re.split(r"[/\\]", value) and "\0" not in value):
            raise bad(f"model.{key}", "names a file outside the model folder")


def _check_file(path: Path, limit: int = MAX_FILE) -> None:
    """A :class:`ModelError` unless ``path`` is a regular file in its folder (a symlink may point
    only into that folder) of at most ``limit`` bytes. A missing file passes: reading it says so."""
    path = Path(path)
    real, folder = os.path.realpath(path), os.path.realpath(path.parent)
    if os.path.commonpath([real, folder]) != folder:
        raise ModelError(f"{path}: points outside its model folder (to {real})")
    try:
        st = os.stat(real)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise ModelError(f"{path}: not a regular file")
    if st.st_size > limit:
        raise ModelError(f"{path}: {st.st_size} bytes, more than a model file may have ({limit >> 20} MiB)")


def _check_zip(path: Path) -> None:
    """A :class:`ModelError` when the zip file ``path`` (``.npz``, torch tensors) unpacks to more
    than :data:`MAX_FILE` bytes, or holds an ``.npy`` array whose header declares more elements
    than the member holds; checked before anything is allocated. Not a zip file: passes (reading
    it says what is wrong)."""
    from numpy.lib import format as npy

    try:
        with zipfile.ZipFile(path) as z:
            members = z.infolist()
            total = sum(info.file_size for info in members)
            if total > MAX_FILE:
                raise ModelError(f"{path}: unpacks to {total} bytes, more than a model file may have "
                                 f"({MAX_FILE >> 20} MiB)")
            for info in members:
                if not info.filename.endswith(".npy"):
                    continue
                with z.open(info) as f:   # the header alone: unpacking more takes time
                    raw = f.read(128)
                    size = (10 + int.from_bytes(raw[8:10], "little")) if raw[6:7] == b"\x01" else \
                        (12 + int.from_bytes(raw[8:12], "little"))
                    if len(raw) < size <= 1 << 16:
                        raw += f.read(size - len(raw))
                head = io.BytesIO(raw)
                version = npy.read_magic(head)
                read_header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
                shape, _, dtype = read_header(head)
                count = 1
                for n in shape:
                    count *= n
                if count * dtype.itemsize > info.file_size - head.tell():
                    raise ModelError(f"{path}: array {info.filename[:-4]} declares {count} elements, more than "
                                     "the file holds")
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError, RuntimeError):
        return


def write_config(model_dir: Path, config: Mapping[str, Any]) -> Dict[str, Any]:
    """Check ``config`` against the format, add the format version and write ``config.json``
    (creating the directory); returns what was written. A missing key is a ValueError: a bug of
    the trainer, not the user's."""
    missing = [k for k in ("stage", "arch", "language", "training") if not config.get(k)]
    training = config.get("training")
    if isinstance(training, dict):
        missing += [f"training.{k}" for k in TRAINING_KEYS if k not in training]
    if missing:
        raise ValueError(f"model configuration lacks {', '.join(missing)}")
    head = {"stage": config["stage"], "arch": config["arch"], "format": MODEL_FORMAT, "language": config["language"]}
    out = {**head, **{k: v for k, v in config.items() if k not in head and k != "training"}, "training": training}
    os.makedirs(model_dir, exist_ok=True)
    write_json(Path(model_dir) / CONFIG, out, indent=1)
    return out


def upgrade_format_1(config: Mapping[str, Any]) -> Dict[str, Any]:
    """A format-1 config in format 2: language "und", the training notes kept, the data files
    (format 1 named them under "train"/"dev"/"test" or "data") without sha256, the last of
    several "commands" as the command; unknown nlpipe version and date (None)."""
    out = {k: v for k, v in config.items() if k != "training"}
    out["format"] = MODEL_FORMAT
    out.setdefault("language", UNDETERMINED)
    old = dict(config.get("training") or {})
    data: Dict[str, Any] = {}
    files = old.pop("data") if isinstance(old.get("data"), dict) else {}
    for role in DATA_ROLES:
        name = files.pop(role, None) or old.pop(role, None)
        if isinstance(name, str):
            data[role] = {"path": name, "sha256": None}
    if isinstance(old.get("data"), str):        # a description of the corpus, not a file
        old["corpus"] = old.pop("data")
    old.update({k: v for k, v in files.items() if k not in old})
    commands = old.get("commands")
    command = old.pop("command", None) or (commands[-1] if isinstance(commands, list) and commands else None)
    out["training"] = {"data": data, "command": command, "nlpipe_version": old.pop("nlpipe_version", None),
                       "date": old.pop("date", None), "scores": old.pop("scores", None) or {}, **old}
    return out


# ---------------------------------------------------------------------------------------------
# weight files

@contextlib.contextmanager
def model_errors(model_dir: Path, what: str) -> Iterator[None]:
    """Turn a missing file or unreadable content inside the block into a ModelError about ``what``
    (the damaged or incompatible model in ``model_dir``). A library's own advice (such as loading
    the file unsafely) is never quoted: only the first sentence of its message."""
    try:
        yield
    except FileNotFoundError as e:
        raise ModelError(f"{model_dir}: missing model file {Path(e.filename).name}") from None
    except pickle.UnpicklingError as e:  # what torch's weights_only loader refuses
        if "GLOBAL" in str(e):
            raise ModelError(f"{model_dir}: the {what} holds objects that nlpipe does not load "
                             "(only plain tensors)") from None
        raise ModelError(f"{model_dir}: corrupt or incompatible {what} (not a file of plain tensors)") from None
    except RecursionError:
        raise ModelError(f"{model_dir}: corrupt {what} (nested too deeply)") from None
    except (OSError, RuntimeError) as e:
        if out_of_memory(e):   # torch's allocator under a memory limit: not a damaged file
            raise MemoryError(str(e)) from None
        raise ModelError(f"{model_dir}: corrupt or incompatible {what} ({type(e).__name__}: "
                         f"{first_sentence(str(e))})") from None
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, EOFError, UnicodeDecodeError,
            zipfile.BadZipFile) as e:
        raise ModelError(f"{model_dir}: corrupt or incompatible {what} ({type(e).__name__}: "
                         f"{first_sentence(str(e))})") from None


def first_sentence(message: str, limit: int = 200) -> str:
    """The first sentence (or line) of a library's error message, at most ``limit`` characters."""
    head = re.split(r"(?<=[.!?])\s|\n", message.strip(), maxsplit=1)[0].rstrip(".")
    return head if len(head) <= limit else head[:limit].rsplit(" ", 1)[0] + " ..."


def _read(path: Path, read: Callable[[Path], Any], packed: bool = False) -> Any:
    """``read(path)`` of a model file checked by :func:`_check_file` (and, ``packed``, :func:`_check_zip`)."""
    _check_file(path)
    if packed:
        _check_zip(path)
    with model_errors(Path(path).parent, f"model file {Path(path).name}"):
        return read(Path(path))


def _replace(path: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Write ``path`` through a temporary file in its directory renamed into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_json(path: Path) -> Any:
    """The JSON value in ``path``."""
    return _read(path, lambda p: json.loads(p.read_text(encoding="utf-8")))


def write_json(path: Path, value: Any, indent: Optional[int] = None, sort_keys: bool = False) -> None:
    """Write ``value`` as UTF-8 JSON (compact unless ``indent``), ending in a newline."""
    text = json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys,
                      separators=None if indent is not None else (",", ":"))
    _replace(path, lambda f: f.write((text + "\n").encode("utf-8")))


def read_lines(path: Path) -> List[str]:
    """The lines of a one-entry-a-line UTF-8 file."""
    text = _read(path, lambda p: p.read_text(encoding="utf-8"))
    items = text.split("\n")
    if items and items[-1] == "":
        items.pop()
    return items


def write_lines(path: Path, items: Sequence[str]) -> None:
    """Write one entry a line (entries must not hold a newline)."""
    if any("\n" in s for s in items):
        raise ValueError(f"{path}: an entry holds a newline")
    _replace(path, lambda f: f.write("".join(s + "\n" for s in items).encode("utf-8")))


def read_arrays(path: Path) -> Dict[str, Any]:
    """The numpy arrays of an ``.npz`` file, read without unpickling (object arrays are refused)."""
    import numpy as np

    def read(p: Path) -> Dict[str, Any]:
        arrays = _read_stored_npz(p)
        if arrays is not None:
            return arrays
        with np.load(p, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}

    return _read(path, read, packed=True)


def _read_stored_npz(path: Path) -> Optional[Dict[str, Any]]:
    """The arrays of an uncompressed ``.npz`` (what :func:`write_arrays` writes) read straight from
    the file, each checked against its CRC-32: a third of the time of ``np.load``, whose reads go
    through zipfile a block at a time. None where the file is anything else (compressed, damaged,
    object arrays ...): ``np.load`` then reads it, or says what is wrong."""
    import numpy as np
    from numpy.lib import format as npy

    arrays: Dict[str, Any] = {}
    try:
        with open(path, "rb") as f:
            with zipfile.ZipFile(f) as z:
                members = z.infolist()
            for info in members:
                if info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy") \
                        or info.flag_bits & 0x1:
                    return None
                f.seek(info.header_offset)
                local = f.read(30)
                if len(local) != 30 or local[:4] != b"PK\x03\x04":
                    return None
                f.seek(info.header_offset + 30 + int.from_bytes(local[26:28], "little")
                       + int.from_bytes(local[28:30], "little"))
                data = np.empty(info.file_size, dtype=np.uint8)    # not zeroed first, unlike a bytearray
                if f.readinto(data) != info.file_size or zlib.crc32(data) != info.CRC:
                    return None
                head = io.BytesIO(data[:1 << 16].tobytes())
                version = npy.read_magic(head)
                if version == (1, 0):
                    shape, fortran, dtype = npy.read_array_header_1_0(head)
                elif version == (2, 0):
                    shape, fortran, dtype = npy.read_array_header_2_0(head)
                else:
                    return None
                count = 1
                for n in shape:
                    count *= n
                if dtype.hasobject or head.tell() + count * dtype.itemsize != len(data):
                    return None
                array = np.frombuffer(data, dtype=dtype, count=count, offset=head.tell())
                arrays[info.filename[:-4]] = array.reshape(shape, order="F" if fortran else "C")
    except (OSError, ValueError, zipfile.BadZipFile, EOFError):
        return None
    return arrays


def write_arrays(path: Path, arrays: Mapping[str, Any], compress: bool = False) -> None:
    """Write numpy arrays as an ``.npz`` file (zip-compressed with ``compress``)."""
    import numpy as np

    save = np.savez_compressed if compress else np.savez
    _replace(path, lambda f: save(f, **arrays))


def read_tensors(path: Path) -> Dict[str, Any]:
    """The torch tensors of a file written by :func:`write_tensors` (``weights_only=True``)."""
    import torch

    def read(p: Path) -> Dict[str, Any]:
        with warnings.catch_warnings():  # torch warns about the pickle protocol of files it then refuses
            warnings.simplefilter("ignore")
            return torch.load(p, map_location="cpu", weights_only=True)

    return _read(path, read, packed=True)


# torch's storage classes in a tensor file, and the numpy types of their elements
_STORAGES = {"HalfStorage": "float16", "FloatStorage": "float32", "DoubleStorage": "float64",
             "BFloat16Storage": None, "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16",
             "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool"}


def read_tensors_numpy(path: Path) -> Dict[str, Any]:
    """The tensors of a file written by :func:`write_tensors` as numpy arrays, without importing torch.

    The file is torch's zip format: ``data.pkl`` names each tensor's storage, offset, size and
    stride, and ``data/<key>`` holds the storage's bytes. The pickle is read with an unpickler that
    knows only the rebuild function, the storage classes and ``OrderedDict``: nothing else loads.
    """
    import numpy as np

    def read(p: Path) -> Dict[str, Any]:
        with open(p, "rb") as f:
            if not zipfile.is_zipfile(f):  # (a bare pickle, say): torch's loader refuses it the same way
                raise pickle.UnpicklingError("not torch's zip format of plain tensors")
        with zipfile.ZipFile(p) as z:
            names = {n.split("/", 1)[-1]: n for n in z.namelist()}
            if z.read(names["byteorder"]).strip() not in (b"little", b""):
                raise ValueError("big-endian tensor file")
            storages: Dict[str, Any] = {}

            def storage(key: str, dtype: str, numel: int) -> Any:
                if key not in storages:
                    data = np.frombuffer(z.read(names[f"data/{key}"]), dtype=dtype)
                    if data.size < numel:
                        raise ValueError(f"storage {key} holds {data.size} of its {numel} elements")
                    storages[key] = data
                return storages[key]

            class Unpickler(pickle.Unpickler):
                def find_class(self, module: str, name: str) -> Any:
                    if (module, name) == ("collections", "OrderedDict"):
                        return dict
                    if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
                        return _rebuild
                    if module == "torch" and _STORAGES.get(name):
                        return _STORAGES[name]
                    raise pickle.UnpicklingError(f"GLOBAL {module}.{name} is not allowed in a tensor file")

                def persistent_load(self, pid: Any) -> Any:
                    kind, dtype, key, _, numel = pid
                    if kind != "storage" or not isinstance(dtype, str):
                        raise pickle.UnpicklingError(f"unknown storage {pid!r}")
                    return storage(str(key), dtype, int(numel))

            def _rebuild(data: Any, offset: int, size: Any, stride: Any, *_: Any) -> Any:
                size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
                end = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else offset
                if offset < 0 or end > data.size or min(stride, default=0) < 0:
                    raise ValueError("a tensor reaches outside its storage")
                item = data.itemsize
                return np.lib.stride_tricks.as_strided(data[offset:], size, tuple(s * item for s in stride),
                                                       writeable=False).copy()

            out = Unpickler(io.BytesIO(z.read(names["data.pkl"]))).load()
        if not isinstance(out, dict):
            raise ValueError("not a dict of tensors")
        return out

    return _read(path, read)


def write_tensors(path: Path, tensors: Mapping[str, Any]) -> None:
    """Write a flat dict of torch tensors."""
    import torch

    _replace(path, lambda f: torch.save(dict(tensors), f))


# ---------------------------------------------------------------------------------------------
# Building a model directory

F = TypeVar("F", bound=Callable[..., Any])
# signals held back while a finished model is renamed into place (the two renames must both happen)
_HELD = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGALRM",
                                           "SIGXCPU") if hasattr(signal, n))


@contextlib.contextmanager
def building(model_dir: Union[str, Path]) -> Iterator[Path]:
    """A new, empty temporary folder beside ``model_dir`` to write a model into. When the block
    ends without error it becomes ``model_dir`` (a symlink is followed; a folder already there
    is replaced only then); on an error or a signal it is removed."""
    target = Path(os.path.realpath(model_dir))
    if target.exists() and not target.is_dir():
        raise NlpipeError(f"{model_dir}: exists and is not a folder")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".nlpipe-{target.name}-", suffix=".tmp", dir=target.parent))
    except OSError as e:
        raise NlpipeError(f"{model_dir}: cannot make the model folder ({e.strerror})") from None
    TEMPORARY.add(str(tmp))
    try:
        yield tmp
        _install(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        TEMPORARY.discard(str(tmp))


def _install(tmp: Path, target: Path) -> None:
    """Rename the finished folder ``tmp`` to ``target``, replacing the folder there, if any."""
    os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode) if target.is_dir() else 0o777 & ~_umask())
    held = hasattr(signal, "pthread_sigmask") and _HELD
    if held:
        signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        if not target.exists():
            os.rename(tmp, target)
            return
        old = tempfile.mkdtemp(prefix=f".nlpipe-{target.name}-old-", suffix=".tmp", dir=target.parent)
        os.rename(target, old)          # onto the empty folder just made
        try:
            os.rename(tmp, target)
        except OSError:
            os.rename(old, target)
            raise
        shutil.rmtree(old, ignore_errors=True)
    except OSError as e:
        raise NlpipeError(f"{target}: cannot put the trained model in place ({e.strerror})") from None
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)


def builds_model(argument: str) -> Callable[[F], F]:
    """Decorate a trainer whose parameter ``argument`` names the model folder it writes: it then
    writes a temporary folder instead (:func:`building`), which becomes that folder when the trainer
    returns. Top-level values of its result that name the temporary folder name the target."""
    def wrap(train: F) -> F:
        signature = inspect.signature(train)

        @functools.wraps(train)
        def run(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            out = bound.arguments[argument]
            with building(out) as tmp:
                bound.arguments[argument] = tmp if isinstance(out, Path) else str(tmp)
                result = train(*bound.args, **bound.kwargs)
            if isinstance(result, dict):
                result = {k: (type(v)(out) if isinstance(v, (str, Path)) and str(v) == str(tmp) else v)
                          for k, v in result.items()}
            return result
        return run  # type: ignore[return-value]
    return wrap
