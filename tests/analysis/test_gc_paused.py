"""kernels.gc_paused: the analysis runs without cyclic collection, and leaves it as it found it."""
import gc

from analysis.engine.kernels import gc_paused


def test_collection_is_off_inside_and_back_as_it_was_after_even_on_error():
    assert gc.isenabled()

    @gc_paused()
    def inside():
        assert not gc.isenabled()
        with gc_paused():  # nested: still off, and not turned back on by the inner exit
            pass
        assert not gc.isenabled()
        raise KeyError("boom")

    try:
        inside()
    except KeyError:
        pass
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # it was off before: it stays off
    finally:
        gc.enable()
