"""One GGUF file's metadata and tensors, read in one pass over its header.

    file = GGUFFile(path)
    file.metadata["llama.block_count"]        # 30: numbers, strings, bools, lists
    file.tensors["blk.0.attn_q.weight"]       # StoredTensor(name, tensor_type, data)

gguf==0.19.0's GGUFReader reads the same file the same way, but keeps every
item of every metadata array as its own numpy view: for a 262144-token
vocabulary (Gemma 3) that is 786k views and about 9 s before the first
tensor.  Here the header is read with struct, each string array in one
Python loop, each number array as one numpy slice: about 0.3 s.  Tensor data
is what GGUFReader gives (`data`, a read-only view of the mapped file, shaped
as gguf.quants.dequantize expects), so a tensor dequantizes to the same bits.

The layout (GGUF version 2 and 3, little-endian):

    "GGUF"  u32 version  u64 tensor_count  u64 kv_count
    kv_count x   (string key, u32 value_type, value)
    tensor_count x (string name, u32 n_dims, u64 dims[n_dims], u32 ggml_type, u64 offset)
    padding to general.alignment (32 by default), then the tensors' data

where a string is a u64 length and UTF-8 bytes, and an array value is a
u32 item type, a u64 count and the items.  dims run innermost first, so a
weight [out, in] is stored as dims (in, out).
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"GGUF"
VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32

# GGUF's value types (gguf.GGUFValueType): the number types by their struct code.
_NUMBERS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9
# ggml types stored as plain numbers (gguf.GGMLQuantizationType); every other is block-quantized bytes.
_PLAIN = {0: np.float32, 1: np.float16, 24: np.int8, 25: np.int16, 26: np.int32, 27: np.int64, 28: np.float64}


@dataclass(frozen=True)
class StoredTensor:
    name: str
    tensor_type: Any          # gguf.GGMLQuantizationType
    shape: tuple[int, ...]    # numpy order: [out, in] for a weight matrix
    data: np.ndarray          # plain types: the values, `shape`; quantized: uint8 [..., bytes per row]


class GGUFFile:
    """The metadata (key -> value) and the tensors (name -> StoredTensor) of one GGUF file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        with open(self.path, "rb") as handle:
            self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        self._at = 0
        if self._map[:4] != MAGIC:
            raise ValueError(f"{self.path.name} is not a GGUF file (it does not start with {MAGIC!r})")
        self._at = 4
        version, tensor_count, kv_count = self._read("<IQQ")
        if version not in VERSIONS:
            raise ValueError(f"{self.path.name} is GGUF version {version}; this reader knows versions "
                             f"{', '.join(map(str, VERSIONS))}")
        self.metadata: dict[str, Any] = {}
        for _ in range(kv_count):
            key = self._string()
            (value_type,) = self._read("<I")
            self.metadata[key] = self._value(value_type)
        infos = [self._tensor_info() for _ in range(tensor_count)]
        alignment = int(self.metadata.get("general.alignment", DEFAULT_ALIGNMENT))
        if alignment <= 0 or alignment & (alignment - 1):
            raise ValueError(f"{self.path.name}: general.alignment is {alignment}, not a power of two")
        start = -(-self._at // alignment) * alignment
        self.tensors = {name: self._tensor(name, dims, kind, start + offset) for name, dims, kind, offset in infos}

    # ---- the header -------------------------------------------------------------------

    def release(self) -> None:
        """Give back the pages of the file read so far: they leave this process's
        memory (not the page cache), and a later read maps them again.  Once its
        tensors are dequantized to float32, a model needs its stored bytes no more."""
        if hasattr(mmap, "MADV_DONTNEED"):
            self._map.madvise(mmap.MADV_DONTNEED)

    def _read(self, fmt: str) -> tuple:
        values = struct.unpack_from(fmt, self._map, self._at)
        self._at += struct.calcsize(fmt)
        return values

    def _string(self) -> str:
        (length,) = self._read("<Q")
        text = self._map[self._at:self._at + length].decode("utf-8")
        self._at += length
        return text

    def _value(self, value_type: int) -> Any:
        if value_type in _NUMBERS:
            return self._read("<" + _NUMBERS[value_type])[0]
        if value_type == _STRING:
            return self._string()
        if value_type == _ARRAY:
            item_type, count = self._read("<IQ")
            if item_type in _NUMBERS and _NUMBERS[item_type] != "?":
                dtype = np.dtype("<" + _NUMBERS[item_type])
                items = np.frombuffer(self._map, dtype=dtype, count=count, offset=self._at)
                self._at += count * dtype.itemsize
                return items.tolist()
            return [self._value(item_type) for _ in range(count)]
        raise ValueError(f"{self.path.name}: unknown GGUF value type {value_type} at byte {self._at}")

    def _tensor_info(self) -> tuple[str, tuple[int, ...], int, int]:
        name = self._string()
        (n_dims,) = self._read("<I")
        dims = self._read(f"<{n_dims}Q")
        kind, offset = self._read("<IQ")
        return name, dims, kind, offset

    # ---- the tensors ------------------------------------------------------------------

    def _tensor(self, name: str, dims: tuple[int, ...], kind: int, at: int) -> StoredTensor:
        from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
        from gguf.quants import quant_shape_to_byte_shape

        tensor_type = GGMLQuantizationType(kind)
        shape = tuple(reversed(dims))
        elements = int(np.prod(shape, dtype=np.int64))
        if kind in _PLAIN:
            data = np.frombuffer(self._map, dtype=_PLAIN[kind], count=elements, offset=at).reshape(shape)
        else:
            block, size = GGML_QUANT_SIZES[tensor_type]
            data = np.frombuffer(self._map, dtype=np.uint8, count=elements * size // block, offset=at)
            data = data.reshape(quant_shape_to_byte_shape(shape, tensor_type))
        return StoredTensor(name, tensor_type, shape, data)
