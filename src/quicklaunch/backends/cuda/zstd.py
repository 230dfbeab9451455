"""A Zstandard decoder (RFC 8878), for the zstd-compressed entries of fatbins
(nvcc 13 compresses PTX, and with -Xfatbin=-compress-all cubins, this way).

Decoding only, in plain Python: frames (several, skippable ones skipped),
raw, RLE and compressed blocks; literals raw, RLE or Huffman-coded (one or
four streams, the tree given directly or FSE-compressed, or repeated);
sequences with predefined, RLE, FSE-compressed or repeated tables and the
three repeat offsets. Dictionaries are not supported (fatbins use none).
The content checksum is not verified: the caller checks the decompressed
size, and the fatbin's entries are parsed afterwards. Damage is a
``ZstdError`` (a ValueError), never another exception.
"""
from __future__ import annotations

__all__ = ["ZstdError", "decompress"]

MAGIC = 0xFD2FB528
MAX_BLOCK = 128 * 1024

# (baseline, extra bits) of literal-length codes 16.. and match-length codes 32..
_LL = [(i, 0) for i in range(16)] + [
    (16, 1), (18, 1), (20, 1), (22, 1), (24, 2), (28, 2), (32, 3), (40, 3), (48, 4), (64, 6),
    (128, 7), (256, 8), (512, 9), (1024, 10), (2048, 11), (4096, 12), (8192, 13),
    (16384, 14), (32768, 15), (65536, 16)]
_ML = [(i + 3, 0) for i in range(32)] + [
    (35, 1), (37, 1), (39, 1), (41, 1), (43, 2), (47, 2), (51, 3), (59, 3), (67, 4), (83, 4),
    (99, 5), (131, 7), (259, 8), (515, 9), (1027, 10), (2051, 11), (4099, 12), (8195, 13),
    (16387, 14), (32771, 15), (65539, 16)]
# the predefined distributions (accuracy log, normalised counts)
_LL_DEFAULT = (6, [4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3,
                   2, 1, 1, 1, 1, 1, -1, -1, -1, -1])
_ML_DEFAULT = (6, [1, 4, 3, 2, 2, 2, 2, 2, 2] + [1] * 37 + [-1] * 7)
_OF_DEFAULT = (5, [1, 1, 1, 1, 1, 1, 2, 2, 2] + [1] * 15 + [-1] * 5)


class ZstdError(ValueError):
    """A zstd frame that cannot be decoded."""


