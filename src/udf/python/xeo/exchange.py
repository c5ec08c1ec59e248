# The cube's way into and out of the runner: /io/in.bin (written by Xeo's engine thread, raw
# float32) and /io/out.bin (the answer, read back by the engine thread), both on tmpfs.
#
# Both files stay mapped between calls. Xeo writes each call's cube over the pages of the previous
# one (tmpfs keeps them), so a mapping that stays keeps its page-table entries and the next call's
# values are simply there: mapping 134 MB afresh costs 33k pages' worth of page faults (15 to
# 20 ms here), a kept mapping nothing. The input is mapped copy-on-write, so the UDF may change
# the array it gets; after each call the pages it changed (its private copies) are found with the
# kernel's page map and dropped, so the next call sees the file again.
import ctypes
import mmap
import os
import threading

import numpy

OUT_PATH = "/io/out.bin"
# A kept mapping is reused for a smaller file when it is at most this much larger (the UDF's
# address space is not spent on a mapping far larger than its data).
SLACK = 16 << 20
PAGE = mmap.PAGESIZE


class _ScanArg(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "size", "flags", "start", "end", "walk_end", "vec", "vec_len", "max_pages",
        "category_inverted", "category_mask", "category_anyof_mask", "return_mask")]


class _Region(ctypes.Structure):
    _fields_ = [("start", ctypes.c_uint64), ("end", ctypes.c_uint64), ("categories", ctypes.c_uint64)]


_PAGEMAP_SCAN = (3 << 30) | (ctypes.sizeof(_ScanArg) << 16) | (ord("f") << 8) | 16
_IS_FILE, _IS_PRESENT, _IS_SWAPPED = 1 << 2, 1 << 3, 1 << 4


class PrivatePages:
    """
    Ranges of a private file mapping that hold the process's own copies (pages it wrote): with
    the PAGEMAP_SCAN ioctl (Linux 6.7 on, about 2 ms for 134 MB), else by reading
    /proc/self/pagemap (5 to 8 ms). `ranges` raises OSError when neither works.
    """

    def __init__(self):
        self._fd = None
        self._ioctl = True
        self._vec = (_Region * 256)()
        self._libc = ctypes.CDLL(None, use_errno=True)

    def ranges(self, base, length):
        if self._fd is None:
            self._fd = os.open("/proc/self/pagemap", os.O_RDONLY | os.O_CLOEXEC)
        if self._ioctl:
            try:
                return self._scan(base, length)
            except OSError:
                self._ioctl = False
        return self._read(base, length)

    def _scan(self, base, length):
        out = []
        start, end = base, base + length
        while start < end:
            arg = _ScanArg(size=ctypes.sizeof(_ScanArg), start=start, end=end, vec=ctypes.addressof(self._vec), vec_len=len(self._vec),
                           category_inverted=_IS_FILE, category_mask=_IS_FILE, category_anyof_mask=_IS_PRESENT | _IS_SWAPPED,
                           return_mask=_IS_FILE | _IS_PRESENT | _IS_SWAPPED)
            n = self._libc.ioctl(self._fd, ctypes.c_ulong(_PAGEMAP_SCAN), ctypes.byref(arg))
            if n < 0:
                e = ctypes.get_errno()
                raise OSError(e, os.strerror(e))
            out.extend((self._vec[i].start - base, self._vec[i].end - base) for i in range(n))
            if arg.walk_end <= start:
                raise OSError("the page map scan made no progress")
            start = arg.walk_end
        return out

    def _read(self, base, length):
        first, pages = base // PAGE, length // PAGE
        buf = bytearray(pages * 8)
        if os.preadv(self._fd, [buf], first * 8) != len(buf):
            raise OSError("short read of the page map")
        entries = numpy.frombuffer(buf, dtype=numpy.uint64)
        # Present (bit 63) or swapped (62), and not a file page (61): a private copy.
        top = entries >> numpy.uint64(61)
        own = numpy.flatnonzero((top == 4) | (top == 2))
        if own.size == 0:
            return []
        breaks = numpy.flatnonzero(numpy.diff(own) != 1)
        starts = numpy.concatenate(([own[0]], own[breaks + 1]))
        ends = numpy.concatenate((own[breaks], [own[-1]])) + 1
        return [(int(s) * PAGE, int(e) * PAGE) for s, e in zip(starts, ends)]


