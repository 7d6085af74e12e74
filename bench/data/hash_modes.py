"""A benchmark with modes decided per process: lookups of absent keys in a small dict.

Where the string hashes land (PYTHONHASHSEED, random per process by default) decides the
probe sequences and so the time; the unit readings inside one process agree.
Prints one line "unit <ms>" per unit of work.
"""

import time

table = {f"k{i}": i for i in range(5)}
absent = [f"x{i}" for i in range(5)]
for _ in range(20):
    t = time.perf_counter()
    for _ in range(20000):
        for key in absent:
            _ = key in table
    print(f"unit {(time.perf_counter() - t) * 1e3:.4f}")
