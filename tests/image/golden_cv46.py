"""The OpenCV check shared by the golden_*.py scripts.

gaio's image ops follow OpenCV 4.6's semantics (Debian 12's python3-opencv). Later
OpenCV changed some of them (OpenCV 5: warpAffine's rounding, INTER_NEAREST_EXACT,
float linear / cubic resize), so golden data written by another version is not
gaio's reference: a script that takes its golden data from OpenCV calls
require_cv46() before writing anything. Under OpenCV 4.6 it returns (after removing
a SKIP left in OUTDIR by an earlier run); under any other version it removes the
golden data OUTDIR may hold, writes OUTDIR/SKIP with the reason instead, prints it
and exits 0: the fixture succeeded, and the C tests (tests/image/image_test.h,
golden_available) skip their golden comparisons, saying why, and run the rest.

A machine without OpenCV 4.6 gets the golden data from elsewhere: scripts/golden-cv46
writes it with OpenCV 4.6, and GAIO_GOLDEN_DATA (tests/CMakeLists.txt) reads it.
"""
import os

REFERENCE = "4.6"
SKIP = "SKIP"
# what a script writes into OUTDIR: removed before a SKIP is written, so that a SKIP
# never sits next to data of another version
_DATA_SUFFIXES = (".npy",)
_DATA_FILES = ("manifest.txt", "cases.txt")


def is_reference(version: str) -> bool:
    """Whether an OpenCV version string is 4.6.x, the semantics gaio follows."""
    return version.split(".")[:2] == REFERENCE.split(".")


def reason(version: str) -> str:
    return (f"OpenCV {version} is not {REFERENCE}: golden data of OpenCV {REFERENCE}'s semantics cannot be written "
            f"here (write it where OpenCV {REFERENCE} is, with scripts/golden-cv46, and point GAIO_GOLDEN_DATA at it)")


def require_cv46(cv2, out: str, script: str) -> None:
    """Returns under OpenCV 4.6 (removing a stale OUTDIR/SKIP); otherwise writes
    OUTDIR/SKIP in place of the golden data and exits 0."""
    os.makedirs(out, exist_ok=True)
    marker = os.path.join(out, SKIP)
    if is_reference(cv2.__version__):
        if os.path.exists(marker):
            os.remove(marker)
        return
    for name in os.listdir(out):
        if name.endswith(_DATA_SUFFIXES) or name in _DATA_FILES:
            os.remove(os.path.join(out, name))
    why = reason(cv2.__version__)
    with open(marker, "w") as f:
        f.write(why + "\n")
    print(f"{script}: golden data SKIPPED: {why}; wrote {marker}", flush=True)
    raise SystemExit(0)