def _address(mm):
    return numpy.frombuffer(mm, dtype=numpy.uint8, count=1).ctypes.data


class InputFile:
    """The cube of a call, as a writable float32 array over a copy-on-write mapping of in.bin kept between calls."""

    def __init__(self):
        self.mm = None
        self.identity = None
        self.private = PrivatePages()

    def array(self, path, shape):
        n = 1
        for s in shape:
            n *= int(s)
        if n == 0:
            return numpy.empty(shape, dtype=numpy.float32)
        nbytes = n * 4
        if path is None:
            raise RuntimeError("the call came without its cube's file")
        st = os.stat(path)
        if st.st_size < nbytes:
            raise RuntimeError(f"the cube's file holds {st.st_size} bytes, not {nbytes}")
        identity = (path, st.st_dev, st.st_ino)
        if self.mm is None or self.identity != identity or not nbytes <= len(self.mm) <= nbytes + SLACK:
            self.drop()
            with open(path, "rb") as f:
                self.mm = mmap.mmap(f.fileno(), nbytes, access=mmap.ACCESS_COPY)
            self.identity = identity
        return numpy.frombuffer(self.mm, dtype="<f4", count=n).reshape(shape)

    def drop(self):
        """Lets go of the mapping (unmapped once no array of the UDF's refers to it)."""
        self.mm = None
        self.identity = None

    def restore(self):
        """After a call: drops the pages the UDF wrote, so the mapping shows the file again."""
        if self.mm is None:
            return
        try:
            for start, end in self.private.ranges(_address(self.mm), len(self.mm)):
                self.mm.madvise(mmap.MADV_DONTNEED, start, end - start)
        except (OSError, ValueError):
            # No way to tell which pages were written here: map afresh at the next call.
            self.drop()


class OutputFile:
    """out.bin, mapped shared and kept between calls while it is small beside the memory limit."""

    def __init__(self, keep_bytes, path=OUT_PATH):
        self.path = path
        self.keep_bytes = keep_bytes
        self.fd = None
        self.mm = None

    def write(self, values):
        """Writes the answer's values (any layout and number type) as float32 in C order: one pass, converting on the way."""
        n = int(values.size)
        nbytes = n * 4
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        # The file gets its length first (pages past it are given back); only then is it mapped and written.
        if os.fstat(self.fd).st_size != nbytes:
            os.ftruncate(self.fd, nbytes)
        if nbytes == 0:
            return
        if self.mm is None or not nbytes <= len(self.mm) <= nbytes + SLACK:
            self.mm = None
            try:
                self.mm = mmap.mmap(self.fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            except OSError:
                # No room in the address space for the mapping: written through the file instead.
                self._pwrite(numpy.ascontiguousarray(values, dtype="<f4"))
                return
        _copy(numpy.frombuffer(self.mm, dtype="<f4", count=n).reshape(values.shape), values)
        if len(self.mm) > self.keep_bytes:
            # Unmapped now (or once the last view of it is gone): it would take much of the UDF's address space.
            try:
                self.mm.close()
            except BufferError:
                pass
            self.mm = None

    def _pwrite(self, values):
        data = memoryview(values).cast("B")
        off = 0
        while off < len(data):
            off += os.pwrite(self.fd, data[off:], off)


def _copy(out, values):
    """Copies in two threads for large answers (numpy lets go of the GIL while it copies)."""
    if out.ndim == 0 or out.nbytes < (8 << 20):
        numpy.copyto(out, values, casting="unsafe")
        return
    axis = next((i for i, s in enumerate(out.shape) if s > 1), 0)
    half = out.shape[axis] // 2
    if half == 0:
        numpy.copyto(out, values, casting="unsafe")
        return
    lo = (slice(None),) * axis + (slice(0, half),)
    hi = (slice(None),) * axis + (slice(half, None),)
    failed = []

    def other():
        try:
            numpy.copyto(out[hi], values[hi], casting="unsafe")
        except BaseException as e:  # noqa: B902 - passed on below
            failed.append(e)

    t = threading.Thread(target=other)
    try:
        t.start()
    except RuntimeError:
        # No thread to be had (the UDF used up the processes): one pass then.
        numpy.copyto(out, values, casting="unsafe")
        return
    numpy.copyto(out[lo], values[lo], casting="unsafe")
    t.join()
    if failed:
        raise failed[0]