class _Forward:
    """Bits read from the start of a byte string, least significant first."""

    def __init__(self, data: bytes, start: int = 0):
        self.data, self.bit = data, start * 8

    def read(self, n: int) -> int:
        lo = self.bit >> 3
        hi = (self.bit + n + 7) >> 3
        if hi > len(self.data):
            raise ZstdError("an FSE table description runs past its end")
        v = (int.from_bytes(self.data[lo:hi], "little") >> (self.bit & 7)) & ((1 << n) - 1)
        self.bit += n
        return v

    def peek(self, n: int) -> int:
        lo = self.bit >> 3
        v = int.from_bytes(self.data[lo:lo + ((self.bit & 7) + n + 7) // 8], "little")
        return (v >> (self.bit & 7)) & ((1 << n) - 1)

    def skip(self, n: int) -> None:
        self.bit += n

    def byte_end(self) -> int:
        return (self.bit + 7) >> 3


class _Backward:
    """A bitstream read from its end: the last byte's highest set bit marks
    the start; reads past the beginning give zeros (and ``pos`` goes below 0)."""

    def __init__(self, data: bytes):
        if not data or data[-1] == 0:
            raise ZstdError("a bitstream has no end marker")
        self.data = data
        self.pos = (len(data) - 1) * 8 + data[-1].bit_length() - 1

    def _bits(self, at: int, n: int) -> int:
        if at < 0:
            return self._bits(0, n + at) << -at if n + at > 0 else 0
        lo, hi = at >> 3, (at + n + 7) >> 3
        return (int.from_bytes(self.data[lo:hi], "little") >> (at & 7)) & ((1 << n) - 1)

    def read(self, n: int) -> int:
        if n == 0:
            return 0
        self.pos -= n
        return self._bits(self.pos, n)

    def peek(self, n: int) -> int:
        return self._bits(self.pos - n, n)


def _read_counts(data: bytes, start: int, max_symbol: int, max_log: int):
    """An FSE table description: (accuracy log, counts, bytes used)."""
    bits = _Forward(data, start)
    log = bits.read(4) + 5
    if log > max_log:
        raise ZstdError(f"FSE accuracy log {log} is above the maximum {max_log}")
    remaining, threshold, nbits = (1 << log) + 1, 1 << log, log + 1
    counts, symbol, previous_zero = [], 0, False
    while remaining > 1 and symbol <= max_symbol:
        if previous_zero:
            while True:
                r = bits.read(2)
                counts += [0] * r
                symbol += r
                if r != 3:
                    break
            if symbol > max_symbol:
                break
        most = 2 * threshold - 1 - remaining
        v = bits.peek(nbits)
        if v & (threshold - 1) < most:
            value = v & (threshold - 1)
            bits.skip(nbits - 1)
        else:
            value = v & (2 * threshold - 1)
            if value >= threshold:
                value -= most
            bits.skip(nbits)
        count = value - 1
        remaining -= -count if count < 0 else count
        counts.append(count)
        symbol += 1
        previous_zero = count == 0
        while remaining < threshold:
            nbits -= 1
            threshold >>= 1
    if remaining != 1 or symbol > max_symbol + 1:
        raise ZstdError("an FSE table description does not add up")
    if bits.byte_end() > len(data):
        raise ZstdError("an FSE table description runs past its end")
    return log, counts, bits.byte_end() - start


def _fse_table(log: int, counts: list[int]):
    """The decoding table: per state (symbol, bits to read, baseline)."""
    size = 1 << log
    symbols = [0] * size
    high = size - 1
    nxt = []
    for s, c in enumerate(counts):
        if c == -1:
            symbols[high] = s
            high -= 1
            nxt.append(1)
        else:
            nxt.append(c)
    step, mask, pos = (size >> 1) + (size >> 3) + 3, size - 1, 0
    for s, c in enumerate(counts):
        for _ in range(max(c, 0)):
            symbols[pos] = s
            pos = (pos + step) & mask
            while pos > high:
                pos = (pos + step) & mask
    if pos != 0:
        raise ZstdError("an FSE distribution does not fill its table")
    table = []
    for u in range(size):
        s = symbols[u]
        state = nxt[s]
        nxt[s] += 1
        nb = log - (state.bit_length() - 1)
        table.append((s, nb, (state << nb) - size))
    return log, table


def _huffman_table(weights: list[int]):
    """(max bits, table of (symbol, bits) indexed by the next max-bits bits)
    from the given weights (the last symbol's weight implied)."""
    total = sum(1 << (w - 1) for w in weights if w)
    if total == 0:
        raise ZstdError("a Huffman tree with no symbols")
    max_bits = total.bit_length()
    rest = (1 << max_bits) - total
    if rest & (rest - 1):
        raise ZstdError("Huffman weights that do not complete a tree")
    weights = weights + [rest.bit_length()]
    if max_bits > 11:
        raise ZstdError(f"a Huffman code of {max_bits} bits (at most 11)")
    table = []
    for w, s in sorted((w, s) for s, w in enumerate(weights) if w):
        table += [(s, max_bits + 1 - w)] * (1 << (w - 1))
    return max_bits, table


def _huffman_description(data: bytes, pos: int):
    """(Huffman table, bytes used) of a tree description at ``pos``."""
    head = data[pos]
    if head >= 128:
        n = head - 127
        raw = data[pos + 1:pos + 1 + (n + 1) // 2]
        if len(raw) < (n + 1) // 2:
            raise ZstdError("a Huffman tree description runs past its end")
        weights = [(raw[i // 2] >> (0 if i % 2 else 4)) & 15 for i in range(n)]
        return _huffman_table(weights), 1 + (n + 1) // 2
    body = data[pos + 1:pos + 1 + head]
    if len(body) < head or head == 0:
        raise ZstdError("a Huffman tree description runs past its end")
    log, counts, used = _read_counts(body, 0, 255, 6)
    _, table = _fse_table(log, counts)
    bits = _Backward(body[used:])
    s1, s2 = bits.read(log), bits.read(log)
    weights = []
    while len(weights) < 255:
        for first, second in ((0, 1), (1, 0)):
            state = (s1, s2)[first]
            sym, nb, base = table[state]
            weights.append(sym)
            new = base + bits.read(nb)
            if first == 0:
                s1 = new
            else:
                s2 = new
            if bits.pos < 0:
                weights.append(table[(s1, s2)[second]][0])
                return _huffman_table(weights), 1 + head
    raise ZstdError("a Huffman tree description with more than 255 weights")


def _huffman_stream(stream: bytes, table, count: int, out: bytearray) -> None:
    max_bits, entries = table
    bits = _Backward(stream)
    for _ in range(count):
        sym, nb = entries[bits.peek(max_bits)]
        out.append(sym)
        bits.pos -= nb
    if bits.pos != 0:
        raise ZstdError("a Huffman stream does not end where its literals do")


class _State:
    """What carries from block to block in a frame."""

    def __init__(self):
        self.huffman = None
        self.tables = {"ll": None, "of": None, "ml": None}
        self.rep = [1, 4, 8]


def _literals(block: bytes, st: _State) -> tuple[bytes, int]:
    b0 = block[0]
    kind, fmt = b0 & 3, (b0 >> 2) & 3
    if kind in (0, 1):
        if fmt in (0, 2):
            size, head = b0 >> 3, 1
        elif fmt == 1:
            size, head = (b0 >> 4) + (block[1] << 4), 2
        else:
            size, head = (b0 >> 4) + (block[1] << 4) + (block[2] << 12), 3
        if kind == 0:
            lits = block[head:head + size]
            if len(lits) != size:
                raise ZstdError("raw literals run past the block")
            return bytes(lits), head + size
        if head >= len(block):
            raise ZstdError("RLE literals run past the block")
        return bytes([block[head]]) * size, head + 1
    head = 3 if fmt < 2 else fmt + 2
    v = int.from_bytes(block[:head], "little")
    width = {3: 10, 4: 14, 5: 18}[head]
    regen = (v >> 4) & ((1 << width) - 1)
    comp = (v >> (4 + width)) & ((1 << width) - 1)
    data = block[head:head + comp]
    if len(data) != comp:
        raise ZstdError("compressed literals run past the block")
    pos = 0
    if kind == 2:
        st.huffman, pos = _huffman_description(data, 0)
    elif st.huffman is None:
        raise ZstdError("repeated Huffman literals with no earlier tree")
    out = bytearray()
    if fmt == 0:
        _huffman_stream(data[pos:], st.huffman, regen, out)
    else:
        if len(data) < pos + 6:
            raise ZstdError("a literals jump table runs past the block")
        s1, s2, s3 = (int.from_bytes(data[pos + i:pos + i + 2], "little") for i in (0, 2, 4))
        start = pos + 6
        bounds = [start, start + s1, start + s1 + s2, start + s1 + s2 + s3, len(data)]
        if bounds[3] > len(data):
            raise ZstdError("a literals jump table points past the block")
        each = (regen + 3) // 4
        for i in range(4):
            _huffman_stream(data[bounds[i]:bounds[i + 1]], st.huffman,
                            each if i < 3 else regen - 3 * each, out)
    return bytes(out), head + comp


def _sequence_table(block: bytes, pos: int, mode: int, name: str, st: _State, default,
                    max_symbol: int, max_log: int) -> int:
    if mode == 0:
        st.tables[name] = _fse_table(*default)
        return pos
    if mode == 1:
        if pos >= len(block):
            raise ZstdError("an RLE sequence table runs past the block")
        st.tables[name] = (0, [(block[pos], 0, 0)])
        return pos + 1
    if mode == 2:
        log, counts, used = _read_counts(block, pos, max_symbol, max_log)
        st.tables[name] = _fse_table(log, counts)
        return pos + used
    if st.tables[name] is None:
        raise ZstdError("a repeated sequence table with no earlier one")
    return pos


def _block(block: bytes, st: _State, out: bytearray) -> None:
    lits, pos = _literals(block, st)
    if pos >= len(block):
        raise ZstdError("a block ends before its sequences section")
    b0 = block[pos]
    if b0 == 0:
        out += lits
        return
    if b0 < 128:
        nseq, pos = b0, pos + 1
    elif b0 < 255:
        nseq, pos = ((b0 - 128) << 8) + block[pos + 1], pos + 2
    else:
        nseq, pos = block[pos + 1] + (block[pos + 2] << 8) + 0x7F00, pos + 3
    modes = block[pos]
    pos += 1
    pos = _sequence_table(block, pos, modes >> 6, "ll", st, _LL_DEFAULT, 35, 9)
    pos = _sequence_table(block, pos, (modes >> 4) & 3, "of", st, _OF_DEFAULT, 31, 8)
    pos = _sequence_table(block, pos, (modes >> 2) & 3, "ml", st, _ML_DEFAULT, 52, 9)
    bits = _Backward(block[pos:])
    (ll_log, ll_t), (of_log, of_t), (ml_log, ml_t) = (st.tables[k] for k in ("ll", "of", "ml"))
    ll_s, of_s, ml_s = bits.read(ll_log), bits.read(of_log), bits.read(ml_log)
    rep, lit_at = st.rep, 0
    for i in range(nseq):
        ll_code, of_code, ml_code = ll_t[ll_s][0], of_t[of_s][0], ml_t[ml_s][0]
        if ll_code > 35 or ml_code > 52 or of_code > 31:
            raise ZstdError("a sequence code out of range")
        ofv = (1 << of_code) + bits.read(of_code)
        base, nb = _ML[ml_code]
        ml = base + bits.read(nb)
        base, nb = _LL[ll_code]
        ll = base + bits.read(nb)
        if ofv > 3:
            off = ofv - 3
            rep[:] = [off, rep[0], rep[1]]
        else:
            idx = ofv - 1 + (ll == 0)
            if idx == 0:
                off = rep[0]
            elif idx == 3:
                off = rep[0] - 1
                rep[:] = [off, rep[0], rep[1]]
            else:
                off = rep[idx]
                rep[:] = [off, rep[0], rep[2] if idx == 1 else rep[1]]
        if lit_at + ll > len(lits):
            raise ZstdError("a sequence takes more literals than the block has")
        out += lits[lit_at:lit_at + ll]
        lit_at += ll
        if off <= 0 or off > len(out):
            raise ZstdError(f"match offset {off} points before the start of the output")
        start = len(out) - off
        if off >= ml:
            out += out[start:start + ml]
        else:
            while ml > 0:
                chunk = out[start:start + min(off, ml)]
                out += chunk
                ml -= len(chunk)
                start += len(chunk)
        if i + 1 < nseq:   # the states move on: literal lengths, match lengths, offsets
            _, nb, base = ll_t[ll_s]
            ll_s = base + bits.read(nb)
            _, nb, base = ml_t[ml_s]
            ml_s = base + bits.read(nb)
            _, nb, base = of_t[of_s]
            of_s = base + bits.read(nb)
    if bits.pos != 0:
        raise ZstdError("a sequences bitstream does not end where its sequences do")
    out += lits[lit_at:]


def _frame(data: bytes, pos: int, out: bytearray, limit: int) -> int:
    desc = data[pos + 4]
    fcs_flag, single, checksum, dict_flag = desc >> 6, (desc >> 5) & 1, (desc >> 2) & 1, desc & 3
    if desc & 8:
        raise ZstdError("a frame header with its reserved bit set")
    pos += 5 + (0 if single else 1)
    if dict_flag:
        raise ZstdError("a frame that needs a dictionary")
    fcs_len = (1 if single else 0, 2, 4, 8)[fcs_flag]
    pos += fcs_len
    st = _State()
    while True:
        if pos + 3 > len(data):
            raise ZstdError("truncated: a block header runs past the end")
        head = int.from_bytes(data[pos:pos + 3], "little")
        pos += 3
        last, kind, size = head & 1, (head >> 1) & 3, head >> 3
        if kind == 1:
            if pos >= len(data):
                raise ZstdError("truncated: an RLE block runs past the end")
            out += bytes([data[pos]]) * size
            pos += 1
        else:
            if size > MAX_BLOCK or pos + size > len(data):
                raise ZstdError("truncated: a block runs past the end" if size <= MAX_BLOCK
                                else f"a block of {size} bytes (at most {MAX_BLOCK})")
            if kind == 0:
                out += data[pos:pos + size]
            elif kind == 2:
                _block(data[pos:pos + size], st, out)
            else:
                raise ZstdError("a block of the reserved type")
            pos += size
        if limit and len(out) > limit:
            raise ZstdError(f"the output exceeds the {limit} bytes expected")
        if last:
            break
    return pos + (4 if checksum else 0)


def decompress(data: bytes, limit: int = 0) -> bytes:
    """The concatenated content of the zstd frames in ``data`` (skippable
    frames skipped); ``limit`` (not 0) bounds the output."""
    out, pos = bytearray(), 0
    try:
        while pos < len(data):
            if pos + 4 > len(data):
                raise ZstdError("truncated: a frame header runs past the end")
            magic = int.from_bytes(data[pos:pos + 4], "little")
            if magic & 0xFFFFFFF0 == 0x184D2A50:   # skippable frame
                pos += 8 + int.from_bytes(data[pos + 4:pos + 8], "little")
                continue
            if magic != MAGIC:
                if out and not any(data[pos:]):
                    break   # zero padding after the last frame
                raise ZstdError(f"no zstd frame at byte {pos} (magic {magic:#010x})")
            pos = _frame(data, pos, out, limit)
    except IndexError:
        raise ZstdError("truncated or damaged: a field runs past the end of the data") from None
    return bytes(out)
