"""The copy speed (GB/s) the GPU benches compare against.

`measure_copy_gbps` times device-to-device copies on the GPU of the run, so the "% copy" figures
of a report hold for the GPU that ran it. `H200_COPY_GBPS` (bench/device.toml, the one place it
is written) is the H200's, for re-rendering CSVs of runs that recorded no copy.
"""
from pathlib import Path

DEVICE_TOML = Path(__file__).resolve().parent.parent / "device.toml"

# The size of the copies: large enough that launch and cache effects vanish (the H200's figure
# in device.toml was measured with the same size).
COPY_BYTES = 512_000_000


def h200_copy_gbps():
    for line in DEVICE_TOML.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "h200_copy_gbps":
            return float(value)
    raise SystemExit(f"{DEVICE_TOML}: no `h200_copy_gbps = <GB/s>` line")


H200_COPY_GBPS = h200_copy_gbps()


def measure_copy_gbps(reps=11, iters=20):
    """This GPU's copy speed: COPY_BYTES copied device to device (read + write counted), the
    median of `reps` batches of `iters` copies. Returns (GB/s, µs per copy)."""
    import torch

    from torch_bench import time_us

    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    us = time_us(lambda: dst.copy_(src), iters, reps)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * COPY_BYTES / us / 1e3, us
