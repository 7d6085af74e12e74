"""``max_rss_kib`` is the command's own peak (issue #35): with vfork the kernel records
Assay's peak at the exec, so every ``sleep 0.01`` read 55 MB; a command larger than
Assay reads its own peak (as ``/usr/bin/time -v`` does), a smaller one reads unknown."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from assay.execute.command import run_command


def _big() -> str:
    """A command 300 MiB above this process's own peak (in a long test session that
    peak passes 400 MiB), written so that it is resident."""
    import resource

    own_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return f"b = b'x' * ({own_mib + 300} * 2**20); print(len(b))"


def test_a_small_command_reads_unknown_not_assays_size() -> None:
    res = run_command(["sleep", "0.01"], timeout=30)
    assert res.status == "ok"
    assert res.max_rss_kib is None


@pytest.mark.skipif(
    not shutil.which("time") and not shutil.which("/usr/bin/time"), reason="no /usr/bin/time"
)
def test_a_large_command_reads_its_own_peak_as_usr_bin_time_does() -> None:
    big = _big()
    res = run_command([sys.executable, "-c", big], timeout=120)
    assert res.status == "ok" and res.max_rss_kib is not None
    timed = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-c", big],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", timed.stderr)
    assert found is not None, timed.stderr
    reference = int(found.group(1))
    assert abs(res.max_rss_kib - reference) <= 0.1 * reference, (res.max_rss_kib, reference)
