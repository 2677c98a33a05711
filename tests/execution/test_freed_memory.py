"""glibc's policy for freed memory: returned at import (initialization), kept for steps
and while the profiler times an op.

Each check runs in a fresh interpreter, since mallopt settings last for the process.
"""

import subprocess
import sys
import textwrap

import pytest

# What both scripts share: cycle() allocates, touches and frees an 8 MiB buffer;
# faults_of_cycles(who) gives the minor page faults of 20 cycles (after one to settle),
# of the process or (resource.RUSAGE_THREAD) of the calling thread.
_BUFFER_CYCLES = textwrap.dedent("""
    import ctypes, ctypes.util, resource
    from tensoropt import _tf
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    size = 8 << 20

    def cycle():
        buffer = libc.malloc(size)
        libc.memset(buffer, 1, size)
        libc.free(buffer)

    def faults_of_cycles(who=resource.RUSAGE_SELF):
        cycle()   # one to settle
        before = resource.getrusage(who).ru_minflt
        for _ in range(20):
            cycle()
        return resource.getrusage(who).ru_minflt - before
""")

# Prints the page faults of 20 cycles with the import's setting, inside and after a
# freed_memory_kept block, then after keep_freed_memory().
_CYCLES = _BUFFER_CYCLES + textwrap.dedent("""
    _tf._tune_malloc()
    figures = [faults_of_cycles()]               # at import: returned
    with _tf.freed_memory_kept():
        figures.append(faults_of_cycles())       # kept within the block
    figures.append(faults_of_cycles())           # returned again after it
    _tf.keep_freed_memory()
    _tf.keep_freed_memory()                      # idempotent
    with _tf.freed_memory_kept():
        pass                                     # must not undo keep_freed_memory
    figures.append(faults_of_cycles())           # kept for good
    print(*figures)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_buffers_keep_their_pages_while_memory_is_kept():
    out = subprocess.run([sys.executable, "-c", _CYCLES], capture_output=True, text=True, check=True)
    at_import, in_block, after_block, kept = figures = list(map(int, out.stdout.split()))
    pages = 20 * (8 << 20) // 4096
    # returned: every 8 MiB buffer is mapped afresh, and its pages fault again each cycle
    assert min(at_import, after_block) >= 0.9 * pages, figures
    # kept: the cycles reuse the heap's pages
    assert max(in_block, kept) <= 0.05 * pages, figures


# A thread's arena whose first heap is full: each 8 MiB buffer needs a heap of its own,
# which glibc unmaps when the buffer is freed unless M_TOP_PAD keeps it (TensorFlow's
# threads allocate a step's buffers in such arenas). Prints the 20 cycles' page faults
# with freed memory returned, in a freed_memory_kept block, and after keep_freed_memory.
_ARENA_CYCLES = _BUFFER_CYCLES + textwrap.dedent("""
    import contextlib, threading
    figures = []

    def in_full_arena(when):
        held = [libc.malloc(1 << 20) for _ in range(60)]   # fill the arena's first heap
        for b in held:
            libc.memset(b, 1, 1 << 20)
        with when():
            figures.append(faults_of_cycles(resource.RUSAGE_THREAD))

    def run(when):
        thread = threading.Thread(target=in_full_arena, args=(when,))
        thread.start()
        thread.join()

    _tf._tune_malloc()
    run(contextlib.nullcontext)
    run(_tf.freed_memory_kept)
    _tf.keep_freed_memory()
    run(contextlib.nullcontext)
    print(*figures)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_thread_arena_keeps_its_emptied_heaps_while_memory_is_kept():
    out = subprocess.run([sys.executable, "-c", _ARENA_CYCLES], capture_output=True, text=True, check=True)
    returned, in_block, kept = figures = list(map(int, out.stdout.split()))
    pages = 20 * (8 << 20) // 4096
    assert returned >= 0.9 * pages, figures   # mapped afresh each cycle
    assert max(in_block, kept) <= 0.05 * pages, figures


# A job keeps freed memory from the moment its variables are initialized, not before.
_JOB = textwrap.dedent("""
    import tensoropt as to
    from tensoropt import _tf
    x = to.placeholder(to.float32, [4, 8], name="x")
    loss = to.reduce_sum(to.matmul(x, to.get_variable("w", [8, 8])))
    train = to.train.GradientDescentOptimizer(0.1).minimize(loss)
    plan = to.find_strategy(check_peak=False)
    before = _tf._kept
    to.build_execution_graph(plan=plan)
    print(before, _tf._kept)
""")


def test_a_job_keeps_freed_memory_once_its_variables_are_initialized():
    out = subprocess.run([sys.executable, "-c", _JOB], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-2:] == ["False", "True"], out.stdout
